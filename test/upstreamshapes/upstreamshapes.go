// Package upstreamshapes describes the workloads of upstream Grove's e2e suite in the project's
// own words: PodCliqueSets built with test/builders from the facts of each — names, pod counts,
// minAvailable, startup order, topology constraints, claim templates and sharing, MNNVL
// annotations, queues and scheduler names — not copied from upstream's files. The default test
// tiers run these shapes, so what upstream's files prove is proven without them; the optional
// upstream corpus tier (test/upstreamcorpus) additionally applies upstream's files unchanged.
package upstreamshapes

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	"github.com/kubegrove/grove/test/builders"
)

const (
	// LabelE2ENode is the node label, and taint key, of the nodes upstream's e2e pods run on.
	LabelE2ENode = "node_role.e2e.grove.nvidia.com"
	// QueueTest is the KAI queue upstream's workloads label: a child of the queue default.
	QueueTest = "test"
	// SharedNamespace holds the ResourceClaimTemplate ext-ns-tpl that rs-test's clique worker-a
	// shares across namespaces; upstream's test creates it before the workload.
	SharedNamespace = "rs-shared"
)

// Shape is one workload of upstream's e2e suite as the project builds it.
type Shape struct {
	// Upstream is the file of upstream's suite (operator/e2e/yaml) the shape stands for.
	Upstream string
	// Build makes the workload's PodCliqueSet in a namespace.
	Build func(ns string) *grovev1alpha1.PodCliqueSet
	// Before makes what the workload needs in its namespace before the PodCliqueSet (nil when
	// nothing): the ResourceClaimTemplates upstream's file brings along.
	Before func(ns string) []client.Object
}

// Objects is everything the workload creates in ns, in order: Before's objects, then the
// PodCliqueSet.
func (s Shape) Objects(ns string) []client.Object {
	var out []client.Object
	if s.Before != nil {
		out = s.Before(ns)
	}
	return append(out, s.Build(ns))
}

// All returns every shape, sorted by upstream file. Upstream's scale files differ from one
// another only in the replica count of one clique: scale-test-1000 (500 replicas, as are
// scale-test-1000-moe, scale-down and scale-down-to-zero), scale-up-tiny (0, as is
// scale-up-from-zero; scale-up starts at 250), scale-down-tiny (5) and soak-churn (25 replicas,
// more memory) stand for them.
func All() []Shape {
	all := []Shape{
		{Upstream: "mnnvl-comprehensive-bare.yaml", Build: mnnvlComprehensiveBare},
		{Upstream: "mnnvl-comprehensive-mix.yaml", Build: mnnvlMix},
		{Upstream: "mnnvl-cpu-with-annotation.yaml", Build: mnnvlCPUWithAnnotation},
		{Upstream: "mnnvl-gpu-bare.yaml", Build: mnnvlGPU("mnnvl-gpu-bare", "")},
		{Upstream: "mnnvl-gpu-default.yaml", Build: mnnvlGPU("mnnvl-gpu-default", "default")},
		{Upstream: "mnnvl-gpu-invalid.yaml", Build: mnnvlGPU("mnnvl-gpu-invalid", "invalid value with spaces")},
		{Upstream: "mnnvl-gpu-optout.yaml", Build: mnnvlGPU("mnnvl-gpu-optout", grovev1alpha1.MNNVLGroupOptOut)},
		{Upstream: "scale-down-tiny.yaml", Build: experts("scale-down-tiny", 5, "1Mi")},
		{Upstream: "scale-test-1000.yaml", Build: experts("scale-test-1000", 500, "1Mi")},
		{Upstream: "scale-up-tiny.yaml", Build: experts("scale-up-tiny", 0, "1Mi")},
		{Upstream: "soak-churn.yaml", Build: experts("soak-churn", 25, "10Mi")},
		{Upstream: "upgrade.yaml", Build: upgradeSurvivor},
		{Upstream: "workload-ondelete.yaml", Build: workloadOnDelete},
		{Upstream: "workload-resource-sharing.yaml", Build: resourceSharing, Before: resourceSharingTemplates},
		{Upstream: "workload1-gt.yaml", Build: startupWorkload("workload1-gt", strict, gangTerminated)},
		{Upstream: "workload1.yaml", Build: startupWorkload("workload1", strict)},
		{Upstream: "workload2-gt.yaml", Build: startupWorkload("workload2-gt", flexible, gangTerminated)},
		{Upstream: "workload2.yaml", Build: startupWorkload("workload2", flexible)},
		{Upstream: "workload3.yaml", Build: startupWorkload("workload3", strict, inOrder)},
		{Upstream: "workload4.yaml", Build: startupWorkload("workload4", flexible, inOrder)},
		{Upstream: "workload5-gt.yaml", Build: startupWorkload("workload5-gt", flexible, allOfPCNeeded, gangTerminated)},
		{Upstream: "workload5.yaml", Build: startupWorkload("workload5", strict, explicit("pc-c", "pc-a"), explicit("pc-b", "pc-c"))},
		{Upstream: "workload6.yaml", Build: startupWorkload("workload6", flexible, explicit("pc-b", "pc-a"), explicit("pc-c", "pc-b"))},
	}
	all = append(all, Topology()...)
	slices.SortFunc(all, func(a, b Shape) int { return strings.Compare(a.Upstream, b.Upstream) })
	return all
}

