package trainjob

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// action is what a pass does to the cluster once its status is written.
type action int

const (
	// actNone leaves the cluster as it is (a finished TrainJob, one waiting for its runtime).
	actNone action = iota
	// actRun snapshots the runtime (first pass), then creates the workload or resumes it.
	actRun
	// actSuspend snapshots the runtime (first pass), then frees every pod: a JobSet is
	// suspended (and rebuilt from the TrainJob while it stays so), a PodCliqueSet is deleted.
	actSuspend
	// actTearDown deletes the workload of a TrainJob that ran out of time.
	actTearDown
	// actRelease deletes again, in the background, a workload whose foreground deletion stalled.
	actRelease
)

// foregroundStall is how long a workload may stay marked for deletion in the foreground before
// it is released. The garbage collector finishes a JobSet's foreground deletion in about a
// second; it waits forever when the JobSet controller, acting on a cache from before the
// deletion (the API server restarted), re-created a Job after the collector had processed the
// JobSet, since nothing makes the collector look at that JobSet again (chaos seed
// 1795939543269780059). Deleted again in the background, the JobSet goes at once and the
// collector removes its Jobs as dependents of an owner that is gone.
const foregroundStall = 15 * time.Second

// recordedEvent is one event a decision emits once its status is written.
type recordedEvent struct {
	eventType, reason, action, message string
}

// decision is what one pass does: the status it writes, then the action and the events.
type decision struct {
	now    time.Time
	status trainerv1alpha1.TrainJobStatus
	act    action
	events []recordedEvent
	// finish is the Complete or Failed condition this pass sets, reported with its metric.
	finish *metav1.Condition
	// recheck asks for a pass after this long when nothing else will wake one.
	recheck time.Duration
	// series is what the status write records for the metrics.
	series passSeries
}

// decide computes the pass's decision from the TrainJob and what was observed. It reads nothing
// and writes nothing.
func decide(tj *trainerv1alpha1.TrainJob, o *observation) decision {
	d := decision{now: o.now, status: *tj.Status.DeepCopy()}
	switch {
	case finished(tj) != nil:
		if done := finished(tj); done.Reason == trainerv1alpha1.TrainJobDeadlineExceededReason {
			d.act = actTearDown // finishes a teardown a crash interrupted
		}
		d.release(tj, o)
	case o.missing != nil:
		d.wait(trainerv1alpha1.TrainJobRuntimeNotFoundReason, o.missing.Error(), EventRuntimeNotFound, "Resolve")
	case o.unsupported != nil:
		d.finishWith(metav1.Condition{Type: trainerv1alpha1.TrainJobFailed, Status: metav1.ConditionTrue,
			Reason: trainerv1alpha1.TrainJobRuntimeNotSupportedReason, Message: o.unsupported.Error()}, "the runtime is not supported")
	case o.buildFailed != nil:
		// The TrainJob waits for an edit instead of retrying in a loop.
		d.wait(ReasonBuildFailed, o.buildFailed.Error(), ReasonBuildFailed, "Build")
	case o.child != nil && !o.owned:
		d.wait(trainerv1alpha1.TrainJobNameCollisionReason, fmt.Sprintf("%s %s exists and is not owned by this TrainJob: nothing is adopted", o.wl.kind(), o.child.GetName()),
			trainerv1alpha1.TrainJobNameCollisionReason, "Create")
		d.recheck = nameCollisionRecheck
	case isSuspended(tj):
		d.suspend(o)
	case pastDeadline(tj, o.now) || (o.out.done != nil && o.out.done.Reason == trainerv1alpha1.TrainJobDeadlineExceededReason):
		d.finishWith(metav1.Condition{Type: trainerv1alpha1.TrainJobFailed, Status: metav1.ConditionTrue, Reason: trainerv1alpha1.TrainJobDeadlineExceededReason,
			Message: fmt.Sprintf("the TrainJob ran longer than activeDeadlineSeconds (%ds)", *tj.Spec.ActiveDeadlineSeconds)}, "the job finished")
		d.act = actTearDown
	default:
		d.run(tj, o)
	}
	d.series = seriesOf(tj, d)
	return d
}

// pastDeadline reports whether the TrainJob's deadline timer runs and has expired.
func pastDeadline(tj *trainerv1alpha1.TrainJob, now time.Time) bool {
	dl, ok := deadline(tj)
	return ok && !now.Before(dl)
}

