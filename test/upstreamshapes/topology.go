package upstreamshapes

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// Topology returns the shapes of upstream's topology-aware scheduling suite (its tas-*.yaml):
// pack constraints at PodCliqueSet, scaling-group and clique level, required and preferred,
// over the ClusterTopologyBinding grove-topology (and gb200-topology, h100-topology and
// tas20-topology for the multi-topology and condition tests). Every pod is on KAI.
func Topology() []Shape {
	return []Shape{
		{Upstream: "tas-hierarchy.yaml", Build: tas("tas-hierarchy", 1, func(b *builders.PodCliqueSetBuilder) {
			b.Clique("prefill", 2, builders.MinAvailable(2), onAgents("40Mi"), packed("host", "")).
				Clique("decode", 2, builders.MinAvailable(2), onAgents("40Mi"), packed("host", "")).
				ScalingGroup("inference-group", 2, 2, "prefill", "decode")
		}, pcsPack("block", ""), groupPack("inference-group", "rack", ""))},
		{Upstream: "tas-host-level.yaml", Build: tas("tas-host-level", 1, func(b *builders.PodCliqueSetBuilder) {
			b.Clique("worker", 2, builders.MinAvailable(2), onAgents("40Mi"), packed("host", ""))
		})},
		{Upstream: "tas-indep-clq.yaml", Build: tas("tas-indep-clq", 1, func(b *builders.PodCliqueSetBuilder) {
			b.Clique("worker-rack", 3, builders.MinAvailable(3), onAgents("20Mi"), packed("rack", "")).
				Clique("worker-block", 4, builders.MinAvailable(4), onAgents("20Mi"), packed("block", ""))
		}, apart("worker-rack", "worker-block"))},
		{Upstream: "tas-insuffic.yaml", Build: tas("tas-insuffic", 1, func(b *builders.PodCliqueSetBuilder) {
			b.Clique("worker", 10, builders.MinAvailable(10), onAgents("500Mi"))
		}, pcsPack("rack", ""))},
		{Upstream: "tas-large-scale.yaml", Build: tas("tas-large-scale", 1, func(b *builders.PodCliqueSetBuilder) {
			b.Clique("worker", 2, builders.MinAvailable(2), onAgents("40Mi"), packed("host", "")).
				ScalingGroup("workers", 10, 3, "worker")
		}, pcsPack("block", ""))},
		{Upstream: "tas-multi-topology-gb200.yaml", Build: tas("tas-gb200-workload", 1, twoWorkers("10Mi"), pcsPackIn("gb200-topology", "block"))},
		{Upstream: "tas-multi-topology-h100.yaml", Build: tas("tas-h100-workload", 1, twoWorkers("10Mi"), pcsPackIn("h100-topology", "block"))},
		{Upstream: "tas-multirep.yaml", Build: tas("tas-multirep", 2, twoWorkers("20Mi"), pcsPack("rack", ""), apart("worker"))},
		{Upstream: "tas-no-constraint.yaml", Build: tas("tas-no-constraint", 1, func(b *builders.PodCliqueSetBuilder) {
			b.Clique("worker", 2, builders.MinAvailable(2), onAgents("10Mi")).ScalingGroup("workers", 2, 2, "worker")
		}, apart("worker"))},
		{Upstream: "tas-pcs-multi-pcsg-multi-replica.yaml", Build: tas("tas-pcs-multi-pcsg", 2, disaggregated("40Mi", packed("host", "")),
			pcsPack("block", ""), groupPack("decoder", "rack", ""), groupPack("prefill", "rack", ""))},
		{Upstream: "tas-pcs-multi-pcsg.yaml", Build: tas("tas-pcs-multi-pcsg", 1, disaggregated("10Mi"),
			pcsPack("block", ""), groupPack("decoder", "rack", ""), groupPack("prefill", "rack", ""),
			apart("dworker", "dleader", "pworker", "pleader", "router"))},
		{Upstream: "tas-pcs-pclq.yaml", Build: tas("tas-pcs-pclq", 1, func(b *builders.PodCliqueSetBuilder) {
			b.Clique("worker", 2, builders.MinAvailable(2), onAgents("40Mi"), packed("host", ""))
		}, pcsPack("block", ""))},
		{Upstream: "tas-pcsg-pclq.yaml", Build: tas("tas-pcsg-pclq", 1, func(b *builders.PodCliqueSetBuilder) {
			b.Clique("worker", 2, builders.MinAvailable(2), onAgents("40Mi"), packed("host", "")).ScalingGroup("workers", 2, 2, "worker")
		}, groupPack("workers", "rack", ""))},
		{Upstream: "tas-pcsg-scale.yaml", Build: tas("tas-pcsg-scale", 1, func(b *builders.PodCliqueSetBuilder) {
			b.Clique("worker", 2, builders.MinAvailable(2), onAgents("40Mi")).ScalingGroup("inference-group", 3, 1, "worker")
		}, pcsPack("block", ""), groupPack("inference-group", "rack", ""))},
		{Upstream: "tas-preferred-pack.yaml", Build: tas("tas-preferred-pack", 1, func(b *builders.PodCliqueSetBuilder) {
			b.Clique("worker", 1, builders.MinAvailable(1), onAgents("10Mi")).
				Clique("router", 1, builders.MinAvailable(1), onAgents("10Mi"), packed("", "host")).
				ScalingGroup("workers", 2, 1, "worker")
		}, pcsPack("block", "rack"), groupPack("workers", "", "host"))},
		{Upstream: "tas-sl-pcs-only.yaml", Build: tas("tas-sl-pcs-only", 1, workerGroupAndRouter, pcsPack("rack", ""), apart("worker", "router"))},
		{Upstream: "tas-sl-pcsg-only.yaml", Build: tas("tas-sl-pcsg-only", 1, workerGroupAndRouter, groupPack("workers", "rack", ""), apart("worker", "router"))},
		{Upstream: "tas-standalone-pclq-only-pcs-zone.yaml", Build: tas("tas-standalone-pclq", 1, func(b *builders.PodCliqueSetBuilder) {
			b.Clique("worker", 4, builders.MinAvailable(4), onAgents("40Mi"))
		}, pcsPack("zone", ""), apart("worker"))},
		{Upstream: "tas-topology-condition.yaml", Build: tas("tas-topology-condition", 0, twoWorkers("10Mi"), pcsPackIn("tas20-topology", "rack"))},
	}
}