// ByUpstream returns the shape standing for an upstream file.
func ByUpstream(file string) (Shape, bool) {
	for _, s := range All() {
		if s.Upstream == file {
			return s, true
		}
	}
	return Shape{}, false
}

// sleep is the command of upstream's pods: they only need to run.
var sleep = []string{"sleep", "infinity"}

// onAgents makes a clique's pods upstream's e2e pods: KAI schedules them in queue test on the
// e2e agent nodes (selected by the label, their taint tolerated); each sleeps, requesting memory.
func onAgents(memory string) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) {
		c.Labels = map[string]string{kaiv2alpha2.QueueLabel: QueueTest}
		ps := &c.Spec.PodSpec
		ps.SchedulerName = "kai-scheduler"
		ps.TerminationGracePeriodSeconds = ptr.To[int64](5)
		ps.Affinity = requiredNode(LabelE2ENode, "agent")
		ps.Tolerations = agentTaintTolerated()
		ps.Containers[0].Command = sleep
		ps.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}
	}
}

func requiredNode(key, value string) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{value}}}}},
	}}}
}

func agentTaintTolerated() []corev1.Toleration {
	return []corev1.Toleration{{Key: LabelE2ENode, Operator: corev1.TolerationOpEqual, Value: "agent", Effect: corev1.TaintEffectNoSchedule}}
}

// role sets a clique's roleName where upstream's differs from the clique's name.
func role(name string) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) { c.Spec.RoleName = name }
}

// labelled sets a label on the PodCliqueSet.
func labelled(p *grovev1alpha1.PodCliqueSet, key, value string) {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[key] = value
}

// app labels the PodCliqueSet app=<its name>, as most of upstream's workloads are.
func app(p *grovev1alpha1.PodCliqueSet) *grovev1alpha1.PodCliqueSet {
	labelled(p, "app", p.Name)
	return p
}

// group returns the scaling group of that name.
func group(p *grovev1alpha1.PodCliqueSet, name string) *grovev1alpha1.PodCliqueScalingGroupConfig {
	for i := range p.Spec.Template.PodCliqueScalingGroupConfigs {
		if g := &p.Spec.Template.PodCliqueScalingGroupConfigs[i]; g.Name == name {
			return g
		}
	}
	panic("upstreamshapes: no scaling group " + name)
}

// clique returns the clique template of that name.
func clique(p *grovev1alpha1.PodCliqueSet, name string) *grovev1alpha1.PodCliqueTemplateSpec {
	for _, c := range p.Spec.Template.Cliques {
		if c.Name == name {
			return c
		}
	}
	panic("upstreamshapes: no clique " + name)
}

// startupWorkload is the workload of upstream's startup-order and gang-termination tests: the
// standalone clique pc-a (two pods) and the scaling group sg-x (two replicas) of pc-b (one pod)
// and pc-c (three), each pod on KAI asking for 80Mi.
func startupWorkload(name string, edits ...func(*grovev1alpha1.PodCliqueSet)) func(string) *grovev1alpha1.PodCliqueSet {
	return func(ns string) *grovev1alpha1.PodCliqueSet {
		p := builders.PodCliqueSet(ns, name).
			Clique("pc-a", 2, role("role-a"), onAgents("80Mi")).
			Clique("pc-b", 1, role("role-b"), onAgents("80Mi")).
			Clique("pc-c", 3, role("role-c"), onAgents("80Mi")).
			ScalingGroup("sg-x", 2, 2, "pc-b", "pc-c").Obj()
		for _, edit := range edits {
			edit(p)
		}
		return app(p)
	}
}

