package trainjobadmission

import (
	"context"
	"fmt"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/volcanoqueue"
)

// validateVolcanoRuntime refuses, on the PodCliqueSet path, a Volcano network topology: the
// volcano scheduler backend places gangs without Volcano's HyperNode tiers.
func validateVolcanoRuntime(spec *trainerv1alpha1.TrainingRuntimeSpec) field.ErrorList {
	pgp := spec.PodGroupPolicy
	if pgp == nil || pgp.Volcano == nil || pgp.Volcano.NetworkTopology == nil || spec.WorkloadKind != trainerv1alpha1.WorkloadKindPodCliqueSet {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "podGroupPolicy", "volcano", "networkTopology"),
		"the PodCliqueSet path's volcano backend does not place gangs by Volcano network topology; use workloadKind JobSet")}
}

// volcanoQueue is the queue a TrainJob's Volcano PodGroup names, as Kubeflow Trainer v2.3 reads
// it: the runtime template's scheduling.volcano.sh/queue-name annotation, overridden by the
// TrainJob's runtime patches in order; where it was set; and whether it was set at all.
func volcanoQueue(tj *trainerv1alpha1.TrainJob, spec *trainerv1alpha1.TrainingRuntimeSpec) (string, *field.Path, bool) {
	queue, set := spec.Template.Annotations[volcanov1beta1.QueueNameAnnotationKey]
	path := field.NewPath("spec", "runtimeRef")
	for i, p := range tj.Spec.RuntimePatches {
		if p.TrainingRuntimeSpec == nil || p.TrainingRuntimeSpec.Template == nil || p.TrainingRuntimeSpec.Template.Metadata == nil {
			continue
		}
		if q, ok := p.TrainingRuntimeSpec.Template.Metadata.Annotations[volcanov1beta1.QueueNameAnnotationKey]; ok {
			queue, set = q, true
			path = field.NewPath("spec", "runtimePatches").Index(i).Child("trainingRuntimeSpec", "template", "metadata", "annotations").Key(volcanov1beta1.QueueNameAnnotationKey)
		}
	}
	return queue, path, set
}

// validateVolcano checks a TrainJob whose runtime gang-schedules with Volcano: on the
// PodCliqueSet path the volcano scheduler backend must be enabled; the queue named (or Volcano's
// default queue) must be a valid name, exist and be open; the priority class of the pod
// templates must exist (Kubeflow Trainer v2.3 refuses a missing one). Errors name the TrainJob
// field the value comes from: its runtime patch, else spec.runtimeRef (the runtime's template).
// An error return is a failed read, not a refusal: an internal error (500).
func (v *TrainJobValidator) validateVolcano(ctx context.Context, tj *trainerv1alpha1.TrainJob, spec *trainerv1alpha1.TrainingRuntimeSpec) (field.ErrorList, error) {
	if spec.PodGroupPolicy == nil || spec.PodGroupPolicy.Volcano == nil {
		return nil, nil
	}
	var errs field.ErrorList
	ref := field.NewPath("spec", "runtimeRef")
	runtime := fmt.Sprintf("runtime %q", tj.Spec.RuntimeRef.Name)
	if spec.WorkloadKind == trainerv1alpha1.WorkloadKindPodCliqueSet && !v.VolcanoBackend {
		errs = append(errs, field.Invalid(ref.Child("name"), tj.Spec.RuntimeRef.Name,
			runtime+" gang-schedules with Volcano on the PodCliqueSet path, and the volcano scheduler backend is not enabled (add a scheduler.profiles entry named volcano to the operator configuration)"))
	}
	queue, path, set := volcanoQueue(tj, spec)
	from := ""
	if path.String() == ref.String() {
		from = runtime + "'s spec.template.metadata.annotations[" + volcanov1beta1.QueueNameAnnotationKey + "]: "
		path = ref.Child("name")
	}
	switch {
	case set && queue == "":
		return append(errs, field.Invalid(path, queue, from+"the Volcano queue name must not be empty")), nil
	case !set:
		queue = volcanoqueue.Default
	}
	for _, msg := range validation.IsDNS1123Subdomain(queue) {
		errs = append(errs, field.Invalid(path, queue, from+msg))
	}
	if len(errs) > 0 || v.Cluster == nil {
		return errs, nil
	}
	state, problem, err := volcanoqueue.Check(ctx, v.Cluster, queue)
	switch {
	case err != nil:
		return nil, apierrors.NewInternalError(err)
	case state == volcanoqueue.NotServed:
		// Not the queue's fault: name the runtime, whose podGroupPolicy asks for Volcano.
		errs = append(errs, field.Invalid(ref.Child("name"), tj.Spec.RuntimeRef.Name,
			runtime+" gang-schedules with Volcano (spec.podGroupPolicy.volcano), and Volcano is not installed: scheduling.volcano.sh/v1beta1 Queue is not served"))
	case state != volcanoqueue.Usable:
		errs = append(errs, field.Invalid(path, queue, from+problem))
	}
	for i, rj := range spec.Template.Spec.ReplicatedJobs {
		pc := rj.Template.Spec.Template.Spec.PriorityClassName
		if pc == "" || pc == "system-cluster-critical" || pc == "system-node-critical" {
			continue
		}
		switch err := v.Cluster.Get(ctx, client.ObjectKey{Name: pc}, &schedulingv1.PriorityClass{}); {
		case apierrors.IsNotFound(err):
			errs = append(errs, field.Invalid(ref.Child("name"), tj.Spec.RuntimeRef.Name,
				fmt.Sprintf("%s's spec.template.spec.replicatedJobs[%d].template.spec.template.spec.priorityClassName: PriorityClass %q does not exist, and Volcano's PodGroup takes it", runtime, i, pc)))
		case err != nil:
			return nil, apierrors.NewInternalError(fmt.Errorf("reading PriorityClass %q: %w", pc, err))
		}
	}
	return errs, nil
}
