// Package trainjob is the trainer-controller: it turns each TrainJob into the workload its runtime
// names (a JobSet, as Kubeflow Trainer does, or a Training PodCliqueSet), maps the workload's
// outcome back, and enforces KEP-2899's activeDeadlineSeconds and ttlSecondsAfterFinished.
// Every timer is recomputed from the API on each reconcile; nothing lives only in memory.
package trainjob

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubegrove/grove/internal/conditionlog"

	"github.com/kubegrove/grove/controllers/trainer/plan"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// FieldOwner is the server-side apply field manager of everything the controller declares.
const FieldOwner = "trainer-controller"

// Event reasons, one per transition.
const (
	EventRuntimeNotFound     = "TrainingRuntimeNotFound"
	EventRuntimeNotSupported = "TrainingRuntimeNotSupported"
	EventCreated             = "Created"
	EventSuspended           = "Suspended"
	EventResumed             = "Resumed"
	EventCompleted           = "Completed"
	EventFailed              = "Failed"
	EventDeadlineExceeded    = "DeadlineExceeded"
	EventTTLExpired          = "TTLExpired"
	// ReasonBuildFailed says the TrainJob's workload cannot be built from its runtime as edited;
	// it is the reason of both the Running condition and the event.
	ReasonBuildFailed = "BuildFailed"
)

// Owner references that block deletion need update on the owner's finalizers (enforced where
// the OwnerReferencesPermissionEnforcement admission plugin is on).
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainingruntimes;clustertrainingruntimes,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles TrainJobs.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Clock is the controller's clock; tests move it.
	Clock clock.PassiveClock
}

// resumeRequeue is how soon the pass after a recorded resume comes (a status write of its own
// wakes no reconcile).
const resumeRequeue = 10 * time.Millisecond

// Reconcile moves one TrainJob one step: finished jobs only wait for their TTL, suspended ones
// free their pods, running ones get their workload and its outcome, all bounded by the deadline.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tj := &trainerv1alpha1.TrainJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, tj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !tj.DeletionTimestamp.IsZero() || !managedByUs(tj) {
		return ctrl.Result{}, nil
	}
	rt, err := r.loadSnapshot(ctx, tj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if finished(tj) != nil {
		return r.afterFinish(ctx, tj, rt)
	}
	if rt == nil {
		if rt, err = r.start(ctx, tj); rt == nil || err != nil {
			return ctrl.Result{}, err
		}
	}
	wl, err := workloadFor(rt)
	if err != nil {
		return ctrl.Result{}, r.notSupported(ctx, tj, err)
	}
	if isSuspended(tj) {
		return ctrl.Result{}, r.suspend(ctx, tj, rt, wl)
	}
	resumed, err := r.recordResume(ctx, tj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if resumed {
		// That was this pass's status write; the next pass brings the workload back.
		return ctrl.Result{RequeueAfter: resumeRequeue}, nil
	}
	if dl, ok := deadline(tj); ok && !r.Clock.Now().Before(dl) {
		return r.failPastDeadline(ctx, tj, rt, wl)
	}
	return r.run(ctx, tj, rt, wl)
}

// recordResume writes that a suspended TrainJob was resumed, before any pod comes back: its
// deadline counts from it. It reports whether it wrote.
func (r *Reconciler) recordResume(ctx context.Context, tj *trainerv1alpha1.TrainJob) (bool, error) {
	if c := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobSuspended); c == nil || c.Status != metav1.ConditionTrue {
		return false, nil
	}
	if err := r.writeStatus(ctx, tj, func(st *trainerv1alpha1.TrainJobStatus) {
		r.setCondition(st, trainerv1alpha1.TrainJobSuspended, metav1.ConditionFalse, trainerv1alpha1.TrainJobResumedReason, "the TrainJob was resumed")
	}); err != nil {
		return false, err
	}
	r.Recorder.Eventf(tj, nil, corev1.EventTypeNormal, EventResumed, "Resume", "resumed; the deadline counts from now")
	return true, nil
}

