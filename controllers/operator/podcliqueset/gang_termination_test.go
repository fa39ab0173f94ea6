package podcliqueset

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// gangFixture is a PodCliqueSet "inf" of one replica with a router (breached a minute ago) and a
// worker.
type gangFixture struct {
	*fixture
	pcs     *grovev1alpha1.PodCliqueSet
	cliques []*grovev1alpha1.PodClique
}

func newGangFixture(t *testing.T, edit func(*builders.PodCliqueSetBuilder)) *gangFixture {
	t.Helper()
	b := builders.PodCliqueSet("ns", "inf").Clique("router", 1).Clique("worker", 1)
	edit(b)
	pcs := b.Obj()
	breached := metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionTrue, Reason: "InsufficientReadyPods",
		LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}
	router := builders.PodClique("ns", "inf-0-router").OfReplica("inf", "0").ControlledBy(pcs, "PodCliqueSet").Condition(breached).Obj()
	worker := builders.PodClique("ns", "inf-0-worker").OfReplica("inf", "0").ControlledBy(pcs, "PodCliqueSet").Ready(1).Obj()
	return &gangFixture{fixture: newFixture(t, pcs, router, worker), pcs: pcs, cliques: []*grovev1alpha1.PodClique{router, worker}}
}

func (f *gangFixture) remaining(t *testing.T) []string {
	t.Helper()
	list := &grovev1alpha1.PodCliqueList{}
	require.NoError(t, f.c.List(context.Background(), list))
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

func TestGangTerminationDeletesTheWholeReplicaAndSaysWhy(t *testing.T) {
	f := newGangFixture(t, func(b *builders.PodCliqueSetBuilder) { b.TerminationDelay(metav1.Duration{Duration: time.Second}) })

	f.reconcile(t, "inf")

	assert.Empty(t, f.remaining(t), "the healthy worker goes with the breached router")
	line := f.logged("gang termination: replica terminated")
	require.NotEmpty(t, line, "log lines: %q", f.lines)
	assert.Contains(t, line, `"replica"=0`)
	assert.Contains(t, line, `"reason"="PodClique inf-0-router below minAvailable for longer than terminationDelay"`)
	assert.Contains(t, f.warnings()[0], "GangTerminated")
}

func TestGangTerminationWaitsForTheDelayAndIsOffWithoutOne(t *testing.T) {
	for name, edit := range map[string]func(*builders.PodCliqueSetBuilder){
		"delay not over": func(b *builders.PodCliqueSetBuilder) { b.TerminationDelay(metav1.Duration{Duration: time.Hour}) },
		"no delay set":   func(*builders.PodCliqueSetBuilder) {},
	} {
		t.Run(name, func(t *testing.T) {
			f := newGangFixture(t, edit)
			f.reconcile(t, "inf")
			assert.ElementsMatch(t, []string{"inf-0-router", "inf-0-worker"}, f.remaining(t))
			assert.Empty(t, f.logged("gang termination"))
		})
	}
}

func TestTrainingRestartIsRecordedOnceThenActedOnAndSaysWhy(t *testing.T) {
	f := newGangFixture(t, func(b *builders.PodCliqueSetBuilder) { b.Training(2) })

	f.reconcile(t, "inf")

	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, f.c.Get(context.Background(), client.ObjectKeyFromObject(f.pcs), got))
	assert.Equal(t, int32(1), got.Status.RestartCount)
	require.Len(t, got.Status.RestartsInProgress, 1)
	assert.ElementsMatch(t, []any{f.cliques[0].UID, f.cliques[1].UID}, []any{got.Status.RestartsInProgress[0].PodCliqueUIDs[0], got.Status.RestartsInProgress[0].PodCliqueUIDs[1]})
	assert.Equal(t, 1, f.statusWrites, "the decision is the pass's one status write")
	assert.Empty(t, f.remaining(t), "then the replica's PodCliques are deleted")
	line := f.logged("training restart: replica restarted")
	require.NotEmpty(t, line, "log lines: %q", f.lines)
	assert.Contains(t, line, `"replica"=0`)
	assert.Contains(t, line, `"reason"="PodClique inf-0-router below minAvailable"`)
	assert.Contains(t, line, `"restart"=1`)
}

func TestTrainingRestartRecordedBeforeACrashIsNotCountedAgain(t *testing.T) {
	f := newGangFixture(t, func(b *builders.PodCliqueSetBuilder) { b.Training(2) })
	// The state a crash between the status write and the deletions leaves.
	f.pcs.Status.RestartCount = 1
	f.pcs.Status.RestartsInProgress = []grovev1alpha1.ReplicaRestart{{ReplicaIndex: 0, Restart: 1, PodCliqueUIDs: []types.UID{f.cliques[0].UID, f.cliques[1].UID}}}
	require.NoError(t, f.c.Status().Update(context.Background(), f.pcs))
	f.statusWrites = 0

	f.reconcile(t, "inf")

	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, f.c.Get(context.Background(), client.ObjectKeyFromObject(f.pcs), got))
	assert.Equal(t, int32(1), got.Status.RestartCount, "counted once")
	assert.Empty(t, f.remaining(t), "the recorded deletions are done")
	assert.Empty(t, f.logged("training restart"), "no second decision")
}

