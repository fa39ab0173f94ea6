package kueuee2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// topologyQueue makes a Kueue Topology of the cluster's block, rack and host labels, a flavor
// bound to it (unbound without withTopology), a ClusterQueue of gpus GPUs on that flavor and its
// LocalQueue, plus the ClusterTopologyBinding PodCliqueSets name; it returns the namespace and
// the binding's name.
func topologyQueue(t *testing.T, name string, gpus int64, withTopology bool) (string, string) {
	t.Helper()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	topology := &kueuev1beta2.Topology{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueuev1beta2.TopologySpec{Levels: []kueuev1beta2.TopologyLevel{
		{NodeLabel: cluster.LabelBlock}, {NodeLabel: cluster.LabelRack}, {NodeLabel: corev1.LabelHostname},
	}}}
	flavor := &kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueuev1beta2.ResourceFlavorSpec{
		NodeLabels: map[string]string{cluster.LabelZone: "zone-a"}, TopologyName: ptr.To(kueuev1beta2.TopologyReference(name)),
	}}
	cq := &kueuev1beta2.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueuev1beta2.ClusterQueueSpec{
		NamespaceSelector: &metav1.LabelSelector{},
		ResourceGroups: []kueuev1beta2.ResourceGroup{{
			CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, gpu},
			Flavors: []kueuev1beta2.FlavorQuotas{{Name: kueuev1beta2.ResourceFlavorReference(name), Resources: []kueuev1beta2.ResourceQuota{
				{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("100")},
				{Name: gpu, NominalQuota: *resource.NewQuantity(gpus, resource.DecimalSI)},
			}}},
		}},
	}}
	lq := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: kueuev1beta2.ClusterQueueReference(name)}}
	binding := &grovev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: grovev1alpha1.ClusterTopologyBindingSpec{
		Levels: []grovev1alpha1.TopologyLevel{{Domain: "block", Key: cluster.LabelBlock}, {Domain: "rack", Key: cluster.LabelRack}, {Domain: "host", Key: corev1.LabelHostname}},
	}}
	if !withTopology {
		flavor.Spec.TopologyName = nil
	}
	objs := []client.Object{topology, flavor, cq, lq, binding}
	for _, obj := range objs {
		require.NoError(t, k8s().Create(ctx, obj))
	}
	t.Cleanup(func() {
		for i := len(objs) - 1; i >= 0; i-- {
			_ = k8s().Delete(context.Background(), objs[i])
		}
	})
	// Kueue's topology-aware scheduling counts the pods of earlier tests still on the nodes (their
	// namespaces are deleted in the background) and, in v0.15, does not look at a gang it found not
	// to fit again when such pods leave: wait for the racks to be free first.
	waitNoGPUPodOnANode(t, time.Minute)
	// Kueue builds its topology of the flavor's nodes before the ClusterQueue turns Active; a gang
	// queued before that may be set aside as inadmissible and not looked at again.
	eventually(t, time.Minute, func() (bool, string) {
		got := &kueuev1beta2.ClusterQueue{}
		require.NoError(t, k8s().Get(ctx, client.ObjectKey{Name: name}, got))
		c := meta.FindStatusCondition(got.Status.Conditions, kueuev1beta2.ClusterQueueActive)
		return c != nil && c.Status == metav1.ConditionTrue, fmt.Sprintf("ClusterQueue %s Active: %+v", name, c)
	})
	return ns, binding.Name
}

