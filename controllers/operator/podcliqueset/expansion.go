package podcliqueset

import (
	"maps"
	"slices"
	"sort"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends/constraints"
	"github.com/kubegrove/grove/controllers/operator/expand"
)

// Expansion is what this reconciler creates for a PodCliqueSet at its template's sizes, built by
// the functions its passes use: kubectl grove renders it without a cluster.
type Expansion struct {
	Services      []*corev1.Service
	PodCliques    []*grovev1alpha1.PodClique // the standalone ones; scaling groups make their members
	ScalingGroups []*grovev1alpha1.PodCliqueScalingGroup
	Autoscalers   []*autoscalingv2.HorizontalPodAutoscaler
}

// Expand returns the children a PodCliqueSet's replicas get, replica by replica, owned by it.
func Expand(pcs *grovev1alpha1.PodCliqueSet) Expansion {
	var e Expansion
	for replica := range int(pcs.Spec.Replicas) {
		svc := wantService(pcs, replica)
		setOwner(pcs, svc)
		e.Services = append(e.Services, svc)
		for _, tmpl := range standaloneCliques(pcs) {
			pclq := expand.PodClique(pcs, replica, tmpl, nil, grovev1alpha1.BasePodGangName(pcs.Name, replica))
			setOwner(pcs, pclq)
			e.PodCliques = append(e.PodCliques, pclq)
		}
		for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
			pcsg := wantGroup(pcs, replica, &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i])
			setOwner(pcs, pcsg)
			e.ScalingGroups = append(e.ScalingGroups, pcsg)
		}
	}
	hpas := wantedAutoscalers(pcs)
	for _, name := range slices.Sorted(maps.Keys(hpas)) {
		e.Autoscalers = append(e.Autoscalers, hpas[name])
	}
	return e
}

// TopologyInput is what the PodGangs' topology constraints are translated with: the
// configuration's topologyAwareScheduling.enabled and the ClusterTopologyBinding the
// PodCliqueSet names (nil when it does not exist).
type TopologyInput struct {
	Enabled bool
	Binding *grovev1alpha1.ClusterTopologyBinding
}

// ExpandPodGangs returns the PodGangs of every replica, labelled for backend, as this reconciler
// writes them once cliques — every PodClique, standalone and scaling-group members — exist, and
// the domains the constraints name that the binding lacks.
func ExpandPodGangs(pcs *grovev1alpha1.PodCliqueSet, cliques []*grovev1alpha1.PodClique, backend string, topo TopologyInput) ([]*schedulerv1alpha1.PodGang, []grovev1alpha1.TopologyDomain) {
	name, _ := constraints.TopologyName(pcs)
	t := &topology{name: name, enabled: topo.Enabled, missing: map[grovev1alpha1.TopologyDomain]bool{}}
	if topo.Binding != nil && topo.Binding.Name == name {
		t.binding = &topo.Binding.Spec
	}
	obs := &observed{cliques: map[string]*grovev1alpha1.PodClique{}, groups: map[string]*grovev1alpha1.PodCliqueScalingGroup{}, topology: t}
	for _, pclq := range cliques {
		obs.cliques[pclq.Name] = pclq
	}
	var gangs []*schedulerv1alpha1.PodGang
	for replica := range int(pcs.Spec.Replicas) {
		for _, g := range wantedGangs(pcs, replica, obs) {
			pg, _ := wantPodGang(pcs, replica, g, backend, obs)
			setOwner(pcs, pg)
			gangs = append(gangs, pg)
		}
	}
	var missing []grovev1alpha1.TopologyDomain
	for d := range t.missing {
		missing = append(missing, d)
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
	return gangs, missing
}
