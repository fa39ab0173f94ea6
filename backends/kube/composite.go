package kube

import (
	"fmt"
	"strings"

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/topologyconstraints"
)

// The Workload API's limits on a tree of templates: at most 8 templates in each list, and
// composites nested at most 3 deep so that pod groups sit at depth 4 at most.
const (
	maxTemplates      = schedulingv1beta1.WorkloadMaxPodGroupTemplates
	maxCompositeDepth = schedulingv1beta1.WorkloadMaxTreeDepth - 1
)

// compositeNode is one CompositePodGroup of a PodGang's tree: the root is the whole gang, below
// it the scaling-group topology groups, and parts that only split a list the API caps at 8.
// Every composite asks for all its children (minGroupCount = their number): a PodGang needs
// each pod group's minimum, so no child is optional.
type compositeNode struct {
	template   string
	object     string
	key        string
	podGroups  []*podGroupNode
	composites []*compositeNode
}

// podGroupNode is one pod group of the PodGang: a scheduling.k8s.io PodGroup of its own,
// named after it, with its own minimum.
type podGroupNode struct {
	template string
	name     string
	min      int32
	key      string
}

// compositeTree is a PodGang laid out as composite pod groups within the API's limits, and
// what had to be given up to fit.
type compositeTree struct {
	root *compositeNode
	// used are the template names taken: unique within the Workload, as the API requires.
	used map[string]bool
	// flattened says what of the PodGang the tree does not keep; empty when it keeps everything.
	flattened []string
}

// buildTree lays a PodGang out as a tree of composite pod groups. Each pod group keeps its
// own minimum; a scaling-group topology group (spec.topologyConstraintGroupConfigs) becomes an
// intermediate composite with its pack key; lists longer than the API allows are split into
// parts, which lose nothing. When that is still too deep, the topology groups are dissolved
// into their parent (their pack keys are lost, said in flattened); nil when even that does not
// fit, and the PodGang is then one flat gang.
func buildTree(pg *schedulerv1alpha1.PodGang) *compositeTree {
	tree := layout(pg, true)
	if tree.fit() {
		return tree
	}
	tree = layout(pg, false)
	if !tree.fit() {
		return nil
	}
	for _, c := range pg.Spec.TopologyConstraintGroupConfigs {
		if key := topologyconstraints.RequiredKey(c.TopologyConstraint); key != "" {
			tree.flattened = append(tree.flattened, fmt.Sprintf("scaling-group topology group %s (pack key %s): its pod groups are children of %s", c.Name, key, pg.Name))
		}
	}
	return tree
}

// layout builds the tree before it is fitted to the limits, with the topology groups as
// composites of their own when groups is set.
func layout(pg *schedulerv1alpha1.PodGang, groups bool) *compositeTree {
	used := map[string]bool{GangTemplateName: true}
	root := &compositeNode{template: GangTemplateName, object: pg.Name, key: topologyconstraints.RequiredKey(pg.Spec.TopologyConstraint)}
	nodes := map[string]*podGroupNode{}
	for i, g := range pg.Spec.PodGroups {
		nodes[g.Name] = &podGroupNode{template: templateName(g.Name, fmt.Sprintf("podgroup-%d", i), used), name: PodGroupObjectName(pg, g.Name), min: max(g.MinReplicas, 1), key: topologyconstraints.RequiredKey(g.TopologyConstraint)}
	}
	grouped := map[string]bool{}
	if groups {
		for i, c := range pg.Spec.TopologyConstraintGroupConfigs {
			key := topologyconstraints.RequiredKey(c.TopologyConstraint)
			if key == "" {
				continue
			}
			n := &compositeNode{key: key}
			for _, member := range c.PodGroupNames {
				if node := nodes[member]; node != nil && !grouped[member] {
					grouped[member] = true
					n.podGroups = append(n.podGroups, node)
				}
			}
			if len(n.podGroups) > 0 {
				n.template = templateName(fmt.Sprintf("group-%d", i), "group", used)
				root.composites = append(root.composites, n)
			}
		}
	}
	for _, g := range pg.Spec.PodGroups {
		if !grouped[g.Name] {
			root.podGroups = append(root.podGroups, nodes[g.Name])
		}
	}
	return &compositeTree{root: root, used: used}
}

