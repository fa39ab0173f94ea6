package trainjobadmission

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// validateRuntimeFramework refuses what an ML policy cannot build: a Flux runtime whose node
// job already has an init container named flux-installer.
func validateRuntimeFramework(spec *trainerv1alpha1.TrainingRuntimeSpec) field.ErrorList {
	var errs field.ErrorList
	if spec.MLPolicy == nil || spec.MLPolicy.Flux == nil {
		return nil
	}
	jobs := field.NewPath("spec", "template", "spec", "replicatedJobs")
	for i, rj := range spec.Template.Spec.ReplicatedJobs {
		if rj.Name != trainerv1alpha1.NodeName {
			continue
		}
		for j, c := range rj.Template.Spec.Template.Spec.InitContainers {
			if c.Name == trainerv1alpha1.FluxInstallerContainer {
				errs = append(errs, field.Forbidden(jobs.Index(i).Child("template", "spec", "template", "spec", "initContainers").Index(j).Child("name"),
					"flux-installer is reserved for the init container that installs Flux"))
			}
		}
	}
	return errs
}

// validateAgainstFramework checks a TrainJob against its runtime's ML policy. JAX runs one
// process per node and XGBoost one worker per GPU of a node (one on a node without GPUs), so a
// numProcPerNode asking for another count could never hold; XGBoost's collective variables are
// the runtime's to set.
func validateAgainstFramework(tj *trainerv1alpha1.TrainJob, spec *trainerv1alpha1.TrainingRuntimeSpec) field.ErrorList {
	tr := tj.Spec.Trainer
	if tr == nil || spec.MLPolicy == nil {
		return nil
	}
	var errs field.ErrorList
	p := field.NewPath("spec", "trainer")
	switch mp := spec.MLPolicy; {
	case mp.JAX != nil:
		if tr.NumProcPerNode != nil && *tr.NumProcPerNode != 1 {
			errs = append(errs, field.Invalid(p.Child("numProcPerNode"), *tr.NumProcPerNode,
				"the JAX runtime runs one process per node (JAX_NUM_PROCESSES is numNodes); scale with numNodes"))
		}
	case mp.XGBoost != nil:
		res := trainerv1alpha1.NodeResources(&spec.Template.Spec)
		if tr.ResourcesPerNode != nil {
			res = *tr.ResourcesPerNode
		}
		workers := max(trainerv1alpha1.GPUsPerNode(res), 1)
		if tr.NumProcPerNode != nil && int(*tr.NumProcPerNode) != workers {
			errs = append(errs, field.Invalid(p.Child("numProcPerNode"), *tr.NumProcPerNode,
				fmt.Sprintf("the XGBoost runtime runs one worker per GPU of a node, one on a node without GPUs: %d here", workers)))
		}
		for i, e := range tr.Env {
			if slices.Contains(trainerv1alpha1.XGBoostReservedEnv, e.Name) {
				errs = append(errs, field.Forbidden(p.Child("env").Index(i).Child("name"), e.Name+" is set by the XGBoost runtime"))
			}
		}
	}
	return errs
}
