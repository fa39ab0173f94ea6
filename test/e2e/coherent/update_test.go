package coherent

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubegrove/grove/test/cluster"
)

// TestACoherentUpdateOfADisaggregatedWorkloadKeepsEveryBudgetAndThePrefillDecodeRatio changes the
// pod templates of prefill and decode (all four member cliques) of a two-replica disaggregated
// workload on a pool with room for one group replica more. At every pod event: every component
// keeps its budget, the new prefill and decode capacity stays within one unit of the 2:1 ratio,
// no frontend pod is touched, one PodCliqueSet replica is updated at a time, lowest first. Every
// gang the update makes is released whole. The status names the scope and the step in flight,
// each replica moves in steps of ascending epochs, and the update ends with every pod at the new
// template and the PodGangMaps at one revision.
func TestACoherentUpdateOfADisaggregatedWorkloadKeepsEveryBudgetAndThePrefillDecodeRatio(t *testing.T) {
	ns := cluster.Current.NewNamespace(t)
	withPool(t, ns, 2)
	pcs := deploy(t, disaggregated(ns, "disagg", 2), 4*time.Minute)

	u := startUpdate(t, pcs, true, "pleader", "pworker", "dleader", "dworker")
	s := u.waitInFlight(t, 2*time.Minute)
	assert.EqualValues(t, 0, s.replica, "replica 0 is updated first")
	assert.Empty(t, s.standalone, "inScopeStandalonePodCliques: frontend did not change")
	assert.ElementsMatch(t, []string{"prefill", "decode"}, s.groups, "inScopePodCliqueScalingGroups")
	assert.NotEmpty(t, s.message, "currentlyUpdating[0].message says what the step waits for")
	u.finish(t, 8*time.Minute)

	assertStepsAscend(t, u.status.inFlightSteps())
	// Prefill (4 replicas, minAvailable 2) and decode (2, minAvailable 1) move in two steps, each
	// bringing up one anchor gang. (A step may begin and end between two status writes: the gangs
	// it makes are what tells the steps apart.)
	anchors := u.gangs.anchorsMade()
	for _, r := range []string{"0", "1"} {
		assert.Equal(t, 2, anchors[r], "replica %s is updated in two steps, each one anchor gang\ngangs made:\n%s", r, lazy(u.gangs.describe))
	}
}

// TestASecondTemplateChangeMidUpdateAddsToTheScope changes prefill; once its first step is in
// flight it changes frontend too. The update's scope grows to name frontend beside prefill, the
// budgets hold throughout, decode keeps its pods, and the update ends with every pod of prefill
// and frontend at the newest template.
func TestASecondTemplateChangeMidUpdateAddsToTheScope(t *testing.T) {
	ns := cluster.Current.NewNamespace(t)
	withPool(t, ns, 1)
	pcs := deploy(t, disaggregated(ns, "widen", 1), 3*time.Minute)

	u := startUpdate(t, pcs, false, "pleader", "pworker")
	s := u.waitInFlight(t, 2*time.Minute)
	assert.Equal(t, []string{"prefill"}, s.groups, "inScopePodCliqueScalingGroups before the second change")
	assert.Empty(t, s.standalone, "inScopeStandalonePodCliques before the second change")

	u.widen(t, "frontend")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var widened bool
		for _, st := range u.status.snapshot() {
			widened = widened || (slices.Contains(st.standalone, "frontend") && slices.Contains(st.groups, "prefill"))
		}
		assert.True(c, widened, "inScopeStandalonePodCliques names frontend while inScopePodCliqueScalingGroups names prefill")
	}, 2*time.Minute, 100*time.Millisecond, "the scope grows\nstatus seen:\n%s", lazy(u.status.describe))
	u.finish(t, 6*time.Minute)
}

// TestAnUpdateAfterAnotherKeepsEveryBudget updates every component twice, one update after the
// other. After the first, the frontend's pods sit one per anchor of the new revision; the second
// update's steps must still replace only the indices each takes over (a PodClique that divided its
// pods by its own, not yet updated, revision once replaced three of four frontend pods at once:
// make bench's rollout found it). The probe checks every budget at every pod event of both.
func TestAnUpdateAfterAnotherKeepsEveryBudget(t *testing.T) {
	ns := cluster.Current.NewNamespace(t)
	withPool(t, ns, 1)
	pcs := deploy(t, disaggregated(ns, "twice", 1), 3*time.Minute)
	every := []string{"frontend", "pleader", "pworker", "dleader", "dworker"}

	first := startUpdate(t, pcs, true, every...)
	first.finish(t, 6*time.Minute)
	second := startUpdate(t, get(t, ns, "twice"), true, every...)
	second.finish(t, 6*time.Minute)
}

// assertStepsAscend checks the steps a status showed in flight: replicas in ascending order, and
// within a replica each step's epochs above the previous step's.
func assertStepsAscend(t *testing.T, steps []updateState) {
	t.Helper()
	for i := 1; i < len(steps); i++ {
		prev, cur := steps[i-1], steps[i]
		if !assert.GreaterOrEqual(t, cur.replica, prev.replica, "replica %d updated after replica %d", cur.replica, prev.replica) || cur.replica != prev.replica {
			continue
		}
		assert.Greater(t, minEpoch(t, cur.inFlight), maxEpoch(t, prev.inFlight), "step %v follows step %v", cur.inFlight, prev.inFlight)
	}
}

func epochs(t *testing.T, es []string) []uint64 {
	t.Helper()
	out := make([]uint64, 0, len(es))
	for _, e := range es {
		n, err := strconv.ParseUint(e, 10, 64)
		require.NoError(t, err, "epoch %q is a decimal integer", e)
		out = append(out, n)
	}
	return out
}

func minEpoch(t *testing.T, es []string) uint64 {
	ns := epochs(t, es)
	m := ns[0]
	for _, n := range ns {
		m = min(m, n)
	}
	return m
}

func maxEpoch(t *testing.T, es []string) uint64 {
	ns := epochs(t, es)
	m := ns[0]
	for _, n := range ns {
		m = max(m, n)
	}
	return m
}
