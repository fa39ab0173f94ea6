package conformance

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// onePodNodes are sized as upstream's workers: 150Mi of memory, so exactly one of the workloads'
// 80Mi pods fits on each.
var onePodNodes = corev1.ResourceList{
	corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("150Mi"), corev1.ResourcePods: resource.MustParse("110"),
}

// gangPool gives the test n one-pod nodes of its own and puts the workload's pods on them; all but
// schedulable are cordoned (upstream's PrepareTest and SetupAndCordonNodes).
func gangPool(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, n, schedulable int) []string {
	t.Helper()
	ctx := context.Background()
	nodes, err := cluster.Current.AddPool(ctx, pcs.Namespace, n, onePodNodes)
	require.NoError(t, err)
	t.Cleanup(func() { cluster.Current.DeleteNodes(context.Background(), nodes...) })
	require.NoError(t, cluster.Current.SetUnschedulable(ctx, true, nodes[schedulable:]...))
	for _, c := range pcs.Spec.Template.Cliques {
		cluster.OnPool(&c.Spec.PodSpec, pcs.Namespace)
	}
	return nodes
}

// phases counts a PodCliqueSet's pods bound to a node and not.
func phases(t *testing.T, ns, pcs string) (bound, pending int) {
	t.Helper()
	for _, p := range pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs}) {
		if p.Spec.NodeName != "" {
			bound++
		} else {
			pending++
		}
	}
	return bound, pending
}

// waitPlaced waits until exactly bound pods of n are on nodes, and checks that it stays so (the
// rest are held back as a gang, not merely late).
func waitPlaced(t *testing.T, ns, pcs string, n, bound int) {
	t.Helper()
	var b, p int
	if !assert.Eventually(t, func() bool {
		b, p = phases(t, ns, pcs)
		return b == bound && b+p == n
	}, 90*time.Second, 200*time.Millisecond, "%d of %d pods placed", bound, n) {
		var lines []string
		for _, pod := range pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs}) {
			lines = append(lines, fmt.Sprintf("%s node=%q gates=%d", pod.Name, pod.Spec.NodeName, len(pod.Spec.SchedulingGates)))
		}
		require.FailNow(t, "placement", "%d bound, %d pending:\n%s", b, p, strings.Join(lines, "\n"))
	}
	assert.Never(t, func() bool {
		b, _ := phases(t, ns, pcs)
		return b != bound
	}, 10*time.Second, 500*time.Millisecond, "and no more: %d of %d stay Pending", n-bound, n)
}

// assertDistinctNodes is upstream's ListPodsAndAssertDistinctNodes: one pod per node.
func assertDistinctNodes(t *testing.T, ns, pcs string) {
	t.Helper()
	seen := map[string]string{}
	for _, p := range pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs}) {
		if other, dup := seen[p.Spec.NodeName]; dup {
			t.Errorf("%s and %s share node %s", p.Name, other, p.Spec.NodeName)
		}
		seen[p.Spec.NodeName] = p.Name
	}
}

// Test_GS1_GangSchedulingWithFullReplicas: workload1's one gang of 10 pods (every minimum equals
// its replicas) waits whole on 9 nodes and is placed whole once a tenth is uncordoned.
func Test_GS1_GangSchedulingWithFullReplicas(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload1", full)
	nodes := gangPool(t, pcs, 10, 9)
	firstGangWaitsThenRuns(t, pcs, nodes[9])
	assertDistinctNodes(t, ns, pcs.Name)
}

// scaleOnce scales a PodCliqueScalingGroup once it exists (a new PodCliqueSet replica's group is
// made by the operator after the PodCliqueSet is scaled).
func scaleOnce(t *testing.T, ns, pcsg string, replicas int32) {
	t.Helper()
	require.Eventually(t, func() bool {
		return k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pcsg}, &grovev1alpha1.PodCliqueScalingGroup{}) == nil
	}, time.Minute, 200*time.Millisecond, "PodCliqueScalingGroup %s exists", pcsg)
	scale(t, pcsgRef(ns, pcsg), replicas)
}

