package podcliqueset

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/test/builders"
)

// reconcilerWith is a Reconciler over a fake client holding objs, with the given interceptors.
func reconcilerWith(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) (*Reconciler, client.Client, *events.FakeRecorder) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedulerv1alpha1.AddToScheme(scheme))
	c := fakeClient(scheme).WithObjects(objs...).
		WithStatusSubresource(&grovev1alpha1.PodCliqueSet{}, &schedulerv1alpha1.PodGang{}).WithInterceptorFuncs(funcs).Build()
	registry, err := backends.PodPreparers(configv1alpha1.SchedulerConfiguration{})
	require.NoError(t, err)
	rec := events.NewFakeRecorder(50)
	return &Reconciler{Client: c, Recorder: rec, Backends: registry, Clock: clocktesting.NewFakePassiveClock(now)}, c, rec
}

func TestARestartWhoseRecordFailsDeletesNothingAndSaysNothing(t *testing.T) {
	pcs := builders.PodCliqueSet("ns", "tg").Training(1).Clique("solo", 1).Obj()
	pcs.Status.Phase = grovev1alpha1.PodCliqueSetPhaseRunning
	solo := builders.PodClique("ns", "tg-0-solo").OfReplica("tg", "0").ControlledBy(pcs, "PodCliqueSet").
		Condition(metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionTrue, Reason: "InsufficientReadyPods",
			LastTransitionTime: metav1.NewTime(now.Add(-time.Second))}).Obj()
	deletes := 0
	r, c, rec := reconcilerWith(t, interceptor.Funcs{
		SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			return errors.New("etcd is unhappy")
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			deletes++
			return c.Delete(ctx, obj, opts...)
		},
	}, pcs, solo)
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pcs)})
	require.ErrorContains(t, err, "etcd is unhappy")
	assert.Zero(t, deletes, "the restart was not recorded: nothing of it is acted on")
	assert.Empty(t, rec.Events, "no event for a restart that did not happen")
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(solo), &grovev1alpha1.PodClique{}))
}

func TestWritesThatKeepFailingReportTheSameErrorsEveryPass(t *testing.T) {
	// Ten replicas whose router PodCliques are refused, each refusal after a random delay: which
	// writes are tried must not depend on which call ends first, or the status would change (and
	// be written) on every pass of a step that keeps failing.
	pcs := builders.PodCliqueSet("ns", "inf").Replicas(10).Clique("router", 1).Clique("worker", 2).Obj()
	var first []string
	for run := range 10 {
		r, _, _ := reconcilerWith(t, interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
				if strings.HasSuffix(obj.GetName(), "-router") {
					return errors.New("quota exceeded")
				}
				return c.Create(ctx, obj, opts...)
			},
		}, pcs.DeepCopy())
		obs := world(pcs)
		obs.cliques, obs.gangs = map[string]*grovev1alpha1.PodClique{}, map[string]*schedulerv1alpha1.PodGang{}
		p := decide(input{pcs: pcs, obs: obs, now: now})
		var got []string
		for _, err := range r.applyChanges(context.Background(), pcs, obs, p.changes) {
			if err != nil {
				got = append(got, err.Error())
			}
		}
		require.NotEmpty(t, got)
		if run == 0 {
			first = got
			continue
		}
		assert.Equal(t, first, got, "run %d", run)
	}
}
