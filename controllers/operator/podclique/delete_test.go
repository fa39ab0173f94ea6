package podclique

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kubegrove/grove/controllers/operator/internal/slowstart"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/inflight"
)

func TestDeletingPodsOfAPass(t *testing.T) {
	const n = 3 * slowstart.MaxInFlight
	for _, tc := range []struct {
		name string
		// refuse is the API server's answer to every delete; nil accepts them.
		refuse      error
		alreadyGone bool
		// replaced: every pod's name is held by another pod (another UID) by the time of the delete.
		replaced bool
		wantErr  bool
		// wantCallsAtMost bounds the deletes sent; wantLeft is how many pods remain.
		wantCallsAtMost int
		wantLeft        int
	}{
		{name: "every pod is deleted, MaxInFlight side by side", wantCallsAtMost: n, wantLeft: 0},
		{name: "pods already gone are no error", alreadyGone: true, wantCallsAtMost: n, wantLeft: 0},
		{name: "a pod whose name another pod holds now is no error", replaced: true, wantCallsAtMost: n, wantLeft: n},
		{
			name:   "no delete starts after the first refusal, and at most MaxInFlight were in flight",
			refuse: apierrors.NewTooManyRequests("the server has received too many requests", 1), wantErr: true,
			wantCallsAtMost: slowstart.MaxInFlight, wantLeft: n,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pclq := builders.PodClique("ns", "c").UID("u").Obj()
			var objs []client.Object
			var pods []*corev1.Pod
			for i := range n {
				p := podBuilder("ns", "c", i, "h", true).UID(fmt.Sprint("pod-", i)).Obj()
				pods = append(pods, p)
				switch {
				case !tc.alreadyGone:
					objs = append(objs, p.DeepCopy())
				}
			}
			var calls atomic.Int32
			var deletes inflight.Counter
			// Accepted deletes wait until MaxInFlight are in flight together, then all go on:
			// the most seen in flight is the limit when the deletes go side by side and stay
			// within it.
			full := make(chan struct{})
			var fullOnce sync.Once
			c := fakeClient(t).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					calls.Add(1)
					if tc.refuse != nil {
						return tc.refuse
					}
					n := deletes.Enter()
					defer deletes.Leave()
					if n >= slowstart.MaxInFlight {
						fullOnce.Do(func() { close(full) })
					}
					<-full
					if tc.replaced {
						// The API server's answer to a UID precondition that fails (the fake
						// client does not check preconditions).
						return apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, obj.GetName(), errors.New("Precondition failed: UID in precondition"))
					}
					return c.Delete(ctx, obj, opts...)
				},
			}).Build()
			r := reconcilerFor(t, c)
			r.Recorder = events.NewFakeRecorder(n)

			err := r.deletePods(context.Background(), pclq, pods, "h")

			if tc.wantErr {
				require.ErrorIs(t, err, tc.refuse)
			} else {
				require.NoError(t, err)
			}
			assert.LessOrEqual(t, int(calls.Load()), tc.wantCallsAtMost)
			if tc.refuse == nil {
				assert.Equal(t, int32(slowstart.MaxInFlight), deletes.Most(), "deletes in flight together")
			}
			left := &corev1.PodList{}
			require.NoError(t, c.List(context.Background(), left))
			assert.Len(t, left.Items, tc.wantLeft)
		})
	}
}