// groveTopology is the ClusterTopologyBinding upstream's topology workloads name.
const groveTopology = "grove-topology"

// pack is a constraint over the binding; an empty domain is left unset.
func pack(topology, required, preferred string) *grovev1alpha1.TopologyConstraint {
	return &grovev1alpha1.TopologyConstraint{TopologyName: topology, Pack: &grovev1alpha1.TopologyPackConstraint{
		Required: grovev1alpha1.TopologyDomain(required), Preferred: grovev1alpha1.TopologyDomain(preferred),
	}}
}

// packed packs a clique's pods over grove-topology (upstream names the binding at every level).
func packed(required, preferred string) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) {
		c.TopologyConstraint = pack(groveTopology, required, preferred)
	}
}

// pcsPack packs each PodCliqueSet replica over grove-topology.
func pcsPack(required, preferred string) func(*grovev1alpha1.PodCliqueSet) {
	return func(p *grovev1alpha1.PodCliqueSet) {
		p.Spec.Template.TopologyConstraint = pack(groveTopology, required, preferred)
	}
}

// pcsPackIn packs each PodCliqueSet replica into a required domain of another binding.
func pcsPackIn(topology, required string) func(*grovev1alpha1.PodCliqueSet) {
	return func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.TopologyConstraint = pack(topology, required, "") }
}

