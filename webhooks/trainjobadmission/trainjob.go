// Package trainjobadmission is grove-webhook's admission for TrainJobs and training runtimes: the
// Kubeflow Trainer rules and KEP-2899's deadline and TTL rules that CEL cannot express.
package trainjobadmission

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// +kubebuilder:webhook:path=/validate-trainer-kubeflow-org-v1alpha1-trainjob,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=10,groups=trainer.kubeflow.org,resources=trainjobs,verbs=create;update,versions=v1alpha1,name=vtrainjob.trainer.kubeflow.org,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-trainer-kubeflow-org-v1alpha1-trainingruntime,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=10,groups=trainer.kubeflow.org,resources=trainingruntimes,verbs=create;update,versions=v1alpha1,name=vtrainingruntime.trainer.kubeflow.org,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-trainer-kubeflow-org-v1alpha1-clustertrainingruntime,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=10,groups=trainer.kubeflow.org,resources=clustertrainingruntimes,verbs=create;update,versions=v1alpha1,name=vclustertrainingruntime.trainer.kubeflow.org,admissionReviewVersions=v1

// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainingruntimes;clustertrainingruntimes,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get

// SetupWithManager serves the TrainJob and runtime validating webhooks.
func SetupWithManager(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
	v := &TrainJobValidator{Client: mgr.GetClient(), Cluster: mgr.GetAPIReader(), VolcanoBackend: cfg.Scheduler.IsEnabled(configv1alpha1.SchedulerNameVolcano),
		Coscheduling: cfg.Scheduler.SchedulerPlugins()}
	if err := ctrl.NewWebhookManagedBy(mgr, &trainerv1alpha1.TrainJob{}).WithValidator(v).Complete(); err != nil {
		return err
	}
	if err := ctrl.NewWebhookManagedBy(mgr, &trainerv1alpha1.TrainingRuntime{}).WithValidator(runtimeValidator[*trainerv1alpha1.TrainingRuntime]{}).Complete(); err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &trainerv1alpha1.ClusterTrainingRuntime{}).WithValidator(runtimeValidator[*trainerv1alpha1.ClusterTrainingRuntime]{}).Complete()
}

// TrainJobValidator validates TrainJobs.
type TrainJobValidator struct {
	// Client reads runtimes (from the cache; one missing there is read through Cluster).
	Client client.Client
	// Cluster reads what a runtime's gang scheduler needs to exist (Volcano queues, priority
	// classes) and a runtime the cache does not hold yet, read through so that objects applied
	// just before the TrainJob are seen; nil skips those checks.
	Cluster client.Reader
	// VolcanoBackend is whether the volcano scheduler backend is enabled, which a Volcano
	// runtime on the PodCliqueSet path needs.
	VolcanoBackend bool
	// Coscheduling is the scheduler-plugins backend's configuration when it is enabled, which a
	// coscheduling runtime on the PodCliqueSet path needs.
	Coscheduling *configv1alpha1.SchedulerPluginsConfig
}

// ValidateCreate checks a new TrainJob; a runtime that does not exist yet only warns, since the
// TrainJob waits for it.
func (v *TrainJobValidator) ValidateCreate(ctx context.Context, tj *trainerv1alpha1.TrainJob) (admission.Warnings, error) {
	errs := ValidateTrainJob(tj)
	spec, warnings, err := v.checkRuntime(ctx, tj)
	if err != nil {
		return warnings, err
	}
	if spec != nil {
		errs = append(errs, validateAgainstFramework(tj, spec)...)
		errs = append(errs, v.validateCoscheduling(tj, spec)...)
		volcanoErrs, err := v.validateVolcano(ctx, tj, spec)
		if err != nil {
			return warnings, err
		}
		errs = append(errs, volcanoErrs...)
	}
	return warnings, logRejection(ctx, tj, invalid(trainerv1alpha1.TrainJobKind, tj.Name, errs))
}

