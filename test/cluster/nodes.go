package cluster

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Node labels of the fake nodes; the topology keys let topology-aware tests pack by rack, block
// and zone.
const (
	// LabelKwokNode marks nodes kwok manages.
	LabelKwokNode = "type=kwok"
	// LabelZone, LabelBlock and LabelRack are the topology levels of each node.
	LabelZone  = "topology.kubernetes.io/zone"
	LabelBlock = "topology.kubernetes.io/block"
	LabelRack  = "topology.kubernetes.io/rack"
	// ResourceGPU is the extended resource the nodes advertise.
	ResourceGPU corev1.ResourceName = "nvidia.com/gpu"
)

// NodeSpec is the capacity and labels of one fake node.
type NodeSpec struct {
	Name     string
	Capacity corev1.ResourceList
	Labels   map[string]string
	// Taints keep other tests' pods off a node a test owns.
	Taints []corev1.Taint
}

// DefaultNode is a node with 32 CPUs, 256Gi, 110 pods and 8 GPUs, two nodes to a rack, two racks
// to a block, one zone.
func DefaultNode(i int) NodeSpec {
	name := fmt.Sprintf("kwok-node-%d", i)
	return NodeSpec{
		Name: name,
		Capacity: corev1.ResourceList{
			corev1.ResourceCPU:    resource.MustParse("32"),
			corev1.ResourceMemory: resource.MustParse("256Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
			ResourceGPU:           resource.MustParse("8"),
		},
		Labels: map[string]string{
			corev1.LabelHostname: name,
			LabelZone:            "zone-a",
			LabelBlock:           fmt.Sprintf("block-%d", i/4),
			LabelRack:            fmt.Sprintf("rack-%d", i/2),
		},
	}
}

func (c *Cluster) createNodes(ctx context.Context) error {
	specs := make([]NodeSpec, c.opts.Nodes)
	for i := range specs {
		specs[i] = c.opts.Node(i)
	}
	return c.AddNodes(ctx, specs...)
}

// AddNodes creates kwok nodes and waits until each is Ready and schedulable.
func (c *Cluster) AddNodes(ctx context.Context, specs ...NodeSpec) error {
	for _, spec := range specs {
		labels := map[string]string{"type": "kwok", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64"}
		for k, v := range spec.Labels {
			labels[k] = v
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        spec.Name,
				Labels:      labels,
				Annotations: map[string]string{"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
			},
			Spec:   corev1.NodeSpec{Taints: spec.Taints},
			Status: corev1.NodeStatus{Capacity: spec.Capacity, Allocatable: spec.Capacity},
		}
		if err := c.client.Create(ctx, node); err != nil {
			return fmt.Errorf("creating node %s: %w", spec.Name, err)
		}
	}
	return waitUntil(ctx, fmt.Sprintf("%d Ready nodes", len(specs)), time.Minute, c.componentProcs(), func(ctx context.Context) (bool, error) {
		for _, spec := range specs {
			n := &corev1.Node{}
			if err := c.client.Get(ctx, client.ObjectKey{Name: spec.Name}, n); err != nil {
				return false, err
			}
			if !nodeReady(n) || hasNotReadyTaint(n) {
				return false, nil
			}
		}
		return true, nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// hasNotReadyTaint reports the taint that keeps pods off a node until the node lifecycle
// controller sees it Ready.
func hasNotReadyTaint(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady {
			return true
		}
	}
	return false
}

func getLease(ctx context.Context, c client.Client, ns, name string) (*coordinationv1.Lease, error) {
	lease := &coordinationv1.Lease{}
	return lease, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, lease)
}

// PoolLabel marks the nodes a test owns (AddPool): its value is the test's namespace; a taint of
// the same key keeps every other pod off them.
const PoolLabel = "grove.test/pool"

// AddPool adds n nodes of the given capacity (nil: DefaultNode's) that only pods of namespace ns
// land on (see OnPool), so a test may cordon, fill or delete them without touching its
// neighbours. It returns their names.
func (c *Cluster) AddPool(ctx context.Context, ns string, n int, capacity corev1.ResourceList) ([]string, error) {
	specs := make([]NodeSpec, n)
	names := make([]string, n)
	for i := range specs {
		specs[i] = DefaultNode(0)
		if capacity != nil {
			specs[i].Capacity = capacity
		}
		specs[i].Name = fmt.Sprintf("%s-node-%d", ns, i)
		specs[i].Labels = map[string]string{corev1.LabelHostname: specs[i].Name, PoolLabel: ns}
		specs[i].Taints = []corev1.Taint{{Key: PoolLabel, Value: ns, Effect: corev1.TaintEffectNoSchedule}}
		names[i] = specs[i].Name
	}
	return names, c.AddNodes(ctx, specs...)
}

// OnPool puts a pod spec on namespace ns's own nodes (AddPool).
func OnPool(ps *corev1.PodSpec, ns string) {
	ps.NodeSelector = map[string]string{PoolLabel: ns}
	ps.Tolerations = append(ps.Tolerations, corev1.Toleration{Key: PoolLabel, Operator: corev1.TolerationOpEqual, Value: ns, Effect: corev1.TaintEffectNoSchedule})
}

// SetUnschedulable cordons (true) or uncordons nodes.
func (c *Cluster) SetUnschedulable(ctx context.Context, unschedulable bool, nodes ...string) error {
	for _, name := range nodes {
		patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"unschedulable":%t}}`, unschedulable)))
		if err := c.client.Patch(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, patch); err != nil {
			return err
		}
	}
	return nil
}

// DeleteNodes removes nodes a test added.
func (c *Cluster) DeleteNodes(ctx context.Context, nodes ...string) {
	for _, name := range nodes {
		_ = c.client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
}