// run keeps the workload and reports it: it creates (or resumes) the child, reads its outcome,
// writes the status once, and on a finish waits for the TTL.
func (r *Reconciler) run(ctx context.Context, tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, wl workload) (ctrl.Result, error) {
	child, err := r.ensureWorkload(ctx, tj, rt, wl)
	if err != nil {
		return ctrl.Result{}, err
	}
	out, err := wl.observe(ctx, r.Client, child)
	if err != nil {
		return ctrl.Result{}, err
	}
	if out.done != nil && out.done.Reason == trainerv1alpha1.TrainJobDeadlineExceededReason {
		return r.failPastDeadline(ctx, tj, rt, wl)
	}
	p, err := plan.NewPlan(tj, rt)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeStatus(ctx, tj, func(st *trainerv1alpha1.TrainJobStatus) {
		st.JobsStatus = out.jobs
		st.NumNodes = p.NumNodes
		if out.done == nil {
			r.setCondition(st, trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, wl.kind()+"Created", fmt.Sprintf("%s %s runs the job", wl.kind(), tj.Name))
			return
		}
		r.setCondition(st, out.done.Type, metav1.ConditionTrue, out.done.Reason, out.done.Message)
		r.setCondition(st, trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, out.done.Type, "the job finished")
	}); err != nil {
		return ctrl.Result{}, err
	}
	if out.done != nil {
		r.recordFinish(tj, out.done)
		return r.afterFinish(ctx, tj, rt)
	}
	if dl, ok := deadline(tj); ok {
		return ctrl.Result{RequeueAfter: untilTime(dl, r.Clock.Now())}, nil
	}
	return ctrl.Result{}, nil
}

func managedByUs(tj *trainerv1alpha1.TrainJob) bool {
	return ptr.Deref(tj.Spec.ManagedBy, trainerv1alpha1.TrainJobControllerManagedBy) == trainerv1alpha1.TrainJobControllerManagedBy
}

// start resolves the runtime and snapshots it. It returns nil without error while the runtime is
// missing (the TrainJob says so and waits) or not supported (the TrainJob failed).
func (r *Reconciler) start(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*plan.Runtime, error) {
	rt, err := r.resolveRuntime(ctx, tj)
	var missing *runtimeNotFoundError
	switch {
	case errors.As(err, &missing):
		return nil, r.waitForRuntime(ctx, tj, missing)
	case err != nil:
		return nil, r.notSupported(ctx, tj, err)
	}
	// A runtime this controller cannot build fails the TrainJob before anything is recorded.
	wl, err := workloadFor(rt)
	if err == nil {
		_, _, err = wl.build(tj, rt, true)
	}
	switch {
	case isUnsupported(err):
		return nil, r.notSupported(ctx, tj, err)
	case err != nil:
		return nil, r.cannotBuild(ctx, tj, err)
	}
	if err := r.saveSnapshot(ctx, tj, rt); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	return rt, nil
}

func (r *Reconciler) waitForRuntime(ctx context.Context, tj *trainerv1alpha1.TrainJob, missing *runtimeNotFoundError) error {
	if c := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobRunning); c != nil && c.Reason == trainerv1alpha1.TrainJobRuntimeNotFoundReason {
		return nil
	}
	if err := r.writeStatus(ctx, tj, func(st *trainerv1alpha1.TrainJobStatus) {
		r.setCondition(st, trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, trainerv1alpha1.TrainJobRuntimeNotFoundReason, missing.Error())
	}); err != nil {
		return err
	}
	r.Recorder.Eventf(tj, nil, corev1.EventTypeWarning, EventRuntimeNotFound, "Resolve", missing.Error())
	return nil
}

// isUnsupported reports whether err says the runtime is one this controller cannot run.
func isUnsupported(err error) bool {
	var ns *notSupportedError
	var us *plan.UnsupportedError
	return errors.As(err, &ns) || errors.As(err, &us)
}