// validateCoscheduling checks a TrainJob whose runtime gang-schedules with coscheduling on the
// PodCliqueSet path: its gangs go to the scheduler-plugins backend, which must be enabled, and
// their PodGroups wait as long as that backend's profile says, so the runtime must not ask for
// another timeout (both default to the coscheduling plugin's 60 s).
func (v *TrainJobValidator) validateCoscheduling(tj *trainerv1alpha1.TrainJob, spec *trainerv1alpha1.TrainingRuntimeSpec) field.ErrorList {
	pgp := spec.PodGroupPolicy
	if pgp == nil || pgp.Coscheduling == nil || spec.WorkloadKind != trainerv1alpha1.WorkloadKindPodCliqueSet {
		return nil
	}
	ref := field.NewPath("spec", "runtimeRef", "name")
	runtime := fmt.Sprintf("runtime %q", tj.Spec.RuntimeRef.Name)
	if v.Coscheduling == nil {
		return field.ErrorList{field.Invalid(ref, tj.Spec.RuntimeRef.Name,
			runtime+" gang-schedules with coscheduling on the PodCliqueSet path, and the scheduler-plugins scheduler backend is not enabled (add a scheduler.profiles entry named scheduler-plugins to the operator configuration)")}
	}
	const pluginDefault = 60
	want := int32(pluginDefault)
	if t := v.Coscheduling.ScheduleTimeoutSeconds; t != nil {
		want = *t
	}
	if t := pgp.Coscheduling.ScheduleTimeoutSeconds; t != nil && *t != want {
		return field.ErrorList{field.Invalid(ref, tj.Spec.RuntimeRef.Name, fmt.Sprintf(
			"%s's spec.podGroupPolicy.coscheduling.scheduleTimeoutSeconds is %d, and the PodCliqueSet path's gangs wait %d s, the scheduler-plugins profile's scheduleTimeoutSeconds; make them equal or use workloadKind JobSet", runtime, *t, want))}
	}
	return nil
}

// logRejection notes a refused TrainJob at V(1).
func logRejection(ctx context.Context, tj *trainerv1alpha1.TrainJob, err error) error {
	if err != nil {
		log.FromContext(ctx).V(1).Info("refused TrainJob", "trainJob", client.ObjectKeyFromObject(tj), "error", err.Error())
	}
	return err
}

// ValidateUpdate also allows runtimePatches to change only while the TrainJob is suspended.
func (v *TrainJobValidator) ValidateUpdate(ctx context.Context, old, tj *trainerv1alpha1.TrainJob) (admission.Warnings, error) {
	errs := ValidateTrainJob(tj)
	suspended := func(t *trainerv1alpha1.TrainJob) bool { return t.Spec.Suspend != nil && *t.Spec.Suspend }
	if !reflect.DeepEqual(old.Spec.RuntimePatches, tj.Spec.RuntimePatches) && !suspended(old) && !suspended(tj) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "runtimePatches"), "may only change while the TrainJob is suspended"))
	}
	if len(errs) == 0 && !reflect.DeepEqual(old.Spec.RuntimePatches, tj.Spec.RuntimePatches) {
		// A patch may name another Volcano queue.
		spec, _, err := v.checkRuntime(ctx, tj)
		if err != nil {
			return nil, err
		}
		if spec != nil {
			volcanoErrs, err := v.validateVolcano(ctx, tj, spec)
			if err != nil {
				return nil, err
			}
			errs = append(errs, volcanoErrs...)
		}
	}
	return nil, logRejection(ctx, tj, invalid(trainerv1alpha1.TrainJobKind, tj.Name, errs))
}

// ValidateDelete allows every deletion.
func (v *TrainJobValidator) ValidateDelete(context.Context, *trainerv1alpha1.TrainJob) (admission.Warnings, error) {
	return nil, nil
}

