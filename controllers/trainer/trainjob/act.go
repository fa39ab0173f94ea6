package trainjob

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
	"github.com/kubegrove/grove/internal/reconcile/terminating"
)

// act carries out what the written status records. Every action is idempotent: a pass that
// crashed after its status write does it again.
func (r *Reconciler) act(ctx context.Context, tj *trainerv1alpha1.TrainJob, o *observation, a action) error {
	err := r.actOn(ctx, tj, o, a)
	if terminating.Refused(err) {
		// Final: the namespace and the TrainJob with it are going.
		log.FromContext(ctx).V(1).Info("namespace is being deleted: nothing created")
		return nil
	}
	return err
}

func (r *Reconciler) actOn(ctx context.Context, tj *trainerv1alpha1.TrainJob, o *observation, a action) error {
	switch a {
	case actRun, actSuspend:
		if terminating.Namespace(ctx, r.Client, tj.Namespace) {
			return nil // the namespace controller is removing the TrainJob and its children
		}
		// The runtime is recorded before any child is built from it.
		if !o.snapshotted {
			if err := r.saveSnapshot(ctx, tj, o.rt); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
		if a == actRun {
			return r.ensureWorkload(ctx, tj, o.rt, o.wl, o.child)
		}
		return r.freePods(ctx, tj, o)
	case actTearDown:
		if o.child != nil && o.owned && o.child.GetDeletionTimestamp().IsZero() {
			return r.deleteChild(ctx, o.wl, o.child, "the TrainJob ran out of time")
		}
	case actRelease:
		return r.releaseChild(ctx, tj, o)
	case actNone:
	}
	return nil
}

// freePods frees every pod of a suspended TrainJob: a JobSet is suspended (and rebuilt from the
// TrainJob while it stays so), a PodCliqueSet is deleted and rebuilt on resume.
func (r *Reconciler) freePods(ctx context.Context, tj *trainerv1alpha1.TrainJob, o *observation) error {
	child, wl := o.child, o.wl
	if child == nil || !o.owned {
		return nil
	}
	if !wl.freesPodsBySuspending() {
		return r.deleteChild(ctx, wl, child, "the TrainJob is suspended")
	}
	if !wl.suspended(child) {
		patch := client.MergeFrom(child.DeepCopyObject().(client.Object))
		wl.markSuspended(child)
		if err := r.Client.Patch(ctx, child, patch); err != nil {
			return err
		}
		log.FromContext(ctx).Info("suspended the workload", "kind", wl.kind(), "object", klog.KObj(child))
		return nil
	}
	if child.GetAnnotations()[annotationBuiltFrom] != fmt.Sprint(tj.Generation) {
		if err := r.applyWorkload(ctx, tj, o.rt, wl, true, false); err != nil {
			return err
		}
		log.FromContext(ctx).Info("rebuilt the suspended workload from the TrainJob's new spec", "kind", wl.kind(), "object", klog.KObj(child),
			"builtFrom", child.GetAnnotations()[annotationBuiltFrom], "generation", tj.Generation)
	}
	return nil
}

// ensureWorkload creates the child when it is missing, and resumes a suspended JobSet (rebuilt
// first if the TrainJob changed while suspended). A running child is never rebuilt.
func (r *Reconciler) ensureWorkload(ctx context.Context, tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, wl workload, child client.Object) error {
	if child == nil {
		if err := r.applyWorkload(ctx, tj, rt, wl, false, true); err != nil {
			return err
		}
		log.FromContext(ctx).Info("created the workload", "kind", wl.kind(), "object", klog.KObj(tj), "runtime", tj.Spec.RuntimeRef.Name,
			"admittedByKueueAsAWhole", tj.AdmittedByKueue())
		r.Recorder.Eventf(tj, nil, corev1.EventTypeNormal, EventCreated, "Create", "created %s %s", wl.kind(), tj.Name)
		return nil
	}
	if !wl.suspended(child) {
		return nil
	}
	if child.GetAnnotations()[annotationBuiltFrom] != fmt.Sprint(tj.Generation) {
		// Rebuilt while still suspended: the JobSet accepts template changes only then.
		if err := r.applyWorkload(ctx, tj, rt, wl, true, false); err != nil {
			return err
		}
		log.FromContext(ctx).Info("rebuilt the suspended workload from the TrainJob's new spec before resuming it", "kind", wl.kind(), "object", klog.KObj(child),
			"builtFrom", child.GetAnnotations()[annotationBuiltFrom], "generation", tj.Generation)
	}
	if err := r.applyWorkload(ctx, tj, rt, wl, false, false); err != nil {
		return err
	}
	log.FromContext(ctx).Info("resumed the workload", "kind", wl.kind(), "object", klog.KObj(child))
	return nil
}

// applyWorkload declares the child and what it needs first, owned by the TrainJob. A new child
// is created rather than applied, so an unrelated object of the same name is never taken over.
func (r *Reconciler) applyWorkload(ctx context.Context, tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, wl workload, suspend, create bool) (err error) {
	opts := plan.Options{Coscheduling: r.Coscheduling}
	if r.StatusServer != nil {
		if opts.StatusServer, err = r.StatusServer(); err != nil {
			return fmt.Errorf("the trainer status server (server.trainerStatus): %w", err)
		}
	}
	child, extra, err := wl.build(tj, rt, suspend, opts)
	if err != nil {
		return err
	}
	for _, obj := range extra {
		if err := r.apply(ctx, tj, obj); err != nil {
			return err
		}
		// Applied with the workload every time it is built: the MPI key is only ever created.
		log.FromContext(ctx).Info("applied what the workload needs before it starts", "kind", fmt.Sprintf("%T", obj), "object", klog.KObj(obj))
	}
	annotations := child.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[annotationBuiltFrom] = fmt.Sprint(tj.Generation)
	child.SetAnnotations(annotations)
	if create {
		if err := controllerutil.SetControllerReference(tj, child, r.Client.Scheme()); err != nil {
			return err
		}
		return r.Client.Create(ctx, child, client.FieldOwner(FieldOwner))
	}
	return r.apply(ctx, tj, child)
}

// apply declares obj server-side. Secrets are only created: an MPI key is generated once and is
// immutable.
func (r *Reconciler) apply(ctx context.Context, tj *trainerv1alpha1.TrainJob, obj client.Object) error {
	if err := controllerutil.SetControllerReference(tj, obj, r.Client.Scheme()); err != nil {
		return err
	}
	if _, ok := obj.(*corev1.Secret); ok {
		return client.IgnoreAlreadyExists(r.Client.Create(ctx, obj))
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	delete(u, "status")
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	return r.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(&unstructured.Unstructured{Object: u}),
		client.FieldOwner(FieldOwner), client.ForceOwnership)
}

func (r *Reconciler) getChild(ctx context.Context, tj *trainerv1alpha1.TrainJob, wl workload) (client.Object, bool, error) {
	child := wl.newChild()
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: tj.Namespace, Name: tj.Name}, child)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	return child, err == nil, err
}

