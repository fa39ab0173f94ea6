package podcliqueset

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
	"github.com/kubegrove/grove/internal/contract/topologyconstraints"
)

// topology is what a PodCliqueSet's topology constraints resolve to in this reconcile.
type topology struct {
	// name is the PodCliqueSet's effective topology name; empty when it sets no constraint.
	name string
	// enabled mirrors the configuration's topologyAwareScheduling.enabled.
	enabled bool
	// binding is the named ClusterTopologyBinding's spec, nil when it does not exist.
	binding *grovev1alpha1.ClusterTopologyBindingSpec
	// missing collects the domains constraints name that the binding lacks.
	missing map[grovev1alpha1.TopologyDomain]bool
}

// observeTopology reads the binding the PodCliqueSet's constraints refer to.
func (r *Reconciler) observeTopology(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet) (*topology, error) {
	name, _ := topologyconstraints.TopologyName(pcs)
	t := &topology{name: name, enabled: r.TopologyAwareScheduling, missing: map[grovev1alpha1.TopologyDomain]bool{}}
	if t.name == "" || !t.enabled {
		return t, nil
	}
	ct := &grovev1alpha1.ClusterTopologyBinding{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: t.name}, ct); err != nil {
		if apierrors.IsNotFound(err) {
			return t, nil
		}
		return nil, err
	}
	t.binding = &ct.Spec
	return t, nil
}

// active reports whether constraints are translated into PodGangs.
func (t *topology) active() bool { return t != nil && t.enabled && t.binding != nil }

// constraint translates a constraint's domains into the binding's node-label keys; domains the
// binding lacks are left out and recorded.
func (t *topology) constraint(tc *grovev1alpha1.TopologyConstraint) *schedulerv1alpha1.TopologyConstraint {
	if !t.active() || tc == nil || (tc.Pack == nil && tc.PackDomain == "") {
		return nil
	}
	pack := &schedulerv1alpha1.TopologyPackConstraint{}
	for _, d := range []struct {
		domain grovev1alpha1.TopologyDomain
		into   **string
	}{{tc.RequiredDomain(), &pack.Required}, {tc.PreferredDomain(), &pack.Preferred}} {
		if d.domain == "" {
			continue
		}
		key, ok := t.binding.KeyOf(d.domain)
		if !ok {
			t.missing[d.domain] = true
			continue
		}
		*d.into = &key
	}
	if pack.Required == nil && pack.Preferred == nil {
		return nil
	}
	return &schedulerv1alpha1.TopologyConstraint{PackConstraint: pack}
}

// applyTopology adds the PodCliqueSet's, each clique's and each scaling-group replica's
// constraint to a PodGang spec whose pod groups are built.
func (t *topology) applyTopology(pcs *grovev1alpha1.PodCliqueSet, replica int, spec *schedulerv1alpha1.PodGangSpec, obs *observed) {
	if !t.active() {
		return
	}
	spec.TopologyConstraint = t.constraint(pcs.Spec.Template.TopologyConstraint)
	templates := map[string]*grovev1alpha1.PodCliqueTemplateSpec{}
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil {
			templates[c.Role()] = c
		}
	}
	groupConfigs := map[string]*grovev1alpha1.PodCliqueScalingGroupConfig{}
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		g := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]
		groupConfigs[grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, replica, g.Name)] = g
	}
	members := map[string][]string{}
	var order []string
	for i := range spec.PodGroups {
		group := &spec.PodGroups[i]
		pclq := obs.cliques[group.Name]
		if pclq == nil {
			continue // translated once the PodClique exists, which changes the spec anyway
		}
		if tmpl := templates[pclq.Spec.RoleName]; tmpl != nil {
			group.TopologyConstraint = t.constraint(tmpl.TopologyConstraint)
		}
		pcsg := pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroup]
		if g := groupConfigs[pcsg]; g != nil && g.TopologyConstraint != nil {
			name := pcsg + "-" + pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex]
			if _, seen := members[name]; !seen {
				order = append(order, name)
			}
			members[name] = append(members[name], group.Name)
		}
	}
	for _, name := range order {
		pcsg := name[:strings.LastIndex(name, "-")]
		if tc := t.constraint(groupConfigs[pcsg].TopologyConstraint); tc != nil {
			spec.TopologyConstraintGroupConfigs = append(spec.TopologyConstraintGroupConfigs,
				schedulerv1alpha1.TopologyConstraintGroupConfig{Name: name, PodGroupNames: members[name], TopologyConstraint: tc})
		}
	}
}

// annotations are the PodGang annotations naming the topology its constraints refer to.
func (t *topology) annotations() map[string]string {
	if !t.active() {
		return nil
	}
	return map[string]string{schedulerv1alpha1.AnnotationTopologyName: t.name}
}

// condition says whether the levels the constraints name are available; nil when the
// PodCliqueSet sets no constraint. Call it after every constraint was translated.
func (t *topology) condition(pcs *grovev1alpha1.PodCliqueSet) *metav1.Condition {
	if t == nil || (t.name == "" && len(topologyconstraints.All(pcs)) == 0) {
		return nil
	}
	cond := &metav1.Condition{Type: grovev1alpha1.ConditionTopologyLevelsUnavailable, Status: metav1.ConditionTrue, ObservedGeneration: pcs.Generation}
	switch {
	case !t.enabled:
		cond.Reason, cond.Message = grovev1alpha1.ReasonTopologyAwareSchedulingDisabled, "topology constraints are ignored: topologyAwareScheduling is disabled in the operator configuration"
	case t.binding == nil:
		cond.Reason, cond.Message = grovev1alpha1.ReasonClusterTopologyNotFound, fmt.Sprintf("ClusterTopologyBinding %q does not exist; the PodGangs carry no topology constraint until it does", t.name)
	default:
		// Translate every constraint so missing reflects all of them, not only the ones in gangs.
		for _, c := range topologyconstraints.All(pcs) {
			t.constraint(c.Constraint)
		}
		if len(t.missing) == 0 {
			cond.Status, cond.Reason = metav1.ConditionFalse, grovev1alpha1.ReasonAllClusterTopologyLevelsAvailable
			cond.Message = fmt.Sprintf("every domain is a level of ClusterTopologyBinding %q", t.name)
			break
		}
		var missing []string
		for d := range t.missing {
			missing = append(missing, string(d))
		}
		sort.Strings(missing)
		cond.Reason = grovev1alpha1.ReasonClusterTopologyLevelsUnavailable
		cond.Message = fmt.Sprintf("ClusterTopologyBinding %q has no level %v; those constraints are left out of the PodGangs", t.name, missing)
	}
	return cond
}

// podCliqueSetsOfBinding maps a ClusterTopologyBinding to the PodCliqueSets naming it.
func (r *Reconciler) podCliqueSetsOfBinding(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &grovev1alpha1.PodCliqueSetList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{fieldindex.PodCliqueSetsOfTopology: obj.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}
