package podclique

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/internal/slowstart"
)

func TestDeletingPodsOfAPass(t *testing.T) {
	const n = 3 * slowstart.MaxInFlight
	for _, tc := range []struct {
		name string
		// refuse is the API server's answer to every delete; nil accepts them.
		refuse      error
		alreadyGone bool
		wantErr     bool
		// wantCallsAtMost bounds the deletes sent; wantLeft is how many pods remain.
		wantCallsAtMost int
		wantLeft        int
	}{
		{name: "every pod is deleted", wantCallsAtMost: n, wantLeft: 0},
		{name: "pods already gone are no error", alreadyGone: true, wantCallsAtMost: n, wantLeft: 0},
		{
			name:   "no delete starts after the first refusal, and at most MaxInFlight were in flight",
			refuse: apierrors.NewTooManyRequests("the server has received too many requests", 1), wantErr: true,
			wantCallsAtMost: slowstart.MaxInFlight, wantLeft: n,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pclq := &grovev1alpha1.PodClique{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", UID: "u"}}
			var objs []client.Object
			var pods []*corev1.Pod
			for i := range n {
				p := pod(i, "h", true)
				p.Namespace, p.UID = "ns", types.UID(fmt.Sprint("pod-", i))
				pods = append(pods, p)
				if !tc.alreadyGone {
					objs = append(objs, p.DeepCopy())
				}
			}
			var calls atomic.Int32
			c := fakeClient(t).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
				Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
					calls.Add(1)
					if tc.refuse != nil {
						return tc.refuse
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
			left := &corev1.PodList{}
			require.NoError(t, c.List(context.Background(), left))
			assert.Len(t, left.Items, tc.wantLeft)
		})
	}
}