// strict needs every pod of the startup workload: minAvailable equals replicas everywhere.
func strict(p *grovev1alpha1.PodCliqueSet) {
	for _, c := range p.Spec.Template.Cliques {
		c.Spec.MinAvailable = ptr.To(c.Spec.Replicas)
	}
	group(p, "sg-x").MinAvailable = ptr.To[int32](2)
}

// flexible needs one pod of each clique and one replica of the group.
func flexible(p *grovev1alpha1.PodCliqueSet) {
	for _, c := range p.Spec.Template.Cliques {
		c.Spec.MinAvailable = ptr.To[int32](1)
	}
	group(p, "sg-x").MinAvailable = ptr.To[int32](1)
}

// allOfPCNeeded raises pc-c's minAvailable to its three pods, leaving no tolerance there.
func allOfPCNeeded(p *grovev1alpha1.PodCliqueSet) {
	clique(p, "pc-c").Spec.MinAvailable = ptr.To[int32](3)
}

// gangTerminated terminates a gang that stays below minAvailable for ten seconds.
func gangTerminated(p *grovev1alpha1.PodCliqueSet) {
	p.Spec.Template.TerminationDelay = &metav1.Duration{Duration: 10 * time.Second}
}

// inOrder starts the cliques in the order they are listed.
func inOrder(p *grovev1alpha1.PodCliqueSet) {
	p.Spec.Template.StartupType = ptr.To(grovev1alpha1.CliqueStartupTypeInOrder)
}

// explicit starts clique after parent, with the explicit startup type.
func explicit(clq, parent string) func(*grovev1alpha1.PodCliqueSet) {
	return func(p *grovev1alpha1.PodCliqueSet) {
		p.Spec.Template.StartupType = ptr.To(grovev1alpha1.CliqueStartupTypeExplicit)
		c := clique(p, clq)
		c.Spec.StartsAfter = append(c.Spec.StartsAfter, parent)
	}
}

// workloadOnDelete is the workload of upstream's OnDelete update tests: the startup workload
// with one of pc-a's two pods needed, replaced only when its pods are deleted.
func workloadOnDelete(ns string) *grovev1alpha1.PodCliqueSet {
	p := startupWorkload("workload-ondelete", strict)(ns)
	clique(p, "pc-a").Spec.MinAvailable = ptr.To[int32](1)
	p.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: grovev1alpha1.OnDeleteStrategy}
	return p
}

// experts is the workload of upstream's scale tests: replicas of one clique expert-worker of two
// pods (role expert), placed by kube-scheduler on the kwok nodes.
func experts(name string, replicas int32, memory string) func(string) *grovev1alpha1.PodCliqueSet {
	return func(ns string) *grovev1alpha1.PodCliqueSet {
		p := builders.PodCliqueSet(ns, name).Replicas(replicas).Clique("expert-worker", 2, role("expert"), builders.MinAvailable(2),
			func(c *grovev1alpha1.PodCliqueTemplateSpec) {
				ps := &c.Spec.PodSpec
				ps.SchedulerName = corev1.DefaultSchedulerName
				ps.Affinity = requiredNode("type", "kwok")
				ps.Tolerations = agentTaintTolerated()
				ps.Containers[0].Image = "nginx:alpine-slim"
				ps.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(memory)}
			}).Obj()
		return app(p)
	}
}

// upgradeSurvivor is the workload upstream's upgrade test keeps running across an operator
// upgrade: bootstrap, then worker after it.
func upgradeSurvivor(ns string) *grovev1alpha1.PodCliqueSet {
	pause := func(c *grovev1alpha1.PodCliqueTemplateSpec) {
		c.Spec.PodSpec.Containers[0].Image = "registry.k8s.io/pause:3.10"
	}
	return builders.PodCliqueSet(ns, "upgrade-survivor").StartupType(grovev1alpha1.CliqueStartupTypeExplicit).
		Clique("bootstrap", 1, builders.MinAvailable(1), pause).
		Clique("worker", 1, builders.MinAvailable(1), pause, builders.StartsAfter("bootstrap")).Obj()
}
