package operatore2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/cluster"
)

// ownPool adds n nodes only this namespace's pods select and tolerate (see ownPoolPods), so the
// test may cordon and delete them without touching its neighbours.
func ownPool(t *testing.T, ns string, n int) []string {
	t.Helper()
	var names []string
	specs := make([]cluster.NodeSpec, n)
	for i := range specs {
		specs[i] = cluster.DefaultNode(0)
		specs[i].Name = fmt.Sprintf("%s-node-%d", ns, i)
		specs[i].Labels = map[string]string{corev1.LabelHostname: specs[i].Name, "grove.test/pool": ns}
		specs[i].Taints = []corev1.Taint{{Key: "grove.test/pool", Value: ns, Effect: corev1.TaintEffectNoSchedule}}
		names = append(names, specs[i].Name)
	}
	require.NoError(t, cluster.Current.AddNodes(context.Background(), specs...))
	t.Cleanup(func() {
		for _, name := range names {
			_ = k8s().Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		}
	})
	return names
}

// ownPoolPods puts a pod spec on the namespace's own pool.
func ownPoolPods(ps *corev1.PodSpec, ns string) {
	ps.NodeSelector = map[string]string{"grove.test/pool": ns}
	ps.Tolerations = append(ps.Tolerations, corev1.Toleration{Key: "grove.test/pool", Operator: corev1.TolerationOpEqual, Value: ns, Effect: corev1.TaintEffectNoSchedule})
}

func setUnschedulable(t *testing.T, nodes []string, unschedulable bool) {
	t.Helper()
	for _, name := range nodes {
		patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, unschedulable)))
		require.NoError(t, k8s().Patch(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, patch))
	}
}

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
	nodes := ownPool(t, ns, 2)
	pcs := gangPCS(ns, "gt4", durationPtr(2*time.Second), 2, 1, nil)
	for _, c := range pcs.Spec.Template.Cliques {
		ownPoolPods(&c.Spec.PodSpec, ns)
	}
	before := startGang(t, pcs, 5)
	setUnschedulable(t, nodes, true)

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

	setUnschedulable(t, nodes, false)
	waitRunning(t, ns, "gt4", 5, 2*time.Minute)
}