func TestGangRecoveryKeepsTheCountACliqueWasScaledTo(t *testing.T) {
	set := builders.PodCliqueSet("ns", "inf").Clique("router", 1).Clique("worker", 1).TerminationDelay(metav1.Duration{Duration: time.Second}).Obj()
	breached := metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionTrue, Reason: "InsufficientReadyPods",
		LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}
	router := builders.PodClique("ns", "inf-0-router").OfReplica("inf", "0").ControlledBy(set, "PodCliqueSet").Condition(breached).TemplateReplicas(1).Obj()
	// kubectl scale took the worker from its template's 1 to 3 before the router broke.
	worker := builders.PodClique("ns", "inf-0-worker").OfReplica("inf", "0").ControlledBy(set, "PodCliqueSet").UID("old-worker").Replicas(3, 1).Ready(3).
		TemplateReplicas(1).Obj()
	f := newFixture(t, set, router, worker)
	remaining := func() int {
		list := &grovev1alpha1.PodCliqueList{}
		require.NoError(t, f.c.List(context.Background(), list))
		return len(list.Items)
	}

	f.reconcile(t, "inf")

	pcs := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf"}, pcs))
	assert.Equal(t, []grovev1alpha1.ScaledReplicas{{Name: "inf-0-worker", Replicas: 3, TemplateReplicas: 1, ReplacedUID: worker.UID}}, pcs.Status.ScaledReplicasToRestore,
		"recorded before the PodCliques were deleted")
	assert.Zero(t, remaining())

	f.reconcile(t, "inf") // the replica is recreated

	recreated := &grovev1alpha1.PodClique{}
	require.NoError(t, f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-0-worker"}, recreated))
	assert.Equal(t, int32(3), recreated.Spec.Replicas, "the scaled count, not the template's (upstream #826)")
	assert.Equal(t, ptrTo[int32](1), recreated.Spec.TemplateReplicas)
	again := &grovev1alpha1.PodClique{}
	require.NoError(t, f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-0-router"}, again))
	assert.Equal(t, int32(1), again.Spec.Replicas, "a clique at its template's count stays there")
}

func TestScaledCountsAreKeptUntilTheirPodCliqueIsReplaced(t *testing.T) {
	rec := grovev1alpha1.ScaledReplicas{Name: "inf-0-worker", Replicas: 3, TemplateReplicas: 1, ReplacedUID: "old"}
	for _, tc := range []struct {
		name     string
		replicas int32
		clique   *grovev1alpha1.PodClique
		keep     bool
	}{
		{"the old PodClique, about to go in this very pass", 1, builders.PodClique("ns", "inf-0-worker").UID("old").Obj(), true},
		{"gone, not recreated yet", 1, nil, true},
		{"replaced", 1, builders.PodClique("ns", "inf-0-worker").UID("new").Obj(), false},
		{"no longer wanted: its PodCliqueSet replica was scaled away", 0, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pcs := builders.PodCliqueSet("ns", "inf").Replicas(tc.replicas).Clique("worker", 1).Obj()
			obs := emptyObserved()
			if tc.clique != nil {
				obs.cliques[tc.clique.Name] = tc.clique
			}
			got := restoredScaledReplicas(pcs, []grovev1alpha1.ScaledReplicas{rec}, obs)
			assert.Equal(t, tc.keep, len(got) == 1)
		})
	}
}

func TestARestoredCountGivesWayToATemplateChangedSince(t *testing.T) {
	pcs := builders.PodCliqueSet("ns", "inf").Clique("worker", 1).Obj()
	pcs.Status.ScaledReplicasToRestore = []grovev1alpha1.ScaledReplicas{{Name: "inf-0-worker", Replicas: 3, TemplateReplicas: 1, ReplacedUID: "old"}}
	want := builders.PodClique("ns", "inf-0-worker").Obj()

	want.Spec.TemplateReplicas = ptrTo[int32](1)
	n, ok := scaledReplicasFor(pcs, want)
	assert.True(t, ok)
	assert.Equal(t, int32(3), n, "the template's count is the one recorded: the scaled count comes back")

	want.Spec.TemplateReplicas = ptrTo[int32](5)
	_, ok = scaledReplicasFor(pcs, want)
	assert.False(t, ok, "the template's count changed since: it wins, as for a PodClique never deleted")
}

func ptrTo[T any](v T) *T { return &v }
