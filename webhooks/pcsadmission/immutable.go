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
	tp := field.NewPath("spec", "template")
	var errs field.ErrorList
	errs = append(errs, immutable(tp.Child("cliqueStartupType"), old.Spec.Template.StartupType, pcs.Spec.Template.StartupType)...)
	errs = append(errs, immutableTopology(tp.Child("topologyConstraint"), old.Spec.Template.TopologyConstraint, pcs.Spec.Template.TopologyConstraint)...)
	// ResourceClaims cannot change once made: the templates and who shares them stay.
	errs = append(errs, immutable(tp.Child("resourceClaimTemplates"), old.Spec.Template.ResourceClaimTemplates, pcs.Spec.Template.ResourceClaimTemplates)...)
	errs = append(errs, immutable(tp.Child("resourceSharing"), old.Spec.Template.ResourceSharing, pcs.Spec.Template.ResourceSharing)...)
	errs = append(errs, immutableCliques(old, pcs, tp)...)
	return append(errs, immutableGroups(old, pcs, tp)...)
}

func immutable(p *field.Path, oldV, newV any) field.ErrorList {
	if reflect.DeepEqual(oldV, newV) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, newV, "field is immutable")}
}

func immutableTopology(p *field.Path, oldV, newV *grovev1alpha1.TopologyConstraint) field.ErrorList {
	if reflect.DeepEqual(oldV, newV) {
		return nil
	}
	return field.ErrorList{field.Invalid(p, topologyString(newV), "field is immutable")}
}

// immutableCliques keeps the set of cliques, their order where it defines startup, and each
// clique's roleName, minAvailable, startsAfter, scheduler and topology constraint.
func immutableCliques(old, pcs *grovev1alpha1.PodCliqueSet, tp *field.Path) field.ErrorList {
	var errs field.ErrorList
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
		errs = append(errs, immutable(p.Child("spec", "roleName"), o.Role(), c.Role())...)
		errs = append(errs, immutable(p.Child("resourceSharing"), o.ResourceSharing, c.ResourceSharing)...)
		errs = append(errs, immutable(p.Child("spec", "minAvailable"), o.Spec.MinAvailable, c.Spec.MinAvailable)...)
		errs = append(errs, immutable(p.Child("spec", "startsAfter"), o.Spec.StartsAfter, c.Spec.StartsAfter)...)
		errs = append(errs, immutable(p.Child("spec", "startsAfterSucceeded"), o.Spec.StartsAfterSucceeded, c.Spec.StartsAfterSucceeded)...)
		errs = append(errs, immutable(p.Child("spec", "podSpec", "schedulerName"), o.Spec.PodSpec.SchedulerName, c.Spec.PodSpec.SchedulerName)...)
		errs = append(errs, immutableTopology(p.Child("topologyConstraint"), o.TopologyConstraint, c.TopologyConstraint)...)
	}
	if len(newOrder) < len(oldOrder) {
		errs = append(errs, field.Forbidden(tp.Child("cliques"), "cliques cannot be removed from an existing PodCliqueSet"))
	}
	if st := pcs.Spec.Template.StartupType; st != nil && *st != grovev1alpha1.CliqueStartupTypeAnyOrder &&
		len(newOrder) == len(oldOrder) && !reflect.DeepEqual(oldOrder, newOrder) {
		errs = append(errs, field.Invalid(tp.Child("cliques"), newOrder, "the order of cliques defines startup and is immutable"))
	}
	return errs
}

// immutableGroups keeps scaling-group membership and each group's topology constraint.
func immutableGroups(old, pcs *grovev1alpha1.PodCliqueSet, tp *field.Path) field.ErrorList {
	membership := func(p *grovev1alpha1.PodCliqueSet) map[string][]string {
		out := map[string][]string{}
		for _, g := range p.Spec.Template.PodCliqueScalingGroupConfigs {
			out[g.Name] = g.CliqueNames
		}
		return out
	}
	errs := immutable(tp.Child("podCliqueScalingGroups"), membership(old), membership(pcs))
	oldGroups := map[string]*grovev1alpha1.PodCliqueScalingGroupConfig{}
	for i := range old.Spec.Template.PodCliqueScalingGroupConfigs {
		oldGroups[old.Spec.Template.PodCliqueScalingGroupConfigs[i].Name] = &old.Spec.Template.PodCliqueScalingGroupConfigs[i]
	}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if o, existed := oldGroups[g.Name]; existed { // an added group is a membership change
			gp := tp.Child("podCliqueScalingGroups").Index(i)
			errs = append(errs, immutableTopology(gp.Child("topologyConstraint"), o.TopologyConstraint, g.TopologyConstraint)...)
			errs = append(errs, immutable(gp.Child("resourceSharing"), o.ResourceSharing, g.ResourceSharing)...)
		}
	}
	return errs
}
