package trainjobadmission

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// ShortTTL is the ttlSecondsAfterFinished below which admission warns: a user has little time to
// read a finished job's status and logs.
const ShortTTL = 60

// runtimeObject is a TrainingRuntime or a ClusterTrainingRuntime.
type runtimeObject interface {
	client.Object
	*trainerv1alpha1.TrainingRuntime | *trainerv1alpha1.ClusterTrainingRuntime
}

type runtimeValidator[T runtimeObject] struct{}

func specOf(obj any) (*trainerv1alpha1.TrainingRuntimeSpec, string) {
	switch r := obj.(type) {
	case *trainerv1alpha1.TrainingRuntime:
		return &r.Spec, trainerv1alpha1.TrainingRuntimeKind
	case *trainerv1alpha1.ClusterTrainingRuntime:
		return &r.Spec, trainerv1alpha1.ClusterTrainingRuntimeKind
	}
	return nil, ""
}

func (runtimeValidator[T]) ValidateCreate(_ context.Context, obj T) (admission.Warnings, error) {
	return validateRuntime(obj)
}

func (runtimeValidator[T]) ValidateUpdate(_ context.Context, _, obj T) (admission.Warnings, error) {
	return validateRuntime(obj)
}

func (runtimeValidator[T]) ValidateDelete(context.Context, T) (admission.Warnings, error) {
	return nil, nil
}

func validateRuntime(obj client.Object) (admission.Warnings, error) {
	spec, kind := specOf(obj)
	errs, warnings := ValidateRuntimeSpec(spec)
	return warnings, invalid(kind, obj.GetName(), errs)
}

// ValidateRuntimeSpec applies KEP-2899: the TrainJob's deadline and the runtime's TTL are the
// only lifetime controls, so the JobSet and Job templates must not carry their own; a short TTL
// is allowed with a warning.
func ValidateRuntimeSpec(spec *trainerv1alpha1.TrainingRuntimeSpec) (field.ErrorList, admission.Warnings) {
	var errs field.ErrorList
	var warnings admission.Warnings
	if ttl := spec.TTLSecondsAfterFinished; ttl != nil && *ttl < ShortTTL {
		warnings = append(warnings, fmt.Sprintf("spec.ttlSecondsAfterFinished is %ds: finished TrainJobs are deleted before most users can read their status", *ttl))
	}
	js := field.NewPath("spec", "template", "spec")
	if spec.Template.Spec.TTLSecondsAfterFinished != nil {
		errs = append(errs, field.Forbidden(js.Child("ttlSecondsAfterFinished"), "use the runtime's spec.ttlSecondsAfterFinished"))
	}
	for i, rj := range spec.Template.Spec.ReplicatedJobs {
		job := js.Child("replicatedJobs").Index(i).Child("template", "spec")
		if rj.Template.Spec.ActiveDeadlineSeconds != nil {
			errs = append(errs, field.Forbidden(job.Child("activeDeadlineSeconds"), "use the TrainJob's spec.activeDeadlineSeconds"))
		}
		if rj.Template.Spec.TTLSecondsAfterFinished != nil {
			errs = append(errs, field.Forbidden(job.Child("ttlSecondsAfterFinished"), "use the runtime's spec.ttlSecondsAfterFinished"))
		}
		// The trainer-controller lists every pod of a job (the MPI hostfile, one PodClique's
		// replicas), so a template asking for 2^31-1 would exhaust its memory.
		if pods := int64(max(rj.Replicas, 1)) * int64(max(ptr.Deref(rj.Template.Spec.Parallelism, 1), 1)); pods > grovev1alpha1.MaxReplicas {
			errs = append(errs, field.Invalid(js.Child("replicatedJobs").Index(i), pods,
				fmt.Sprintf("replicas × template.spec.parallelism must be at most %d pods", grovev1alpha1.MaxReplicas)))
		}
	}
	if p := spec.MLPolicy; p != nil && p.NumNodes != nil && *p.NumNodes < 1 {
		errs = append(errs, field.Invalid(field.NewPath("spec", "mlPolicy", "numNodes"), *p.NumNodes, "must be at least 1"))
	}
	errs = append(errs, validateRuntimeFramework(spec)...)
	errs = append(errs, validatePodCliqueSetPath(spec)...)
	errs = append(errs, validateVolcanoRuntime(spec)...)
	return errs, warnings
}
