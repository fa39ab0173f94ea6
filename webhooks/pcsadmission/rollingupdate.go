package pcsadmission

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// strategyOf is the PodCliqueSet's update strategy, RollingRecreate when unset.
func strategyOf(pcs *grovev1alpha1.PodCliqueSet) grovev1alpha1.UpdateStrategyType {
	if s := pcs.Spec.UpdateStrategy; s != nil && s.Type != "" {
		return s.Type
	}
	return grovev1alpha1.RollingRecreateStrategy
}

// groupMembers names the cliques that belong to a scaling group.
func groupMembers(pcs *grovev1alpha1.PodCliqueSet) map[string]bool {
	members := map[string]bool{}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		for _, name := range g.CliqueNames {
			members[name] = true
		}
	}
	return members
}

// defaultRollingUpdate gives every standalone clique and every scaling group upstream Grove's
// budget under RollingRecreate, maxUnavailable 1. Under OnDelete a budget equal to that default
// is what defaulting wrote before the strategy changed, and is cleared; any other is the user's,
// kept, and refused by validation.
func defaultRollingUpdate(pcs *grovev1alpha1.PodCliqueSet) {
	strategy := strategyOf(pcs)
	apply := func(ru **grovev1alpha1.RollingUpdateConfiguration) {
		switch {
		case strategy == grovev1alpha1.RollingRecreateStrategy && *ru == nil:
			*ru = &grovev1alpha1.RollingUpdateConfiguration{MaxUnavailable: ptr.To[int32](1)}
		case strategy == grovev1alpha1.RollingRecreateStrategy && (*ru).MaxUnavailable == nil:
			(*ru).MaxUnavailable = ptr.To[int32](1)
		case strategy == grovev1alpha1.OnDeleteStrategy && *ru != nil && (*ru).ProgressDeadline == nil && ptr.Deref((*ru).MaxUnavailable, 1) == 1:
			*ru = nil
		}
	}
	members := groupMembers(pcs)
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && !members[c.Name] {
			apply(&c.RollingUpdate)
		}
	}
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		apply(&pcs.Spec.Template.PodCliqueScalingGroupConfigs[i].RollingUpdate)
	}
}

// validateRollingUpdate refuses a budget on a scaling group's member clique (the group's budget
// covers it), any budget under OnDelete, and maxUnavailable below 1.
func validateRollingUpdate(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	onDelete := strategyOf(pcs) == grovev1alpha1.OnDeleteStrategy
	check := func(p *field.Path, ru *grovev1alpha1.RollingUpdateConfiguration) {
		if ru == nil {
			return
		}
		if onDelete {
			errs = append(errs, field.Forbidden(p, "must not be set when spec.updateStrategy.type is OnDelete: pods are replaced only when they are deleted"))
			return
		}
		if m := ru.MaxUnavailable; m != nil && *m < 1 {
			errs = append(errs, field.Invalid(p.Child("maxUnavailable"), *m, "must be greater than 0"))
		}
		if d := ru.ProgressDeadline; d != nil && d.Duration <= 0 {
			errs = append(errs, field.Invalid(p.Child("progressDeadline"), d.Duration.String(), "must be greater than 0"))
		}
	}
	members := groupMembers(pcs)
	tp := field.NewPath("spec", "template")
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		p := tp.Child("cliques").Index(i).Child("rollingUpdate")
		if members[c.Name] && c.RollingUpdate != nil {
			errs = append(errs, field.Forbidden(p, "must not be set on a clique that is a member of a podCliqueScalingGroup: the group's rollingUpdate is the budget of its cliques"))
			continue
		}
		check(p, c.RollingUpdate)
	}
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		check(tp.Child("podCliqueScalingGroups").Index(i).Child("rollingUpdate"), pcs.Spec.Template.PodCliqueScalingGroupConfigs[i].RollingUpdate)
	}
	return errs
}