// templateName is name when it is a DNS label no other template of the Workload has, else
// fallback (made unique with a counter).
func templateName(name, fallback string, used map[string]bool) string {
	if len(validation.IsDNS1123Label(name)) > 0 || used[name] {
		name = fallback
	}
	for i := 0; used[name]; i++ {
		name = fmt.Sprintf("%s-%d", fallback, i)
	}
	used[name] = true
	return name
}

// fit splits lists of more than 8 templates into parts, names the composites' objects and
// reports whether the tree then nests no deeper than the API allows.
func (t *compositeTree) fit() bool {
	if !t.split(t.root, 1) {
		return false
	}
	t.root.name(t.root.object)
	return true
}

func (t *compositeTree) split(n *compositeNode, depth int) bool {
	if depth > maxCompositeDepth {
		return false
	}
	part := func() string { return templateName(fmt.Sprintf("part-%d", len(t.used)), "part", t.used) }
	if len(n.podGroups) > maxTemplates {
		for _, chunk := range chunks(n.podGroups) {
			n.composites = append(n.composites, &compositeNode{podGroups: chunk, template: part()})
		}
		n.podGroups = nil
	}
	for len(n.composites) > maxTemplates {
		var merged []*compositeNode
		for _, chunk := range chunks(n.composites) {
			merged = append(merged, &compositeNode{composites: chunk, template: part()})
		}
		n.composites = merged
	}
	for _, c := range n.composites {
		if !t.split(c, depth+1) {
			return false
		}
	}
	return true
}

func chunks[T any](items []T) [][]T {
	var out [][]T
	for len(items) > maxTemplates {
		out = append(out, items[:maxTemplates])
		items = items[maxTemplates:]
	}
	return append(out, items)
}

// name gives every composite below the root its object name: the PodGang's name and its
// template's, joined by a dot no PodGang or PodClique name contains, so names never collide.
func (n *compositeNode) name(pg string) {
	for _, c := range n.composites {
		c.object = pg + "." + c.template
		c.name(pg)
	}
}

// children is how many groups the composite has, all of which it requires.
func (n *compositeNode) children() int32 { return int32(len(n.podGroups) + len(n.composites)) }

// walk visits the composites parent first, with each one's parent object name ("" for the root).
func (n *compositeNode) walk(parent string, visit func(n *compositeNode, parent string)) {
	visit(n, parent)
	for _, c := range n.composites {
		c.walk(n.object, visit)
	}
}

// workloadTemplate is the node's CompositePodGroupTemplate, its subtree included.
func (n *compositeNode) workloadTemplate() schedulingv1beta1.CompositePodGroupTemplate {
	t := schedulingv1beta1.CompositePodGroupTemplate{
		Name:                  n.template,
		SchedulingPolicy:      compositePolicy(n),
		SchedulingConstraints: compositeConstraints(n.key),
	}
	for _, g := range n.podGroups {
		t.PodGroupTemplates = append(t.PodGroupTemplates, schedulingv1beta1.PodGroupTemplate{
			Name: g.template, SchedulingPolicy: memberPolicy(g.min), SchedulingConstraints: podGroupConstraints(g.key),
		})
	}
	for _, c := range n.composites {
		t.CompositePodGroupTemplates = append(t.CompositePodGroupTemplates, c.workloadTemplate())
	}
	return t
}

func compositePolicy(n *compositeNode) schedulingv1beta1.CompositePodGroupSchedulingPolicy {
	return schedulingv1beta1.CompositePodGroupSchedulingPolicy{Gang: &schedulingv1beta1.CompositeGangSchedulingPolicy{MinGroupCount: n.children()}}
}

