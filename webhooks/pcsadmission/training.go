package pcsadmission

import (
	"reflect"

	"k8s.io/apimachinery/pkg/util/validation/field"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// validateTrainingCreate forbids autoscaling a Training workload: its size is part of the job.
func validateTrainingCreate(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	if pcs.Spec.WorkloadType != grovev1alpha1.WorkloadTypeTraining {
		return nil
	}
	tp := field.NewPath("spec", "template")
	for i, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.Spec.ScaleConfig != nil {
			errs = append(errs, field.Forbidden(tp.Child("cliques").Index(i).Child("spec", "autoScalingConfig"), "a Training workload cannot be autoscaled"))
		}
	}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if g.ScaleConfig != nil {
			errs = append(errs, field.Forbidden(tp.Child("podCliqueScalingGroups").Index(i).Child("scaleConfig"), "a Training workload cannot be autoscaled"))
		}
	}
	return errs
}

// validateTrainingUpdate forbids what would restart or resize a running Training job: pod
// template changes (they would roll pods) and replica changes at any level. The path to change a
// job is to delete and recreate it (or suspend its TrainJob).
func validateTrainingUpdate(old, pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	if pcs.Spec.WorkloadType != grovev1alpha1.WorkloadTypeTraining {
		return nil
	}
	const why = "cannot change on a Training workload: it would restart or resize the running job"
	if old.Spec.Replicas != pcs.Spec.Replicas {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "replicas"), why))
	}
	tp := field.NewPath("spec", "template")
	oldCliques := map[string]*grovev1alpha1.PodCliqueTemplateSpec{}
	for _, c := range old.Spec.Template.Cliques {
		if c != nil {
			oldCliques[c.Name] = c
		}
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil || oldCliques[c.Name] == nil {
			continue
		}
		o := oldCliques[c.Name]
		p := tp.Child("cliques").Index(i)
		if o.Spec.Replicas != c.Spec.Replicas {
			errs = append(errs, field.Forbidden(p.Child("spec", "replicas"), why))
		}
		if !reflect.DeepEqual(o.Spec.PodSpec, c.Spec.PodSpec) || !reflect.DeepEqual(o.Labels, c.Labels) || !reflect.DeepEqual(o.Annotations, c.Annotations) {
			errs = append(errs, field.Forbidden(p.Child("spec", "podSpec"), why))
		}
	}
	oldGroups := map[string]grovev1alpha1.PodCliqueScalingGroupConfig{}
	for _, g := range old.Spec.Template.PodCliqueScalingGroupConfigs {
		oldGroups[g.Name] = g
	}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if o, ok := oldGroups[g.Name]; ok && !reflect.DeepEqual(o.Replicas, g.Replicas) {
			errs = append(errs, field.Forbidden(tp.Child("podCliqueScalingGroups").Index(i).Child("replicas"), why))
		}
	}
	return errs
}
