package backendse2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// racks adds two racks of two 8-GPU nodes in one block, labelled with the cluster's topology keys,
// and a ClusterTopologyBinding named after the namespace.
func racks(t *testing.T, ns string) string {
	t.Helper()
	var specs []cluster.NodeSpec
	for i := 0; i < 4; i++ {
		spec := cluster.DefaultNode(0)
		spec.Name = fmt.Sprintf("%s-node-%d", ns, i)
		spec.Labels = map[string]string{corev1.LabelHostname: spec.Name, poolLabel: ns,
			cluster.LabelBlock: ns + "-block", cluster.LabelRack: fmt.Sprintf("%s-rack-%d", ns, i/2)}
		specs = append(specs, spec)
	}
	require.NoError(t, cluster.Current.AddNodes(context.Background(), specs...))
	binding := &grovev1alpha1.ClusterTopologyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: grovev1alpha1.ClusterTopologyBindingSpec{Levels: []grovev1alpha1.TopologyLevel{
			{Domain: "block", Key: cluster.LabelBlock}, {Domain: "rack", Key: cluster.LabelRack}, {Domain: "host", Key: corev1.LabelHostname},
		}},
	}
	require.NoError(t, k8s().Create(context.Background(), binding))
	t.Cleanup(func() {
		_ = k8s().Delete(context.Background(), binding)
		for _, s := range specs {
			_ = k8s().Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.Name}})
		}
	})
	return binding.Name
}

// rackPacked is a PodCliqueSet of pods of 4 GPUs that must share one rack.
func rackPacked(ns, name, topologyName string, pods int32) *grovev1alpha1.PodCliqueSet {
	pcs := podCliqueSet(ns, name, clique(ns, "worker", pods, 4, ""))
	pcs.Spec.Template.TopologyConstraint = &grovev1alpha1.TopologyConstraint{TopologyName: topologyName, Pack: &grovev1alpha1.TopologyPackConstraint{Required: "rack"}}
	return pcs
}

func TestRequiredRackPacksTheGangIntoOneRack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	topologyName := racks(t, ns)
	// Four pods of 4 GPUs fit one rack (two 8-GPU nodes); spread by default they would not need to.
	start := time.Now()
	require.NoError(t, k8s().Create(ctx, rackPacked(ns, "packed", topologyName, 4)))
	var placed []corev1.Pod
	require.Eventually(t, func() bool {
		placed = pods(t, ns, "packed")
		return len(placed) == 4 && len(bindTimes(placed)) == 4
	}, 60*time.Second, 200*time.Millisecond, "the gang is placed")
	logPlacement(t, "a rack-packed gang of 4×4 GPUs on two racks of two 8-GPU nodes", placed, start.Truncate(time.Second))
	racksUsed := map[string]bool{}
	for _, p := range placed {
		node := &corev1.Node{}
		require.NoError(t, k8s().Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node))
		racksUsed[node.Labels[cluster.LabelRack]] = true
	}
	assert.Len(t, racksUsed, 1, "every pod of the gang is in one rack: %v", racksUsed)

	group := &schedulingv1beta1.PodGroup{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "packed-0"}, group))
	require.NotNil(t, group.Spec.SchedulingConstraints)
	assert.Equal(t, []schedulingv1beta1.TopologyConstraint{{Key: cluster.LabelRack}}, group.Spec.SchedulingConstraints.Topology)
	// Pods are born schedulable once the backend acknowledges their PodGang, so they may be placed
	// before the PodCliqueSet's batched status write records the topology condition.
	require.Eventually(t, func() bool {
		pcs := &grovev1alpha1.PodCliqueSet{}
		require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "packed"}, pcs))
		c := meta.FindStatusCondition(pcs.Status.Conditions, "TopologyLevelsUnavailable")
		return c != nil && c.Reason == "AllClusterTopologyLevelsAvailable"
	}, 30*time.Second, 200*time.Millisecond, "the PodCliqueSet reports every topology level available")
}

func TestRequiredRackGangThatFitsNoRackStaysWhollyPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	topologyName := racks(t, ns)
	// Five pods of 4 GPUs: 20 GPUs fit the 32 of the pool, never the 16 of a rack.
	require.NoError(t, k8s().Create(ctx, rackPacked(ns, "toobig", topologyName, 5)))
	waitUngated(t, ns, "toobig", 5)
	require.Never(t, func() bool { return len(bindTimes(pods(t, ns, "toobig"))) > 0 }, 10*time.Second, 250*time.Millisecond,
		"no pod of a gang that fits no rack is bound")
	logPlacement(t, "a rack-packed gang of 5×4 GPUs, 10 s after its gates were lifted", pods(t, ns, "toobig"), time.Now().Truncate(time.Second))
}

// TestTopologyConditionFollowsTheBinding mirrors upstream's tas-topology-condition.yaml: a
// PodCliqueSet names a binding that does not exist yet, then the binding appears.
func TestTopologyConditionFollowsTheBinding(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := rackPacked(ns, "waits", ns+"-later", 2)
	pcs.Spec.Replicas = 0
	require.NoError(t, k8s().Create(ctx, pcs))
	reason := func() string {
		got := &grovev1alpha1.PodCliqueSet{}
		if k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) != nil {
			return ""
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, "TopologyLevelsUnavailable"); c != nil {
			return c.Reason
		}
		return ""
	}
	require.Eventually(t, func() bool { return reason() == "ClusterTopologyNotFound" }, 30*time.Second, 200*time.Millisecond)

	binding := &grovev1alpha1.ClusterTopologyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-later"},
		Spec:       grovev1alpha1.ClusterTopologyBindingSpec{Levels: []grovev1alpha1.TopologyLevel{{Domain: "zone", Key: cluster.LabelZone}, {Domain: "host", Key: corev1.LabelHostname}}},
	}
	require.NoError(t, k8s().Create(ctx, binding))
	t.Cleanup(func() { _ = k8s().Delete(context.Background(), binding) })
	require.Eventually(t, func() bool { return reason() == "ClusterTopologyLevelsUnavailable" }, 30*time.Second, 200*time.Millisecond,
		"the binding appeared without a rack level")

	// The KAI backend-controller writes the binding's status meanwhile.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s().Get(ctx, client.ObjectKeyFromObject(binding), binding); err != nil {
			return err
		}
		binding.Spec.Levels = []grovev1alpha1.TopologyLevel{{Domain: "zone", Key: cluster.LabelZone}, {Domain: "rack", Key: cluster.LabelRack}, {Domain: "host", Key: corev1.LabelHostname}}
		return k8s().Update(ctx, binding)
	}))
	require.Eventually(t, func() bool { return reason() == "AllClusterTopologyLevelsAvailable" }, 30*time.Second, 200*time.Millisecond,
		"a rack level added to the binding is picked up")
}
