package trainjob

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// MultiKueue (docs/kueue.md, Multi-cluster). Kueue's own TrainJob integration dispatches a
// TrainJob whose queue leads to a MultiKueue admission check: Kueue's webhook sets its
// spec.managedBy to kueue.x-k8s.io/multikueue, MultiKueue copies it to the worker cluster that
// admits it, where this controller runs the copy as any TrainJob, and copies the copy's status
// back. On the manager this controller writes only, while Kueue holds the TrainJob suspended in
// its queue (no worker runs it, so MultiKueue copies no status), that it is suspended; and it
// deletes the TrainJob once its runtime's ttlSecondsAfterFinished has passed after the status
// copied back says it finished.

// dispatchedByMultiKueue reports whether Kueue's MultiKueue runs the TrainJob on a worker.
func dispatchedByMultiKueue(tj *trainerv1alpha1.TrainJob) bool {
	return ptr.Deref(tj.Spec.ManagedBy, "") == trainerv1alpha1.MultiKueueManagedBy
}

// reconcileDispatched is the whole pass for a dispatched TrainJob on the manager cluster: while
// Kueue holds it suspended in its queue (no worker runs it, so nothing copies a status back) it
// says so, as a suspended TrainJob does on one cluster; once its copied-back status says it
// finished, its runtime's TTL applies. Nothing else is written: the worker's status is copied
// over it while a worker runs it.
func (r *Reconciler) reconcileDispatched(ctx context.Context, tj *trainerv1alpha1.TrainJob) (ctrl.Result, error) {
	if finished(tj) == nil {
		if !isSuspended(tj) || meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1alpha1.TrainJobSuspended) {
			return ctrl.Result{}, nil
		}
		st := tj.Status.DeepCopy()
		now := metav1.NewTime(r.Clock.Now())
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: trainerv1alpha1.TrainJobSuspended, Status: metav1.ConditionTrue, Reason: trainerv1alpha1.TrainJobSuspendedReason,
			Message: "queued: Kueue's MultiKueue runs it on a worker cluster once its queue admits it", LastTransitionTime: now})
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: trainerv1alpha1.TrainJobRunning, Status: metav1.ConditionFalse, Reason: trainerv1alpha1.TrainJobSuspendedReason,
			Message: "queued for a worker cluster", LastTransitionTime: now})
		if err := r.writeStatus(ctx, tj, *st); err != nil {
			return ctrl.Result{}, err
		}
		r.Recorder.Eventf(tj, nil, corev1.EventTypeNormal, EventSuspended, "Suspend", "queued: Kueue's MultiKueue runs it on a worker cluster once admitted")
		return ctrl.Result{}, nil
	}
	rt, err := r.resolveRuntime(ctx, tj)
	var missing *runtimeNotFoundError
	var unsupported *notSupportedError
	if errors.As(err, &missing) || errors.As(err, &unsupported) {
		return ctrl.Result{}, nil // no runtime here: no TTL
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return r.expire(ctx, tj, rt)
}

// dispatchedFinished passes a dispatched TrainJob whose spec changed (Kueue suspends and resumes
// it) or whose copied-back status just says it finished (its generation does not change, so the
// controller's own predicate would not pass it).
var dispatchedFinished = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return dispatched(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, ok1 := e.ObjectOld.(*trainerv1alpha1.TrainJob)
		tj, ok2 := e.ObjectNew.(*trainerv1alpha1.TrainJob)
		return ok1 && ok2 && dispatchedByMultiKueue(tj) && ((finished(old) == nil) != (finished(tj) == nil) || old.Generation != tj.Generation ||
			// Suspended by Kueue, its status copied over once more while MultiKueue removed the
			// worker's copy: it says again that it is queued.
			(isSuspended(tj) && !meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1alpha1.TrainJobSuspended)))
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

func dispatched(o client.Object) bool {
	tj, ok := o.(*trainerv1alpha1.TrainJob)
	return ok && dispatchedByMultiKueue(tj)
}

// ConditionDispatched on a TrainJob MultiKueue copied to this worker cluster names the cluster;
// MultiKueue copies it back to the manager's TrainJob with the rest of the status.
const ConditionDispatched = grovev1alpha1.ConditionDispatched

// setDispatched sets, on a TrainJob MultiKueue copied here, the Dispatched condition.
func setDispatched(tj *trainerv1alpha1.TrainJob, st *trainerv1alpha1.TrainJobStatus, clusterName string) {
	origin, copied := tj.Labels[grovev1alpha1.LabelMultiKueueOrigin]
	if !copied {
		return
	}
	where := "a worker cluster of MultiKueue (kueue.multiKueue.clusterName is not configured here)"
	if clusterName != "" {
		where = "cluster " + clusterName
	}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: ConditionDispatched, Status: metav1.ConditionTrue, Reason: grovev1alpha1.ReasonRunsOnWorker,
		Message: fmt.Sprintf("runs on %s, dispatched by Kueue's MultiKueue (origin %q)", where, origin)})
}
