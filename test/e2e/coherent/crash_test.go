package coherent

import (
	"context"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// TestAGroveOperatorKilledMidStepResumesTheSameStep kills grove-operator while a step of a
// Coherent update is in flight and waiting. While it is down, the replica's PodGangMap and the
// step's inFlightEpochs stay as they were. Once it is back, the next step in flight is the same
// one or the one after it: no epoch of the PodGangMap is skipped, no PodGang made twice. The update
// then ends with every budget kept (the probe of the first test) and every pod at the new
// template.
func TestAGroveOperatorKilledMidStepResumesTheSameStep(t *testing.T) {
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	withPool(t, ns, 1)
	pcs := deploy(t, disaggregated(ns, "crash", 1), 3*time.Minute)
	mapKey := client.ObjectKey{Namespace: ns, Name: grovev1alpha1.PodGangMapName(pcs.Name, 0)}

	u := startUpdate(t, pcs, true, "pleader", "pworker", "dleader", "dworker")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s := stateOf(get(c, ns, pcs.Name))
		assert.NotEmpty(c, s.inFlight, "currentlyUpdating[0].inFlightEpochs")
		assert.NotEmpty(c, s.message, "currentlyUpdating[0].message says what the step waits for")
	}, 2*time.Minute, 50*time.Millisecond, "a step in flight and waiting\nstatus seen:\n%s", lazy(u.status.describe))

	restart := killOperator(t)
	atKill := stateOf(get(t, ns, pcs.Name))
	require.NotEmpty(t, atKill.inFlight, "a step in flight when grove-operator was killed")
	mapAtKill := &grovev1alpha1.PodGangMap{}
	require.NoError(t, k8s().Get(ctx, mapKey, mapAtKill))
	t.Logf("killed grove-operator with epochs %v in flight (%q)", atKill.inFlight, atKill.message)

	require.Never(t, func() bool {
		m := &grovev1alpha1.PodGangMap{}
		if err := k8s().Get(ctx, mapKey, m); err != nil {
			return true
		}
		now := &grovev1alpha1.PodCliqueSet{}
		if err := k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: pcs.Name}, now); err != nil {
			return true
		}
		s := stateOf(now)
		return m.ResourceVersion != mapAtKill.ResourceVersion || !reflect.DeepEqual(m.Spec, mapAtKill.Spec) ||
			!slices.Equal(s.inFlight, atKill.inFlight) || s.replica != atKill.replica
	}, 5*time.Second, 250*time.Millisecond, "the PodGangMap and inFlightEpochs stay while grove-operator is down")
	restart()

	u.finish(t, 6*time.Minute)

	steps := u.status.inFlightSteps()
	assertStepsAscend(t, steps)
	at := slices.IndexFunc(steps, func(s updateState) bool {
		return s.replica == atKill.replica && slices.Equal(s.inFlight, atKill.inFlight)
	})
	require.GreaterOrEqual(t, at, 0, "the step in flight at the kill is among those the status showed\n%s", lazy(u.status.describe))
	if at+1 == len(steps) {
		return // the step in flight at the kill was the last: the restarted operator finished it
	}
	next := steps[at+1]
	final := &grovev1alpha1.PodGangMap{}
	require.NoError(t, k8s().Get(ctx, mapKey, final))
	lo, hi := maxEpoch(t, atKill.inFlight), minEpoch(t, next.inFlight)
	var skipped []string
	for _, e := range final.Spec.Entries {
		if n := epochs(t, []string{e.Epoch})[0]; n > lo && n < hi {
			skipped = append(skipped, e.Epoch)
		}
	}
	assert.Empty(t, skipped, "after the restart the step in flight (%v) is the one after the step at the kill (%v): no entry between them\nstatus seen:\n%s",
		next.inFlight, atKill.inFlight, lazy(u.status.describe))
}