// cannotBuild reports a TrainJob its runtime cannot be built with (a runtime patch naming a job
// the runtime lacks): the TrainJob waits for an edit instead of retrying in a loop.
func (r *Reconciler) cannotBuild(ctx context.Context, tj *trainerv1alpha1.TrainJob, cause error) error {
	if c := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobRunning); c != nil && c.Reason == ReasonBuildFailed && c.Message == cause.Error() {
		return nil
	}
	if err := r.writeStatus(ctx, tj, func(st *trainerv1alpha1.TrainJobStatus) {
		r.setCondition(st, trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, ReasonBuildFailed, cause.Error())
	}); err != nil {
		return err
	}
	r.Recorder.Eventf(tj, nil, corev1.EventTypeWarning, ReasonBuildFailed, "Build", "%v", cause)
	return nil
}

// notSupported fails the TrainJob when its runtime cannot be built (or is not a transient error).
func (r *Reconciler) notSupported(ctx context.Context, tj *trainerv1alpha1.TrainJob, cause error) error {
	if !isUnsupported(cause) {
		return cause
	}
	done := &metav1.Condition{Type: trainerv1alpha1.TrainJobFailed, Status: metav1.ConditionTrue,
		Reason: trainerv1alpha1.TrainJobRuntimeNotSupportedReason, Message: cause.Error()}
	if err := r.writeStatus(ctx, tj, func(st *trainerv1alpha1.TrainJobStatus) {
		r.setCondition(st, done.Type, done.Status, done.Reason, done.Message)
		r.setCondition(st, trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, done.Type, "the runtime is not supported")
	}); err != nil {
		return err
	}
	r.recordFinish(tj, done)
	return nil
}

// suspend records the suspension, then frees every pod: a JobSet is suspended (and rebuilt from
// the TrainJob while it stays so), a PodCliqueSet is deleted and rebuilt on resume.
func (r *Reconciler) suspend(ctx context.Context, tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, wl workload) error {
	if c := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobSuspended); c == nil || c.Status != metav1.ConditionTrue {
		if err := r.writeStatus(ctx, tj, func(st *trainerv1alpha1.TrainJobStatus) {
			r.setCondition(st, trainerv1alpha1.TrainJobSuspended, metav1.ConditionTrue, trainerv1alpha1.TrainJobSuspendedReason, "the TrainJob is suspended")
			r.setCondition(st, trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, trainerv1alpha1.TrainJobSuspendedReason, "the TrainJob is suspended; its pods are gone")
		}); err != nil {
			return err
		}
		r.Recorder.Eventf(tj, nil, corev1.EventTypeNormal, EventSuspended, "Suspend", "suspended; the deadline timer stopped")
	}
	child, found, err := r.getChild(ctx, tj, wl)
	if err != nil || !found {
		return err
	}
	if !wl.freesPodsBySuspending() {
		return r.deleteChild(ctx, child)
	}
	if !wl.suspended(child) {
		patch := client.MergeFrom(child.DeepCopyObject().(client.Object))
		wl.markSuspended(child)
		if err := r.Client.Patch(ctx, child, patch); err != nil {
			return err
		}
		log.FromContext(ctx).Info("suspended the workload", "kind", wl.kind(), "name", child.GetName())
		return nil
	}
	if child.GetAnnotations()[annotationBuiltFrom] != fmt.Sprint(tj.Generation) {
		_, err := r.applyWorkload(ctx, tj, rt, wl, true, false)
		return err
	}
	return nil
}

