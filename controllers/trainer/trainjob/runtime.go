package trainjob

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
)

// Snapshot names, as Kubeflow Trainer keeps them: a TrainJob runs on the runtime it started
// with, whatever happens to the runtime later.
const (
	snapshotSuffix = "-runtime-snapshot"
	snapshotKey    = "runtime"
)

// runtimeNotFoundError says which runtime a TrainJob waits for.
type runtimeNotFoundError struct{ kind, name string }

func (e *runtimeNotFoundError) Error() string {
	return fmt.Sprintf("%s %q does not exist; the TrainJob starts when it does", e.kind, e.name)
}

// notSupportedError is a runtime this controller cannot run; the TrainJob fails.
type notSupportedError struct{ msg string }

func (e *notSupportedError) Error() string { return e.msg }

// snapshotName is the ConfigMap that holds the runtime a TrainJob started with.
func snapshotName(tj *trainerv1alpha1.TrainJob) string { return tj.Name + snapshotSuffix }

// snapshotRecord is what the snapshot ConfigMap stores.
type snapshotRecord struct {
	Kind string                              `json:"kind"`
	Name string                              `json:"name"`
	Spec trainerv1alpha1.TrainingRuntimeSpec `json:"spec"`
}

// loadSnapshot returns the runtime a TrainJob started with, or nil before it started.
func (r *Reconciler) loadSnapshot(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*plan.Runtime, error) {
	cm := &corev1.ConfigMap{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: tj.Namespace, Name: snapshotName(tj)}, cm); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if owner := metav1.GetControllerOf(cm); owner == nil || owner.UID != tj.UID {
		return nil, fmt.Errorf("ConfigMap %s exists but belongs to another object", cm.Name)
	}
	var rec snapshotRecord
	if err := yaml.UnmarshalStrict([]byte(cm.Data[snapshotKey]), &rec); err != nil {
		return nil, fmt.Errorf("reading runtime snapshot %s: %w", cm.Name, err)
	}
	return &plan.Runtime{Kind: rec.Kind, Name: rec.Name, Spec: rec.Spec}, nil
}

// resolveRuntime reads the runtime a TrainJob names from the API.
func (r *Reconciler) resolveRuntime(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*plan.Runtime, error) {
	kind := ptr.Deref(tj.Spec.RuntimeRef.Kind, trainerv1alpha1.ClusterTrainingRuntimeKind)
	name := tj.Spec.RuntimeRef.Name
	var spec *trainerv1alpha1.TrainingRuntimeSpec
	var err error
	switch kind {
	case trainerv1alpha1.TrainingRuntimeKind:
		rt := &trainerv1alpha1.TrainingRuntime{}
		err, spec = r.Client.Get(ctx, client.ObjectKey{Namespace: tj.Namespace, Name: name}, rt), &rt.Spec
	case trainerv1alpha1.ClusterTrainingRuntimeKind:
		rt := &trainerv1alpha1.ClusterTrainingRuntime{}
		err, spec = r.Client.Get(ctx, client.ObjectKey{Name: name}, rt), &rt.Spec
	default:
		return nil, &notSupportedError{msg: fmt.Sprintf("spec.runtimeRef.kind: %q is not a training runtime", kind)}
	}
	if apierrors.IsNotFound(err) {
		return nil, &runtimeNotFoundError{kind: kind, name: name}
	}
	if err != nil {
		return nil, err
	}
	return &plan.Runtime{Kind: kind, Name: name, Spec: *spec.DeepCopy()}, nil
}

// saveSnapshot records the runtime before any child is built from it, so an edit or deletion of
// the runtime later changes nothing for this TrainJob. The ConfigMap is immutable and owned by the
// TrainJob.
func (r *Reconciler) saveSnapshot(ctx context.Context, tj *trainerv1alpha1.TrainJob, rt *plan.Runtime) error {
	data, err := yaml.Marshal(snapshotRecord{Kind: rt.Kind, Name: rt.Name, Spec: rt.Spec})
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: snapshotName(tj), Namespace: tj.Namespace,
			Labels: map[string]string{trainerv1alpha1.LabelTrainJobName: tj.Name}},
		Immutable: ptr.To(true),
		Data:      map[string]string{snapshotKey: string(data)},
	}
	if err := controllerutil.SetControllerReference(tj, cm, r.Client.Scheme()); err != nil {
		return err
	}
	if err := r.Client.Create(ctx, cm); err != nil {
		return err
	}
	log.FromContext(ctx).Info("recorded the runtime the TrainJob starts with: later edits of the runtime do not reach it",
		"snapshot", klog.KObj(cm), "runtimeKind", rt.Kind, "runtime", rt.Name)
	return nil
}
