package podgang

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func TestSyncErrorReasonIsTheAPIsStatusReasonOrOther(t *testing.T) {
	gr := schema.GroupResource{Group: "scheduling.k8s.io", Resource: "podgroups"}
	weird := &apierrors.StatusError{ErrStatus: metav1.Status{Reason: "SomethingNew", Code: 418}}
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"a conflict", apierrors.NewConflict(gr, "g", errors.New("modified")), "Conflict"},
		{"a wrapped refusal", fmt.Errorf("creating the PodGroup: %w", apierrors.NewForbidden(gr, "g", errors.New("no"))), "Forbidden"},
		{"an invalid object", apierrors.NewInvalid(schema.GroupKind{Group: "scheduling.k8s.io", Kind: "PodGroup"}, "g", nil), "Invalid"},
		{"a missing object", apierrors.NewNotFound(gr, "g"), "NotFound"},
		{"a timeout", apierrors.NewTimeoutError("slow", 1), "Timeout"},
		{"an internal error", apierrors.NewInternalError(errors.New("etcd")), "InternalError"},
		{"the backend's own error", errors.New("PodGroup CRD not installed"), reasonOther},
		{"a kind that is not served", &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "scheduling.volcano.sh", Kind: "PodGroup"}}, reasonOther},
		{"a reason the API does not define: the label stays bounded", weird, reasonOther},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, syncErrorReason(tc.err))
		})
	}
}

func TestAcknowledgesEachGenerationOnce(t *testing.T) {
	ready := func(status metav1.ConditionStatus, generation int64) metav1.Condition {
		return metav1.Condition{Type: schedulerv1alpha1.ConditionSchedulerBackendReady, Status: status, Reason: "r", ObservedGeneration: generation}
	}
	cases := []struct {
		name   string
		before []metav1.Condition
		cond   metav1.Condition
		want   bool
	}{
		{"a first acknowledgement", nil, ready(metav1.ConditionTrue, 1), true},
		{"a new generation", []metav1.Condition{ready(metav1.ConditionTrue, 1)}, ready(metav1.ConditionTrue, 2), true},
		{"after a failed sync of the same generation", []metav1.Condition{ready(metav1.ConditionFalse, 2)}, ready(metav1.ConditionTrue, 2), true},
		{"a standing acknowledgement rewritten", []metav1.Condition{ready(metav1.ConditionTrue, 2)}, ready(metav1.ConditionTrue, 2), false},
		{"a failed sync", []metav1.Condition{ready(metav1.ConditionTrue, 1)}, ready(metav1.ConditionFalse, 2), false},
		{"other conditions only", []metav1.Condition{{Type: schedulerv1alpha1.ConditionInitialized, Status: metav1.ConditionTrue, ObservedGeneration: 2}},
			ready(metav1.ConditionTrue, 2), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, acknowledges(tc.before, tc.cond))
		})
	}
}

// counted is a counter's current value.
func counted(c prometheus.Counter) float64 {
	m := &dto.Metric{}
	if err := c.Write(m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func acked() float64 { return counted(acknowledgements.WithLabelValues("kube-scheduler")) }

func TestAnAcknowledgementIsCountedOnceItsWriteStood(t *testing.T) {
	pg := builders.PodGang("ns", "g").Backend("kube-scheduler").PodGroup("g-a", 2, "g-a-0", "g-a-1").Obj()
	pg.Generation = 3
	before := acked()

	got, _, err := runPass(t, &stubBackend{}, pg)
	require.NoError(t, err)
	assert.Equal(t, before+1, acked(), "generation 3 acknowledged")

	_, _, err = runPass(t, &stubBackend{}, got)
	require.NoError(t, err)
	assert.Equal(t, before+1, acked(), "a pass that finds it acknowledged counts nothing")

	got.Generation = 4
	_, _, err = runPass(t, &stubBackend{}, got)
	require.NoError(t, err)
	assert.Equal(t, before+2, acked(), "generation 4 is acknowledged anew")
}

func TestAnAcknowledgementWhoseWriteFailedIsNotCounted(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, schedulerv1alpha1.AddToScheme(scheme))
	pg := builders.PodGang("ns", "g").Backend("kube-scheduler").Obj()
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pg).WithStatusSubresource(&schedulerv1alpha1.PodGang{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(context.Context, client.Client, string, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
				return apierrors.NewServiceUnavailable("the API server is restarting")
			},
			SubResourceApply: func(context.Context, client.Client, string, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
				return apierrors.NewServiceUnavailable("the API server is restarting")
			},
		}).Build()
	before := acked()

	_, err := (&Reconciler{Client: c, Backend: &stubBackend{}}).Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pg)})

	require.Error(t, err, "retried")
	assert.Equal(t, before, acked())
}

func TestAFailedSyncIsCountedWithItsReason(t *testing.T) {
	pg := builders.PodGang("ns", "g").Backend("kube-scheduler").Obj()
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "scheduling.k8s.io", Resource: "podgroups"}, "g", errors.New("modified"))
	count := func() float64 { return counted(syncErrors.WithLabelValues("kube-scheduler", "Conflict")) }
	before, ackedBefore := count(), acked()

	_, _, err := runPass(t, &stubBackend{syncErr: fmt.Errorf("updating the PodGroup: %w", conflict)}, pg)

	require.Error(t, err)
	assert.Equal(t, before+1, count())
	assert.Equal(t, ackedBefore, acked(), "a failed sync acknowledges nothing")
}

func TestASyncIsTimedByTheReconcilersClock(t *testing.T) {
	observed := func() (float64, uint64) {
		var m dto.Metric
		require.NoError(t, syncSeconds.WithLabelValues("kube-scheduler").(prometheus.Metric).Write(&m))
		return m.GetHistogram().GetSampleSum(), m.GetHistogram().GetSampleCount()
	}
	sumBefore, countBefore := observed()
	pg := builders.PodGang("ns", "g").Backend("kube-scheduler").Obj()

	_, _, err := runPass(t, &stubBackend{clock: clocktesting.NewFakePassiveClock(time.Unix(1000, 0)), took: 3 * time.Second}, pg)

	require.NoError(t, err)
	sum, count := observed()
	assert.Equal(t, countBefore+1, count)
	assert.InDelta(t, 3.0, sum-sumBefore, 1e-9, "the sync took 3 s on the reconciler's clock")
}