// Pack constraints reach Kueue's topology-aware scheduling where the ClusterQueue's flavor has a
// topology: the gang's Workload asks for one rack (a leader of one pod and its workers as one
// podSet group), Kueue assigns one, lifts its topology gate and every pod runs in it. A queue
// without a topology still runs the gang, and the PodCliqueSet says its constraint is not
// honoured. Two racks of 16 GPUs each: a gang of 16 GPUs fits one rack exactly, so kube-scheduler
// spreading pods by itself would cross racks.
func TestPackConstraintsReachKueuesTopologyAwareScheduling(t *testing.T) {
	for _, tc := range []struct {
		name         string
		queue        string
		withTopology bool
		leader       bool
		wantRequests int
	}{
		{"one clique packed in a rack", "tas-clique", true, false, 1},
		{"a leader and its workers packed in a rack together", "tas-pair", true, true, 2},
		{"a queue without a topology runs the gang and says so", "no-tas", false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			queue := tc.queue
			ns, binding := topologyQueue(t, queue, 16, tc.withTopology)
			pcs := gpuPCS(ns, "packed", queue, 4, 4)
			if tc.leader {
				pcs.Spec.Template.Cliques[0].Spec.Replicas = 3
				leader := pcs.Spec.Template.Cliques[0].DeepCopy()
				leader.Name, leader.Spec.Replicas = "leader", 1
				pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, leader)
			}
			pcs.Spec.Template.TopologyConstraint = &grovev1alpha1.TopologyConstraint{TopologyName: binding, Pack: &grovev1alpha1.TopologyPackConstraint{Required: "rack"}}
			require.NoError(t, k8s().Create(ctx, pcs))
			t.Cleanup(func() {
				if t.Failed() { // Kueue's own words on the gang, for the failure's output
					wl := &kueuev1beta2.Workload{}
					if k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "packed-0"}, wl) == nil {
						t.Logf("Workload packed-0 conditions: %+v", wl.Status.Conditions)
					}
				}
			})
			waitRunning(t, ns, "packed", 4, 2*time.Minute)
			waitQueueAdmitted(t, ns, "packed", metav1.ConditionTrue, grovev1alpha1.ReasonAllGangsAdmitted, time.Minute)

			wl := &kueuev1beta2.Workload{}
			require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "packed-0"}, wl))
			requests := 0
			for _, ps := range wl.Spec.PodSets {
				if r := ps.TopologyRequest; r != nil {
					requests++
					assert.Equal(t, cluster.LabelRack, ptr.Deref(r.Required, ""), "podSet %s", ps.Name)
					if tc.leader {
						assert.Equal(t, "packed-0", ptr.Deref(r.PodSetGroupName, ""), "the leader and its workers share one rack")
					}
				}
			}
			assert.Equal(t, tc.wantRequests, requests, "podSets with a topology request")

			if !tc.withTopology {
				eventually(t, time.Minute, func() (bool, string) {
					got := &grovev1alpha1.PodCliqueSet{}
					require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "packed"}, got))
					c := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionSchedulingConstraintsHonored)
					return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "no flavor of the queue's ClusterQueue has a topology"),
						fmt.Sprintf("SchedulingConstraintsHonored: %+v", c)
				})
				return
			}
			require.NotNil(t, wl.Status.Admission)
			for _, psa := range wl.Status.Admission.PodSetAssignments {
				assert.NotNil(t, psa.TopologyAssignment, "Kueue placed podSet %s in the topology", psa.Name)
			}
			racks := map[string]bool{}
			for _, p := range pods(t, ns, "packed") {
				node := &corev1.Node{}
				require.NoError(t, k8s().Get(ctx, client.ObjectKey{Name: p.Spec.NodeName}, node))
				racks[node.Labels[cluster.LabelRack]] = true
			}
			assert.Len(t, racks, 1, "every pod of the gang runs in one rack: %v", racks)
		})
	}
}

// waitNoGPUPodOnANode waits until no pod asking for GPUs is bound to a node and still running.
func waitNoGPUPodOnANode(t *testing.T, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() (bool, string) {
		list := &corev1.PodList{}
		require.NoError(t, k8s().List(context.Background(), list))
		var busy []string
		for _, p := range list.Items {
			if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			for _, c := range p.Spec.Containers {
				if _, ok := c.Resources.Requests[gpu]; ok {
					busy = append(busy, p.Namespace+"/"+p.Name+" on "+p.Spec.NodeName)
					break
				}
			}
		}
		return len(busy) == 0, fmt.Sprintf("pods asking for GPUs still on nodes: %v", busy)
	})
}