// deleteChild deletes the workload (and with it every pod), saying why.
func (r *Reconciler) deleteChild(ctx context.Context, wl workload, child client.Object, why string) error {
	err := r.Client.Delete(ctx, child, client.Preconditions{UID: ptr.To(child.GetUID())}, client.PropagationPolicy(wl.propagation()))
	if err == nil {
		log.FromContext(ctx).Info("deleted the workload: its pods go with it", "kind", wl.kind(), "object", klog.KObj(child), "reason", why, "propagation", wl.propagation())
	}
	return client.IgnoreNotFound(err)
}

// releaseChild deletes again, in the background, a workload marked for deletion in the
// foreground: the API server drops its foregroundDeletion finalizer and it goes at once; the
// garbage collector removes its dependents as those of an owner that is gone.
func (r *Reconciler) releaseChild(ctx context.Context, tj *trainerv1alpha1.TrainJob, o *observation) error {
	child := o.child
	err := r.Client.Delete(ctx, child, client.Preconditions{UID: ptr.To(child.GetUID())}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	waited := r.Clock.Since(child.GetDeletionTimestamp().Time).Round(time.Second)
	log.FromContext(ctx).Info("the workload still waited for its dependents to go: deleted it again in the background", "kind", o.wl.kind(), "object", klog.KObj(child),
		"markedForDeletionFor", waited.String())
	r.Recorder.Eventf(tj, child, corev1.EventTypeWarning, EventDeletionStalled, "Delete", "%s %s waited %s in the foreground for its dependents to go: deleted again in the background",
		o.wl.kind(), child.GetName(), waited)
	return nil
}
