package topologybinding

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// stubSyncer reports its topology object in sync or not, as set.
type stubSyncer struct{ inSync bool }

func (s *stubSyncer) SyncTopology(context.Context, *grovev1alpha1.ClusterTopologyBinding) (grovev1alpha1.SchedulerTopologyStatus, error) {
	msg := "levels match"
	if !s.inSync {
		msg = "the Topology's levels differ"
	}
	return grovev1alpha1.SchedulerTopologyStatus{TopologyReference: "topo", InSync: s.inSync, Message: msg}, nil
}

func (s *stubSyncer) TopologyTypes() []client.Object { return nil }

func TestTheDriftConditionChangesOnTheReconcilersClockAndOnlyWhenTheDriftDoes(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	ct := &grovev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: "dc", Generation: 1}}
	writes := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ct).WithStatusSubresource(ct).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
			writes++
			return c.SubResource(sub).Apply(ctx, obj, opts...)
		}}).Build()
	t0 := time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	syncer := &stubSyncer{inSync: false}
	r := &Reconciler{Client: c, Backend: "kai-scheduler", Syncer: syncer, Clock: clk}
	pass := func() metav1.Condition {
		t.Helper()
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Name: "dc"}})
		require.NoError(t, err)
		got := &grovev1alpha1.ClusterTopologyBinding{}
		require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: "dc"}, got))
		cond := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionSchedulerTopologyDrift)
		require.NotNil(t, cond)
		return *cond
	}

	drift := pass()
	assert.Equal(t, metav1.ConditionTrue, drift.Status)
	assert.Equal(t, grovev1alpha1.ReasonTopologyDrift, drift.Reason)
	assert.True(t, drift.LastTransitionTime.Time.Equal(t0), "stamped with the reconciler's clock")
	assert.Equal(t, 1, writes)

	clk.SetTime(t0.Add(time.Minute))
	same := pass()
	assert.True(t, same.LastTransitionTime.Time.Equal(t0), "no transition: the time stays")
	assert.Equal(t, 1, writes, "nothing changed: nothing written")

	syncer.inSync = true
	clk.SetTime(t0.Add(2 * time.Minute))
	repaired := pass()
	assert.Equal(t, metav1.ConditionFalse, repaired.Status)
	assert.Equal(t, grovev1alpha1.ReasonInSync, repaired.Reason)
	assert.True(t, repaired.LastTransitionTime.Time.Equal(t0.Add(2*time.Minute)))
	assert.Equal(t, 2, writes)
}

// The drift condition names the backends in order of name, whatever order the entries are
// stored in: a server-side apply appends a new backend's entry, and a message that followed the
// stored order would be rewritten by the first backend whose view sorted them.
func TestTheDriftConditionDoesNotDependOnTheOrderOfTheEntries(t *testing.T) {
	kai := grovev1alpha1.SchedulerTopologyStatus{SchedulerName: "kai-scheduler", InSync: true}
	kube := grovev1alpha1.SchedulerTopologyStatus{SchedulerName: "kube-scheduler", InSync: true}
	plugins := grovev1alpha1.SchedulerTopologyStatus{SchedulerName: "scheduler-plugins", Message: "levels differ"}
	volcano := grovev1alpha1.SchedulerTopologyStatus{SchedulerName: "volcano", Message: "missing"}
	for _, tc := range []struct {
		name    string
		entries [][]grovev1alpha1.SchedulerTopologyStatus
		want    string
	}{
		{"all in sync", [][]grovev1alpha1.SchedulerTopologyStatus{{kai, kube}, {kube, kai}},
			"the topology objects of kai-scheduler, kube-scheduler match the levels"},
		{"two drifted", [][]grovev1alpha1.SchedulerTopologyStatus{{kai, plugins, volcano}, {volcano, kai, plugins}},
			"scheduler-plugins: levels differ; volcano: missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, entries := range tc.entries {
				assert.Equal(t, tc.want, driftCondition(entries, 1).Message)
			}
		})
	}
}