// ensureWorkload creates the child when it is missing, and resumes a suspended JobSet (rebuilt
// first if the TrainJob changed while suspended). A running child is never rebuilt. It returns
// the child as last written or read, so a cache that has not caught up yet is no problem.
func (r *Reconciler) ensureWorkload(ctx context.Context, tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, wl workload) (client.Object, error) {
	child, found, err := r.getChild(ctx, tj, wl)
	if err != nil {
		return nil, err
	}
	if !found {
		child, err := r.applyWorkload(ctx, tj, rt, wl, false, true)
		if err != nil {
			return nil, err
		}
		log.FromContext(ctx).Info("created the workload", "kind", wl.kind(), "name", child.GetName(), "runtime", tj.Spec.RuntimeRef.Name)
		r.Recorder.Eventf(tj, nil, corev1.EventTypeNormal, EventCreated, "Create", "created %s %s", wl.kind(), tj.Name)
		return child, nil
	}
	if owner := metav1.GetControllerOf(child); owner == nil || owner.UID != tj.UID {
		return nil, fmt.Errorf("%s %s exists and is not owned by this TrainJob", wl.kind(), child.GetName())
	}
	if !wl.suspended(child) {
		return child, nil
	}
	if child.GetAnnotations()[annotationBuiltFrom] != fmt.Sprint(tj.Generation) {
		// Rebuilt while still suspended: the JobSet accepts template changes only then.
		if _, err := r.applyWorkload(ctx, tj, rt, wl, true, false); err != nil {
			return nil, err
		}
	}
	return r.applyWorkload(ctx, tj, rt, wl, false, false)
}

