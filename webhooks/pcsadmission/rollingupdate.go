package pcsadmission

import (
	"fmt"

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
// budget: maxUnavailable 1 under RollingRecreate, the component's minAvailable under Coherent (a
// step replaces minAvailable of it at once). Under OnDelete a budget equal to the RollingRecreate
// default is what defaulting wrote before the strategy changed, and is cleared; any other is the
// user's, kept, and refused by validation. Likewise, when an update (old is the stored object,
// nil on create) turns the strategy to Coherent, a budget still at the RollingRecreate default
// is raised to minAvailable instead of being refused.
func defaultRollingUpdate(pcs, old *grovev1alpha1.PodCliqueSet) {
	strategy := strategyOf(pcs)
	turnedCoherent := strategy == grovev1alpha1.CoherentStrategy && old != nil && strategyOf(old) != grovev1alpha1.CoherentStrategy
	apply := func(ru **grovev1alpha1.RollingUpdateConfiguration, minAvailable int32) {
		switch {
		case strategy == grovev1alpha1.RollingRecreateStrategy && *ru == nil:
			*ru = &grovev1alpha1.RollingUpdateConfiguration{MaxUnavailable: ptr.To[int32](1)}
		case strategy == grovev1alpha1.RollingRecreateStrategy && (*ru).MaxUnavailable == nil:
			(*ru).MaxUnavailable = ptr.To[int32](1)
		case strategy == grovev1alpha1.CoherentStrategy && *ru == nil:
			*ru = &grovev1alpha1.RollingUpdateConfiguration{MaxUnavailable: ptr.To(minAvailable)}
		case strategy == grovev1alpha1.CoherentStrategy && (*ru).MaxUnavailable == nil:
			(*ru).MaxUnavailable = ptr.To(minAvailable)
		case turnedCoherent && isRollingRecreateDefault(*ru):
			(*ru).MaxUnavailable = ptr.To(max(minAvailable, 1))
		case strategy == grovev1alpha1.OnDeleteStrategy && isRollingRecreateDefault(*ru):
			*ru = nil
		}
	}
	members := groupMembers(pcs)
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && !members[c.Name] {
			apply(&c.RollingUpdate, ptr.Deref(c.Spec.MinAvailable, max(c.Spec.Replicas, 1)))
		}
	}
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		g := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]
		apply(&g.RollingUpdate, ptr.Deref(g.MinAvailable, 1))
	}
}

// isRollingRecreateDefault reports whether a budget is the one RollingRecreate defaulting writes.
func isRollingRecreateDefault(ru *grovev1alpha1.RollingUpdateConfiguration) bool {
	return ru != nil && ru.ProgressDeadline == nil && ptr.Deref(ru.MaxUnavailable, 1) == 1
}

// validateRollingUpdate refuses a budget on a scaling group's member clique (the group's budget
// covers it), any budget under OnDelete, and maxUnavailable below 1; under Coherent also a
// maxUnavailable below the component's minAvailable (a step takes minAvailable of it down at once)
// or above its replicas, as upstream Grove refuses them.
func validateRollingUpdate(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	strategy := strategyOf(pcs)
	check := func(p *field.Path, ru *grovev1alpha1.RollingUpdateConfiguration, minAvailable, replicas int32) {
		if ru == nil {
			return
		}
		if strategy == grovev1alpha1.OnDeleteStrategy {
			errs = append(errs, field.Forbidden(p, "must not be set when spec.updateStrategy.type is OnDelete: pods are replaced only when they are deleted"))
			return
		}
		if m := ru.MaxUnavailable; m != nil && *m < 1 {
			errs = append(errs, field.Invalid(p.Child("maxUnavailable"), *m, "must be greater than 0"))
		} else if m != nil && strategy == grovev1alpha1.CoherentStrategy {
			switch {
			case *m < minAvailable:
				errs = append(errs, field.Invalid(p.Child("maxUnavailable"), *m,
					fmt.Sprintf("must not be less than minAvailable (%d) under the Coherent update strategy", minAvailable)))
			case replicas > 0 && *m > replicas:
				errs = append(errs, field.Invalid(p.Child("maxUnavailable"), *m,
					fmt.Sprintf("must not be greater than replicas (%d) under the Coherent update strategy; lower or remove the budget before scaling down", replicas)))
			}
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
		check(p, c.RollingUpdate, ptr.Deref(c.Spec.MinAvailable, max(c.Spec.Replicas, 1)), c.Spec.Replicas)
	}
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		g := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]
		check(tp.Child("podCliqueScalingGroups").Index(i).Child("rollingUpdate"), g.RollingUpdate, ptr.Deref(g.MinAvailable, 1), ptr.Deref(g.Replicas, 1))
	}
	return errs
}

// validateStrategySwitch refuses turning a PodCliqueSet Coherent from OnDelete (pods of older
// templates may remain, by design, and Coherent would replace them all at once) or while a
// RollingRecreate update is still in progress (its replicas are at several templates). Switched
// at rest, its pods are adopted into the PodGangMap's gangs without a restart; switching away from
// Coherent replaces its pods once, within their budgets.
func validateStrategySwitch(old, pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	from, to := strategyOf(old), strategyOf(pcs)
	if from == to || to != grovev1alpha1.CoherentStrategy {
		return nil
	}
	p := field.NewPath("spec", "updateStrategy", "type")
	if from == grovev1alpha1.OnDeleteStrategy {
		return field.ErrorList{field.Forbidden(p, "cannot change from OnDelete to Coherent: pods of older templates may remain under OnDelete, and Coherent would replace them all at once; change to RollingRecreate first and let its update end")}
	}
	if up := old.Status.UpdateProgress; up != nil && up.UpdateEndedAt == nil {
		return field.ErrorList{field.Forbidden(p, "cannot change to Coherent while an update is in progress: wait for status.updateProgress.updateEndedAt")}
	}
	return nil
}
