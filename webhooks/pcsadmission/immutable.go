package pcsadmission

import (
	"reflect"

	"k8s.io/apimachinery/pkg/util/validation/field"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// ValidateImmutable rejects changes the running gangs cannot follow: the set of cliques (and
// their order when it defines startup), each clique's roleName, minAvailable, startsAfter and
// scheduler, the startup type, scaling-group membership, and every topology constraint (the
// PodCliqueSet's, each scaling group's and each clique's: the gangs were placed by them).
func ValidateImmutable(old, pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	tp := field.NewPath("spec", "template")
	immutable := func(p *field.Path, oldV, newV any) {
		if !reflect.DeepEqual(oldV, newV) {
			errs = append(errs, field.Invalid(p, newV, "field is immutable"))
		}
	}
	immutableTopology := func(p *field.Path, oldV, newV *grovev1alpha1.TopologyConstraint) {
		if !reflect.DeepEqual(oldV, newV) {
			errs = append(errs, field.Invalid(p, topologyString(newV), "field is immutable"))
		}
	}
	immutable(tp.Child("cliqueStartupType"), old.Spec.Template.StartupType, pcs.Spec.Template.StartupType)
	immutableTopology(tp.Child("topologyConstraint"), old.Spec.Template.TopologyConstraint, pcs.Spec.Template.TopologyConstraint)

	oldCliques := map[string]*grovev1alpha1.PodCliqueTemplateSpec{}
	var oldOrder, newOrder []string
	for _, c := range old.Spec.Template.Cliques {
		if c != nil {
			oldCliques[c.Name] = c
			oldOrder = append(oldOrder, c.Name)
		}
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		newOrder = append(newOrder, c.Name)
		p := tp.Child("cliques").Index(i)
		o, existed := oldCliques[c.Name]
		if !existed {
			errs = append(errs, field.Forbidden(p.Child("name"), "cliques cannot be added to an existing PodCliqueSet"))
			continue
		}
		immutable(p.Child("spec", "roleName"), o.Spec.RoleName, c.Spec.RoleName)
		immutable(p.Child("spec", "minAvailable"), o.Spec.MinAvailable, c.Spec.MinAvailable)
		immutable(p.Child("spec", "startsAfter"), o.Spec.StartsAfter, c.Spec.StartsAfter)
		immutable(p.Child("spec", "startsAfterSucceeded"), o.Spec.StartsAfterSucceeded, c.Spec.StartsAfterSucceeded)
		immutable(p.Child("spec", "podSpec", "schedulerName"), o.Spec.PodSpec.SchedulerName, c.Spec.PodSpec.SchedulerName)
		immutableTopology(p.Child("topologyConstraint"), o.TopologyConstraint, c.TopologyConstraint)
	}
	if len(newOrder) < len(oldOrder) {
		errs = append(errs, field.Forbidden(tp.Child("cliques"), "cliques cannot be removed from an existing PodCliqueSet"))
	}
	if st := pcs.Spec.Template.StartupType; st != nil && *st != grovev1alpha1.CliqueStartupTypeAnyOrder &&
		len(newOrder) == len(oldOrder) && !reflect.DeepEqual(oldOrder, newOrder) {
		errs = append(errs, field.Invalid(tp.Child("cliques"), newOrder, "the order of cliques defines startup and is immutable"))
	}

	membership := func(p *grovev1alpha1.PodCliqueSet) map[string][]string {
		out := map[string][]string{}
		for _, g := range p.Spec.Template.PodCliqueScalingGroupConfigs {
			out[g.Name] = g.CliqueNames
		}
		return out
	}
	immutable(tp.Child("podCliqueScalingGroups"), membership(old), membership(pcs))
	oldGroups := map[string]*grovev1alpha1.TopologyConstraint{}
	for _, g := range old.Spec.Template.PodCliqueScalingGroupConfigs {
		oldGroups[g.Name] = g.TopologyConstraint
	}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if o, existed := oldGroups[g.Name]; existed { // an added group is a membership change
			immutableTopology(tp.Child("podCliqueScalingGroups").Index(i).Child("topologyConstraint"), o, g.TopologyConstraint)
		}
	}
	return errs
}