func memberPolicy(minCount int32) schedulingv1beta1.PodGroupSchedulingPolicy {
	return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}}
}

func compositeConstraints(key string) *schedulingv1beta1.CompositePodGroupSchedulingConstraints {
	if key == "" {
		return nil
	}
	return &schedulingv1beta1.CompositePodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: key}}}
}

func podGroupConstraints(key string) *schedulingv1beta1.PodGroupSchedulingConstraints {
	if key == "" {
		return nil
	}
	return &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: key}}}
}

// BuildCompositeObjects are the Workload API objects of a PodGang in composite mode: one
// Workload whose template tree is the PodGang's, one CompositePodGroup per composite (parents
// first) and one PodGroup per pod group with its own minimum and its parent. They are
// created in this order. ok is false when the PodGang does not fit the API's limits even
// flattened; flattened says what the tree gives up.
func BuildCompositeObjects(pg *schedulerv1alpha1.PodGang) (objs []client.Object, flattened []string, ok bool) {
	tree := buildTree(pg)
	if tree == nil {
		return nil, nil, false
	}
	workload := &schedulingv1beta1.Workload{
		ObjectMeta: objectMeta(pg, pg.Name),
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef:              controllerRef(pg),
			CompositePodGroupTemplates: []schedulingv1beta1.CompositePodGroupTemplate{tree.root.workloadTemplate()},
		},
	}
	objs = append(objs, workload)
	var groups []client.Object
	tree.root.walk("", func(n *compositeNode, parent string) {
		cpg := &schedulingv1alpha3.CompositePodGroup{
			ObjectMeta: objectMeta(pg, n.object),
			Spec: schedulingv1alpha3.CompositePodGroupSpec{
				WorkloadRef:      &schedulingv1alpha3.WorkloadReference{WorkloadName: pg.Name, TemplateName: n.template},
				SchedulingPolicy: schedulingv1alpha3.CompositePodGroupSchedulingPolicy{Gang: &schedulingv1alpha3.CompositeGangSchedulingPolicy{MinGroupCount: n.children()}},
			},
		}
		if parent != "" {
			cpg.Spec.ParentCompositePodGroupName = ptr.To(parent)
		}
		if n.key != "" {
			cpg.Spec.SchedulingConstraints = &schedulingv1alpha3.CompositePodGroupSchedulingConstraints{Topology: []schedulingv1alpha3.TopologyConstraint{{Key: n.key}}}
		}
		objs = append(objs, cpg)
		for _, g := range n.podGroups {
			groups = append(groups, &schedulingv1beta1.PodGroup{
				ObjectMeta: objectMeta(pg, g.name),
				Spec: schedulingv1beta1.PodGroupSpec{
					ParentCompositePodGroupName: ptr.To(n.object),
					WorkloadRef:                 &schedulingv1beta1.WorkloadReference{WorkloadName: pg.Name, TemplateName: g.template},
					SchedulingPolicy:            memberPolicy(g.min),
					SchedulingConstraints:       podGroupConstraints(g.key),
				},
			})
		}
	})
	return append(objs, groups...), tree.flattened, true
}

// PodGroupObjectName is the Workload API PodGroup of one pod group of a hierarchical gang: named
// after the pod group (its PodClique), but for a gang of a PodGangMap entry (upstream's Coherent
// layout), where one PodClique's pods are shared among several gangs and move to a new gang when
// an update replaces them: there the gang's name comes first, so no two gangs claim one object.
func PodGroupObjectName(pg *schedulerv1alpha1.PodGang, podGroup string) string {
	if pg.Labels[grovev1alpha1.LabelEpoch] == "" {
		return podGroup
	}
	prefix := pg.Labels[grovev1alpha1.LabelPartOf] + "-" + pg.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] + "-"
	return pg.Name + "-" + strings.TrimPrefix(podGroup, prefix)
}