// groupPack packs each replica of a scaling group over grove-topology.
func groupPack(name, required, preferred string) func(*grovev1alpha1.PodCliqueSet) {
	return func(p *grovev1alpha1.PodCliqueSet) {
		group(p, name).TopologyConstraint = pack(groveTopology, required, preferred)
	}
}

// tas builds a topology workload: cliques and groups added by shape, constraints set by the
// edits, labelled app=<name>.
func tas(name string, replicas int32, shape func(*builders.PodCliqueSetBuilder), edits ...func(*grovev1alpha1.PodCliqueSet)) func(string) *grovev1alpha1.PodCliqueSet {
	return func(ns string) *grovev1alpha1.PodCliqueSet {
		b := builders.PodCliqueSet(ns, name).Replicas(replicas)
		shape(b)
		p := b.Obj()
		for _, edit := range edits {
			edit(p)
		}
		return app(p)
	}
}

// twoWorkers is one clique worker of two pods, both needed.
func twoWorkers(memory string) func(*builders.PodCliqueSetBuilder) {
	return func(b *builders.PodCliqueSetBuilder) {
		b.Clique("worker", 2, builders.MinAvailable(2), onAgents(memory))
	}
}

// workerGroupAndRouter is the scaling group workers (two replicas of one worker) beside a
// standalone router of two pods.
func workerGroupAndRouter(b *builders.PodCliqueSetBuilder) {
	b.Clique("worker", 1, builders.MinAvailable(1), onAgents("10Mi")).
		Clique("router", 2, builders.MinAvailable(2), onAgents("10Mi")).
		ScalingGroup("workers", 2, 2, "worker")
}

// disaggregated is upstream's disaggregated inference shape: scaling groups decoder (dworker,
// dleader) and prefill (pworker, pleader) of two replicas, one needed, beside a router of two
// pods; the groups' containers are named worker and leader; pworker takes the extra edits.
func disaggregated(memory string, pworker ...func(*grovev1alpha1.PodCliqueTemplateSpec)) func(*builders.PodCliqueSetBuilder) {
	return func(b *builders.PodCliqueSetBuilder) {
		b.Clique("dworker", 1, builders.MinAvailable(1), onAgents(memory), container("worker")).
			Clique("dleader", 1, builders.MinAvailable(1), onAgents(memory), container("leader")).
			Clique("pworker", 1, append([]func(*grovev1alpha1.PodCliqueTemplateSpec){builders.MinAvailable(1), onAgents(memory), container("worker")}, pworker...)...).
			Clique("pleader", 1, builders.MinAvailable(1), onAgents(memory), container("leader")).
			Clique("router", 2, builders.MinAvailable(2), onAgents(memory)).
			ScalingGroup("decoder", 2, 1, "dworker", "dleader").
			ScalingGroup("prefill", 2, 1, "pworker", "pleader")
	}
}

// container names a clique's one container.
func container(name string) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) { c.Spec.PodSpec.Containers[0].Name = name }
}

// apart keeps the pods of each named clique on distinct hosts: a required pod anti-affinity
// against the pods of the clique's PodClique in the first replica (of the PodCliqueSet and of
// its scaling group), which is how upstream's manifests spell it.
func apart(cliques ...string) func(*grovev1alpha1.PodCliqueSet) {
	return func(p *grovev1alpha1.PodCliqueSet) {
		for _, name := range cliques {
			podClique := p.Name + "-0-" + name
			for _, g := range p.Spec.Template.PodCliqueScalingGroupConfigs {
				if slices.Contains(g.CliqueNames, name) {
					podClique = p.Name + "-0-" + g.Name + "-0-" + name
				}
			}
			ps := &clique(p, name).Spec.PodSpec
			ps.Affinity.PodAntiAffinity = &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{
					Key: grovev1alpha1.LabelPodClique, Operator: metav1.LabelSelectorOpIn, Values: []string{podClique},
				}}},
				TopologyKey: corev1.LabelHostname,
			}}}
		}
	}
}
