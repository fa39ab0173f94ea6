package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubegrove/grove/test/cluster"
)

// TestARecycledGroupReplicaThatNeverCameBackEscalates is upstream's GT-4
// (Test_GT4_GangTerminationMinReplicasPCSGOwned), adapted to this cluster: instead of cordoning
// each victim's node, the test's own two nodes are cordoned once the workload runs, so every
// recreated pod stays Pending; pods are "lost" by turning them unready. Upstream's assertions:
// the first group replica's breach recycles only that replica; with it not available again, a
// breach of the second replica leaves the group below minAvailable and the whole PodCliqueSet
// replica is recreated; uncordoned, every pod runs again.
func TestARecycledGroupReplicaThatNeverCameBackEscalates(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	ctx := context.Background()
	nodes, err := cluster.Current.AddPool(ctx, ns, 2, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cluster.Current.DeleteNodes(context.Background(), nodes...) })
	pcs := gangPCS(ns, "gt4", durationPtr(2*time.Second), 2, 1, nil)
	for _, c := range pcs.Spec.Template.Cliques {
		cluster.OnPool(&c.Spec.PodSpec, ns)
	}
	before := startGang(t, pcs, 5)
	require.NoError(t, cluster.Current.SetUnschedulable(ctx, true, nodes...))

	makeUnready(t, ns, "gt4-0-g-0-m-0")
	require.Eventually(t, func() bool {
		changed, _ := replaced(before, cliqueUIDs(t, ns, "gt4"))
		return len(changed) == 1
	}, time.Minute, 100*time.Millisecond, "group replica 0 is recycled")
	changed, kept := replaced(before, cliqueUIDs(t, ns, "gt4"))
	assert.Equal(t, []string{"gt4-0-g-0-m"}, changed, "only the breached group replica is recreated")
	assert.ElementsMatch(t, []string{"gt4-0-a", "gt4-0-b", "gt4-0-g-1-m"}, kept)
	afterFirst := cliqueUIDs(t, ns, "gt4")

	makeUnready(t, ns, "gt4-0-g-1-m-0")
	require.Eventually(t, func() bool {
		changed, _ := replaced(afterFirst, cliqueUIDs(t, ns, "gt4"))
		return len(changed) == len(afterFirst)
	}, time.Minute, 100*time.Millisecond, "with replica 0 never available again, the PodCliqueSet replica is recreated whole")

	require.NoError(t, cluster.Current.SetUnschedulable(ctx, false, nodes...))
	waitRunning(t, ns, "gt4", 5, 2*time.Minute)
}
