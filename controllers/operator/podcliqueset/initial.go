package podcliqueset

import (
	"sort"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/topologyconstraints"
)

// InitialChildren is what this reconciler creates for a PodCliqueSet at its template's sizes, built by
// the functions its passes use: kubectl grove renders it without a cluster.
type InitialChildren struct {
	Services      []*corev1.Service
	PodCliques    []*grovev1alpha1.PodClique // the standalone ones; scaling groups make their members
	ScalingGroups []*grovev1alpha1.PodCliqueScalingGroup
	Autoscalers   []*autoscalingv2.HorizontalPodAutoscaler
}

// Initial returns the children a PodCliqueSet's replicas get, replica by replica, owned by it:
// what a pass's plan creates when nothing exists yet.
func Initial(pcs *grovev1alpha1.PodCliqueSet) InitialChildren {
	var e InitialChildren
	for _, c := range fromNothing(pcs, nil, "", nil) {
		switch obj := c.obj.(type) {
		case *corev1.Service:
			e.Services = append(e.Services, obj)
		case *grovev1alpha1.PodClique:
			e.PodCliques = append(e.PodCliques, obj)
		case *grovev1alpha1.PodCliqueScalingGroup:
			e.ScalingGroups = append(e.ScalingGroups, obj)
		case *autoscalingv2.HorizontalPodAutoscaler:
			e.Autoscalers = append(e.Autoscalers, obj)
		}
	}
	return e
}

// fromNothing is what decide creates for a PodCliqueSet of which only the given PodCliques
// exist, with the PodGangs labelled for backend ("": none).
func fromNothing(pcs *grovev1alpha1.PodCliqueSet, cliques []*grovev1alpha1.PodClique, backend string, t *topology) []change {
	obs := &observed{cliques: map[string]*grovev1alpha1.PodClique{}, groups: map[string]*grovev1alpha1.PodCliqueScalingGroup{},
		gangs: map[string]*schedulerv1alpha1.PodGang{}, services: map[string]*corev1.Service{}, pods: map[string][]*corev1.Pod{},
		autoscalers: map[string]*autoscalingv2.HorizontalPodAutoscaler{}, backend: backend, topology: t}
	for _, pclq := range cliques {
		obs.cliques[pclq.Name] = pclq
	}
	// What a PodCliqueSet becomes from nothing does not depend on what its status recorded (a
	// manifest taken from a live object carries one).
	pcs = pcs.DeepCopy()
	pcs.Status = grovev1alpha1.PodCliqueSetStatus{}
	var out []change
	for _, c := range decide(input{pcs: pcs, obs: obs}).changes {
		if c.verb == create {
			out = append(out, c)
		}
	}
	return out
}

// TopologyInput is what the PodGangs' topology constraints are translated with: the
// configuration's topologyAwareScheduling.enabled and the ClusterTopologyBinding the
// PodCliqueSet names (nil when it does not exist).
type TopologyInput struct {
	Enabled bool
	Binding *grovev1alpha1.ClusterTopologyBinding
}

// InitialPodGangs returns the PodGangs of every replica, labelled for backend, as this reconciler
// writes them once cliques — every PodClique, standalone and scaling-group members — exist, and
// the domains the constraints name that the binding lacks.
func InitialPodGangs(pcs *grovev1alpha1.PodCliqueSet, cliques []*grovev1alpha1.PodClique, backend string, topo TopologyInput) ([]*schedulerv1alpha1.PodGang, []grovev1alpha1.TopologyDomain) {
	name, _ := topologyconstraints.TopologyName(pcs)
	t := &topology{name: name, enabled: topo.Enabled, missing: map[grovev1alpha1.TopologyDomain]bool{}}
	if topo.Binding != nil && topo.Binding.Name == name {
		t.binding = &topo.Binding.Spec
	}
	var gangs []*schedulerv1alpha1.PodGang
	for _, c := range fromNothing(pcs, cliques, backend, t) {
		if pg, ok := c.obj.(*schedulerv1alpha1.PodGang); ok {
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