// applyWorkload declares the child and what it needs first, owned by the TrainJob, and returns
// the child as declared. A new child is created rather than applied, so an unrelated object of
// the same name is never taken over.
func (r *Reconciler) applyWorkload(ctx context.Context, tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, wl workload, suspend, create bool) (client.Object, error) {
	child, extra, err := wl.build(tj, rt, suspend)
	if err != nil {
		return nil, err
	}
	for _, obj := range extra {
		if err := r.apply(ctx, tj, obj); err != nil {
			return nil, err
		}
	}
	annotations := child.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[annotationBuiltFrom] = fmt.Sprint(tj.Generation)
	child.SetAnnotations(annotations)
	if create {
		if err := controllerutil.SetControllerReference(tj, child, r.Client.Scheme()); err != nil {
			return nil, err
		}
		return child, r.Client.Create(ctx, child, client.FieldOwner(FieldOwner))
	}
	return child, r.apply(ctx, tj, child)
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

func (r *Reconciler) deleteChild(ctx context.Context, child client.Object) error {
	err := r.Client.Delete(ctx, child, client.Preconditions{UID: ptr.To(child.GetUID())}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if err == nil {
		log.FromContext(ctx).Info("deleted the workload: its pods go with it", "kind", fmt.Sprintf("%T", child), "name", child.GetName())
	}
	return client.IgnoreNotFound(err)
}

// deadlineExceeded records the failure, then tears the workload down.
func (r *Reconciler) deadlineExceeded(ctx context.Context, tj *trainerv1alpha1.TrainJob, wl workload) error {
	msg := fmt.Sprintf("the TrainJob ran longer than activeDeadlineSeconds (%ds)", *tj.Spec.ActiveDeadlineSeconds)
	done := &metav1.Condition{Type: trainerv1alpha1.TrainJobFailed, Status: metav1.ConditionTrue,
		Reason: trainerv1alpha1.TrainJobDeadlineExceededReason, Message: msg}
	if err := r.writeStatus(ctx, tj, func(st *trainerv1alpha1.TrainJobStatus) {
		r.setCondition(st, done.Type, done.Status, done.Reason, done.Message)
		r.setCondition(st, trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, done.Type, "the job finished")
	}); err != nil {
		return err
	}
	r.recordFinish(tj, done)
	child, found, err := r.getChild(ctx, tj, wl)
	if err != nil || !found {
		return err
	}
	return r.deleteChild(ctx, child)
}

// failPastDeadline fails the TrainJob for its deadline and, like every finish, waits for the TTL.
// The failure is a status write, which wakes no reconcile, and a workload the deadline beat to
// creation leaves no deletion to wake one either: without the requeue here, such a TrainJob
// outlived its TTL until the controller restarted (found by the chaos suite).
func (r *Reconciler) failPastDeadline(ctx context.Context, tj *trainerv1alpha1.TrainJob, rt *plan.Runtime, wl workload) (ctrl.Result, error) {
	if err := r.deadlineExceeded(ctx, tj, wl); err != nil {
		return ctrl.Result{}, err
	}
	return r.afterFinish(ctx, tj, rt)
}

// afterFinish finishes a teardown a crash interrupted and deletes the TrainJob when its TTL
// expires. It never creates anything.
func (r *Reconciler) afterFinish(ctx context.Context, tj *trainerv1alpha1.TrainJob, rt *plan.Runtime) (ctrl.Result, error) {
	done := finished(tj)
	if rt == nil {
		// Finished before it started (runtime not supported): the live runtime's TTL applies.
		resolved, err := r.resolveRuntime(ctx, tj)
		if err != nil {
			return ctrl.Result{}, nil
		}
		rt = resolved
	}
	if done.Reason == trainerv1alpha1.TrainJobDeadlineExceededReason {
		if wl, err := workloadFor(rt); err == nil {
			child, found, err := r.getChild(ctx, tj, wl)
			if err != nil {
				return ctrl.Result{}, err
			}
			if found && child.GetDeletionTimestamp().IsZero() {
				if err := r.deleteChild(ctx, child); err != nil {
					return ctrl.Result{}, err
				}
			}
		}
	}
	at, ok := expiry(tj, rt.Spec.TTLSecondsAfterFinished)
	if !ok {
		return ctrl.Result{}, nil
	}
	if now := r.Clock.Now(); now.Before(at) {
		return ctrl.Result{RequeueAfter: untilTime(at, now)}, nil
	}
	r.Recorder.Eventf(tj, nil, corev1.EventTypeNormal, EventTTLExpired, "Delete", "deleting: finished %s ago, ttlSecondsAfterFinished is %ds",
		r.Clock.Since(done.LastTransitionTime.Time).Round(time.Second), *rt.Spec.TTLSecondsAfterFinished)
	if err := r.Client.Delete(ctx, tj, client.Preconditions{UID: ptr.To(tj.UID)}, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("TTL deletion: deleted the finished TrainJob", "finished", done.Type, "reason", done.Reason,
		"ttlSecondsAfterFinished", *rt.Spec.TTLSecondsAfterFinished)
	ttlDeletions.Inc()
	return ctrl.Result{}, nil
}

// recordFinish emits the terminal event and counts the job by reason.
func (r *Reconciler) recordFinish(tj *trainerv1alpha1.TrainJob, done *metav1.Condition) {
	reason, eventType := EventCompleted, corev1.EventTypeNormal
	if done.Type == trainerv1alpha1.TrainJobFailed {
		reason, eventType = EventFailed, corev1.EventTypeWarning
		if done.Reason == trainerv1alpha1.TrainJobDeadlineExceededReason {
			reason = EventDeadlineExceeded
		}
		if done.Reason == trainerv1alpha1.TrainJobRuntimeNotSupportedReason {
			reason = EventRuntimeNotSupported
		}
	}
	r.Recorder.Eventf(tj, nil, eventType, reason, "Finish", "%s (%s): %s", done.Type, done.Reason, done.Message)
	finishedJobs.WithLabelValues(done.Type, done.Reason).Inc()
}

// writeStatus applies change to a copy of the status and writes it only when it differs.
func (r *Reconciler) writeStatus(ctx context.Context, tj *trainerv1alpha1.TrainJob, change func(*trainerv1alpha1.TrainJobStatus)) error {
	st := tj.Status.DeepCopy()
	change(st)
	if equality.Semantic.DeepEqual(*st, tj.Status) {
		return nil
	}
	updated := tj.DeepCopy()
	updated.Status = *st
	if err := r.Client.Status().Update(ctx, updated); err != nil {
		return err
	}
	conditionlog.Transitions(log.FromContext(ctx), tj.Status.Conditions, updated.Status.Conditions)
	*tj = *updated
	return nil
}

// setCondition sets a condition; the transition time, read from the controller's clock, moves
// only when the status changes.
func (r *Reconciler) setCondition(st *trainerv1alpha1.TrainJobStatus, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(r.Clock.Now())})
}