// ValidateTrainJob checks the fields of a TrainJob on their own.
func ValidateTrainJob(tj *trainerv1alpha1.TrainJob) field.ErrorList {
	errs := validateMultiKueue(tj)
	ref := field.NewPath("spec", "runtimeRef")
	if g := tj.Spec.RuntimeRef.APIGroup; g != nil && *g != trainerv1alpha1.GroupVersion.Group {
		errs = append(errs, field.NotSupported(ref.Child("apiGroup"), *g, []string{trainerv1alpha1.GroupVersion.Group}))
	}
	if k := tj.Spec.RuntimeRef.Kind; k != nil && *k != trainerv1alpha1.TrainingRuntimeKind && *k != trainerv1alpha1.ClusterTrainingRuntimeKind {
		errs = append(errs, field.NotSupported(ref.Child("kind"), *k, []string{trainerv1alpha1.TrainingRuntimeKind, trainerv1alpha1.ClusterTrainingRuntimeKind}))
	}
	if tr := tj.Spec.Trainer; tr != nil {
		p := field.NewPath("spec", "trainer")
		if tr.NumNodes != nil && *tr.NumNodes < 1 {
			errs = append(errs, field.Invalid(p.Child("numNodes"), *tr.NumNodes, "must be at least 1"))
		}
		if tr.NumProcPerNode != nil && *tr.NumProcPerNode < 1 {
			errs = append(errs, field.Invalid(p.Child("numProcPerNode"), *tr.NumProcPerNode, "must be at least 1"))
		}
	}
	return errs
}

// checkRuntime returns the referenced runtime's spec, or warns when it does not exist (yet).
func (v *TrainJobValidator) checkRuntime(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*trainerv1alpha1.TrainingRuntimeSpec, admission.Warnings, error) {
	kind := trainerv1alpha1.ClusterTrainingRuntimeKind
	if tj.Spec.RuntimeRef.Kind != nil {
		kind = *tj.Spec.RuntimeRef.Kind
	}
	var obj client.Object
	key := client.ObjectKey{Name: tj.Spec.RuntimeRef.Name}
	switch kind {
	case trainerv1alpha1.TrainingRuntimeKind:
		obj, key.Namespace = &trainerv1alpha1.TrainingRuntime{}, tj.Namespace
	case trainerv1alpha1.ClusterTrainingRuntimeKind:
		obj = &trainerv1alpha1.ClusterTrainingRuntime{}
	default:
		return nil, nil, nil // reported by ValidateTrainJob
	}
	err := v.Client.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) && v.Cluster != nil {
		// A runtime applied a moment before its TrainJob (one file, one apply) may not be in the
		// cache yet: read it through, or its checks would be skipped with a warning.
		err = v.Cluster.Get(ctx, key, obj)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, admission.Warnings{fmt.Sprintf("spec.runtimeRef: %s %q does not exist yet; the TrainJob waits until it does", kind, key.Name)}, nil
	case err != nil:
		// A failed read, not a verdict: an internal error (500).
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("reading %s %q: %w", kind, key.Name, err))
	}
	spec, _ := specOf(obj)
	return spec, nil, nil
}

func invalid(kind, name string, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(trainerv1alpha1.GroupVersion.WithKind(kind).GroupKind(), name, errs)
}

// validateMultiKueue refuses what MultiKueue would drop on its way to a worker cluster: Kueue
// v0.19.2 copies a TrainJob it dispatches through Kubeflow Trainer v2.2.1's types, which lack a
// runtime patch's pod terminationGracePeriodSeconds (new in v2.3), so the copy that runs would
// silently lose it (docs/kueue.md, Multi-cluster).
func validateMultiKueue(tj *trainerv1alpha1.TrainJob) field.ErrorList {
	if ptr.Deref(tj.Spec.ManagedBy, "") != trainerv1alpha1.MultiKueueManagedBy {
		return nil
	}
	var errs field.ErrorList
	for i, p := range tj.Spec.RuntimePatches {
		rs := p.TrainingRuntimeSpec
		if rs == nil || rs.Template == nil || rs.Template.Spec == nil {
			continue
		}
		for j, rj := range rs.Template.Spec.ReplicatedJobs {
			if rj.Template == nil || rj.Template.Spec == nil || rj.Template.Spec.Template == nil || rj.Template.Spec.Template.Spec == nil ||
				rj.Template.Spec.Template.Spec.TerminationGracePeriodSeconds == nil {
				continue
			}
			path := field.NewPath("spec", "runtimePatches").Index(i).Child("trainingRuntimeSpec", "template", "spec", "replicatedJobs").Index(j).
				Child("template", "spec", "template", "spec", "terminationGracePeriodSeconds")
			errs = append(errs, field.Forbidden(path, "MultiKueue dispatches this TrainJob to a worker cluster through Kubeflow Trainer v2.2's API (Kueue v0.19.2), which has no such field: the copy that runs would lose it; set it in the runtime instead"))
		}
	}
	return errs
}