// release deletes again, in the background, the workload of a finished TrainJob still marked for
// deletion in the foreground: once its TTL expired (the TrainJob is deleted after this pass, and
// nothing would look at the workload again), and after foregroundStall when the deadline tore it
// down, asking until then for a pass when the bound ends.
func (d *decision) release(tj *trainerv1alpha1.TrainJob, o *observation) {
	at, ok := foregroundPending(o.child)
	if !ok || !o.owned {
		return
	}
	if o.rt != nil {
		if expires, ok := expiry(tj, o.rt.Spec.TTLSecondsAfterFinished); ok && !o.now.Before(expires) {
			d.act = actRelease
			return
		}
	}
	if d.act != actTearDown {
		return
	}
	if wait := at.Add(foregroundStall).Sub(o.now); wait > 0 {
		d.recheck = wait
		return
	}
	d.act = actRelease
}

// foregroundPending reports when child was marked for deletion, if it waits for the garbage
// collector to delete its dependents first.
func foregroundPending(child client.Object) (time.Time, bool) {
	if child == nil || child.GetDeletionTimestamp().IsZero() || !slices.Contains(child.GetFinalizers(), metav1.FinalizerDeleteDependents) {
		return time.Time{}, false
	}
	return child.GetDeletionTimestamp().Time, true
}

// run keeps the workload: the resume is recorded (the deadline counts from it), the workload's
// outcome and job counts are reported, and the workload is created or resumed.
func (d *decision) run(tj *trainerv1alpha1.TrainJob, o *observation) {
	if c := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobSuspended); c != nil && c.Status == metav1.ConditionTrue {
		d.setCondition(trainerv1alpha1.TrainJobSuspended, metav1.ConditionFalse, trainerv1alpha1.TrainJobResumedReason, "the TrainJob was resumed")
		d.events = append(d.events, recordedEvent{corev1.EventTypeNormal, EventResumed, "Resume", "resumed; the deadline counts from now"})
	}
	d.status.JobsStatus = o.out.jobs
	if o.out.done != nil {
		d.finishWith(*o.out.done, "the job finished")
		return
	}
	d.status.NumNodes = o.numNodes
	d.setCondition(trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, o.wl.kind()+"Created", fmt.Sprintf("%s %s runs the job", o.wl.kind(), tj.Name))
	d.act = actRun
}

// suspend records the suspension once; the pods are freed after the write. The job counts keep
// following the workload while its pods go: Kueue finishes an eviction only once no job of the
// TrainJob counts an active pod.
func (d *decision) suspend(o *observation) {
	d.status.JobsStatus = o.out.jobs
	if c := meta.FindStatusCondition(d.status.Conditions, trainerv1alpha1.TrainJobSuspended); c == nil || c.Status != metav1.ConditionTrue {
		d.setCondition(trainerv1alpha1.TrainJobSuspended, metav1.ConditionTrue, trainerv1alpha1.TrainJobSuspendedReason, "the TrainJob is suspended")
		d.setCondition(trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, trainerv1alpha1.TrainJobSuspendedReason, "the TrainJob is suspended; its pods are gone")
		d.events = append(d.events, recordedEvent{corev1.EventTypeNormal, EventSuspended, "Suspend", "suspended; the deadline timer stopped"})
	}
	d.act = actSuspend
}

// wait records why the TrainJob cannot run (Running=False with reason) and warns once per
// reason and message.
func (d *decision) wait(reason, message, eventReason, eventAction string) {
	if c := meta.FindStatusCondition(d.status.Conditions, trainerv1alpha1.TrainJobRunning); c != nil && c.Reason == reason && c.Message == message {
		return
	}
	d.setCondition(trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, reason, message)
	d.events = append(d.events, recordedEvent{corev1.EventTypeWarning, eventReason, eventAction, message})
}

// finishWith sets the terminal condition done and stops Running.
func (d *decision) finishWith(done metav1.Condition, running string) {
	d.setCondition(done.Type, done.Status, done.Reason, done.Message)
	d.setCondition(trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, done.Type, running)
	d.finish = &done
}

// setCondition sets a condition; the transition time, the pass's clock reading, moves only when
// the status changes.
func (d *decision) setCondition(typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&d.status.Conditions, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message,
		LastTransitionTime: metav1.NewTime(d.now)})
}