// firstGangWaitsThenRuns creates workload1 with 9 of its 10 nodes free: its gang of 10 stays
// wholly unplaced, and runs whole once the tenth is uncordoned (GS-1…GS-4's opening).
func firstGangWaitsThenRuns(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, tenth string) {
	t.Helper()
	require.NoError(t, k8s().Create(context.Background(), pcs))
	waitPlaced(t, pcs.Namespace, pcs.Name, 10, 0)
	uncordon(t, tenth)
	waitReady(t, pcs.Namespace, pcs.Name, 10, 90*time.Second)
}

// uncordon makes nodes schedulable again (upstream's UncordonNodes).
func uncordon(t *testing.T, nodes ...string) {
	t.Helper()
	require.NoError(t, cluster.Current.SetUnschedulable(context.Background(), false, nodes...))
}

// Test_GS2_GangSchedulingWithScalingFullReplicas: workload1's gang of 10 waits whole on 9 nodes
// and is placed whole on 10; its scaling group scaled to 3 adds a gang of 4 that waits whole while
// no node is free, and is placed whole once 4 more are uncordoned. Adapted: the test's own one-pod
// nodes (upstream cordons workers of a private cluster), and no KAI event sources to check.
func Test_GS2_GangSchedulingWithScalingFullReplicas(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload1", full)
	nodes := gangPool(t, pcs, 14, 9)
	firstGangWaitsThenRuns(t, pcs, nodes[9])

	scaleOnce(t, ns, "workload1-0-sg-x", 3)
	waitPlaced(t, ns, pcs.Name, 14, 10)

	uncordon(t, nodes[10:14]...)
	waitReady(t, ns, pcs.Name, 14, 90*time.Second)
	assertDistinctNodes(t, ns, pcs.Name)
}

// Test_GS3_GangSchedulingWithPCSScalingFullReplicas: as GS-2, but the PodCliqueSet is scaled to 2
// replicas: the second replica's gang of 10 waits whole until 10 more nodes are free. Adapted as
// GS-2.
func Test_GS3_GangSchedulingWithPCSScalingFullReplicas(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload1", full)
	nodes := gangPool(t, pcs, 20, 9)
	firstGangWaitsThenRuns(t, pcs, nodes[9])

	scale(t, pcs.DeepCopy(), 2)
	waitPlaced(t, ns, pcs.Name, 20, 10)

	uncordon(t, nodes[10:20]...)
	waitReady(t, ns, pcs.Name, 20, 90*time.Second)
	assertDistinctNodes(t, ns, pcs.Name)
}

// Test_GS4_GangSchedulingWithPCSAndPCSGScalingFullReplicas: GS-2 and GS-3 in turn — replica 0's
// scaling group to 3 (a gang of 4), the PodCliqueSet to 2 (a gang of 10), replica 1's scaling group
// to 3 (another gang of 4): each new gang waits whole until exactly its nodes are uncordoned.
// Adapted as GS-2.
func Test_GS4_GangSchedulingWithPCSAndPCSGScalingFullReplicas(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload1", full)
	nodes := gangPool(t, pcs, 28, 9)
	firstGangWaitsThenRuns(t, pcs, nodes[9])

	scaleOnce(t, ns, "workload1-0-sg-x", 3)
	waitPlaced(t, ns, pcs.Name, 14, 10)
	uncordon(t, nodes[10:14]...)
	waitReady(t, ns, pcs.Name, 14, 90*time.Second)

	scale(t, pcs.DeepCopy(), 2)
	waitPlaced(t, ns, pcs.Name, 24, 14)
	uncordon(t, nodes[14:24]...)
	waitReady(t, ns, pcs.Name, 24, 90*time.Second)

	scaleOnce(t, ns, "workload1-1-sg-x", 3)
	waitPlaced(t, ns, pcs.Name, 28, 24)
	uncordon(t, nodes[24:28]...)
	waitReady(t, ns, pcs.Name, 28, 90*time.Second)
	assertDistinctNodes(t, ns, pcs.Name)
}
