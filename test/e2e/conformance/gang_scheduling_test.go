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
	require.NoError(t, k8s().Create(context.Background(), pcs))
	waitPlaced(t, ns, pcs.Name, 10, 0)

	require.NoError(t, cluster.Current.SetUnschedulable(context.Background(), false, nodes[9]))
	waitReady(t, ns, pcs.Name, 10, 90*time.Second)
	assertDistinctNodes(t, ns, pcs.Name)
}
