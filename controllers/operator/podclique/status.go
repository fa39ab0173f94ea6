package podclique

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
	"github.com/kubegrove/grove/internal/reconcile/conditionlog"
	"github.com/kubegrove/grove/internal/reconcile/eventbatch"
)

// waits are what a pass saw the clique's pods wait for besides the scheduler.
type waits struct {
	// queue: Kueue has not admitted the clique's gang, or evicted it (see setMinAvailableBreached).
	queue bool
	// replacedPods: pods of the restarted PodClique this one replaces are still there, more than
	// it may go without, and none of its own is created meanwhile (see holdsBackCreates).
	replacedPods bool
}

// computeStatus derives the clique's status from its pods and what they wait for.
func computeStatus(pclq *grovev1alpha1.PodClique, active []*corev1.Pod, hash string, w waits, now metav1.Time) (grovev1alpha1.PodCliqueStatus, time.Duration) {
	st := *pclq.Status.DeepCopy()
	var outdated, updatedReady, updatedScheduled int32
	st.ObservedGeneration = &pclq.Generation
	st.Replicas, st.ReadyReplicas, st.ScheduledReplicas, st.ScheduleGatedReplicas, st.UpdatedReplicas = 0, 0, 0, 0, 0
	for _, p := range active {
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		st.Replicas++
		if podCondition(p, corev1.PodReady) {
			st.ReadyReplicas++
		}
		if podCondition(p, corev1.PodScheduled) {
			st.ScheduledReplicas++
		}
		if len(p.Spec.SchedulingGates) > 0 {
			st.ScheduleGatedReplicas++
		}
		if p.Labels[grovev1alpha1.LabelPodTemplateHash] == hash {
			st.UpdatedReplicas++
			if podCondition(p, corev1.PodReady) {
				updatedReady++
			}
			if podCondition(p, corev1.PodScheduled) {
				updatedScheduled++
			}
		} else {
			outdated++
		}
	}
	selector := labels.SelectorFromSet(labels.Set{grovev1alpha1.LabelPodClique: pclq.Name}).String()
	st.Selector = &selector
	if st.UpdatedReplicas == pclq.Spec.Replicas && st.Replicas == pclq.Spec.Replicas {
		st.CurrentPodTemplateHash = &hash
	}
	succeeded, failed := 0, int32(0)
	for _, p := range active {
		switch p.Status.Phase {
		case corev1.PodSucceeded:
			succeeded++
		case corev1.PodFailed:
			failed++
		}
	}
	available := st.ReadyReplicas
	st.SucceededReplicas, st.FailedReplicas = 0, 0
	if isTraining(pclq) {
		st.SucceededReplicas, st.FailedReplicas = int32(succeeded), failed
		setSucceeded(pclq, &st, succeeded)
		// A pod that finished its work counts as available: only failures breach.
		available += int32(succeeded)
	} else {
		failed = 0 // an inference pod that failed is recreated in place
	}
	// The update first: a clique whose pods are all being replaced has no outdated pod left, yet
	// it is being rolled, not breached.
	after := trackUpdate(pclq, &st, outdated, updatedReady, hash, pclq.Status.CurrentPodTemplateHash, now)
	if p := st.UpdateProgress; p != nil && p.UpdateEndedAt == nil {
		p.UpdatedScheduledReplicas = updatedScheduled
	}
	setMinAvailableBreached(pclq, &st, available, failed, w.queue)
	cond := metav1.Condition{
		Type: grovev1alpha1.ConditionPodCliqueScheduled, Status: metav1.ConditionFalse,
		Reason: grovev1alpha1.ReasonInsufficientScheduledPods, ObservedGeneration: pclq.Generation,
		Message: scheduledMessage(st.ScheduledReplicas, minAvailable(pclq)),
	}
	switch {
	case st.ScheduledReplicas >= minAvailable(pclq):
		cond.Status, cond.Reason = metav1.ConditionTrue, grovev1alpha1.ReasonSufficientScheduledPods
	case w.replacedPods:
		// No count in the message: each old pod's removal would otherwise cost a status write.
		cond.Reason, cond.Message = grovev1alpha1.ReasonReplacedPodsTerminating, replacedPodsMessage
	}
	wasScheduled := meta.IsStatusConditionTrue(st.Conditions, grovev1alpha1.ConditionPodCliqueScheduled)
	meta.SetStatusCondition(&st.Conditions, cond)
	if cond.Status == metav1.ConditionTrue && !wasScheduled {
		// Stamped with the condition's own transition time: the two cannot disagree.
		at := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionPodCliqueScheduled).LastTransitionTime
		st.LastScheduled = &at
	}
	return st, after
}

const replacedPodsMessage = "pods of the restarted PodClique this one replaces are still being deleted: " +
	"its own pods are created once no more of them remain than minAvailable allows"

func scheduledMessage(scheduled, min int32) string {
	return fmt.Sprintf("%d of minAvailable %d pods scheduled", scheduled, min)
}

func podCondition(p *corev1.Pod, t corev1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// updateStatus writes the status only when it changed, so a clique at rest costs no writes. A
// summary nobody acts on waits while this process creates pods (see statuspacing.Holder): held reports
// that, and the caller comes back after the batch period. What a parent's rolling step waits for
// (eventbatch.CliqueAwaited) is no such summary.
func (r *Reconciler) updateStatus(ctx context.Context, pclq *grovev1alpha1.PodClique, active []*corev1.Pod, hash string, w waits) (held bool, after time.Duration, err error) {
	st, after := computeStatus(pclq, active, hash, w, metav1.NewTime(r.clock().Now()))
	if equality.Semantic.DeepEqual(st, pclq.Status) {
		return false, after, nil
	}
	key := client.ObjectKeyFromObject(pclq)
	next := *pclq // read only: the status as it would be stored
	next.Status = st
	if r.holder.Busy() && !actedOn(pclq.Status, st) && !eventbatch.CliqueAwaited(pclq, &next) {
		waiting, err := r.hasDependents(ctx, pclq)
		if err != nil {
			return false, 0, err
		}
		if !waiting && r.holder.Hold(key) {
			return true, 0, nil
		}
	}
	replaced := pclq.ResourceVersion
	before := pclq.Status.Conditions
	pclq.Status = st
	if err := r.Client.Status().Update(ctx, pclq); err != nil {
		return false, 0, err
	}
	conditionlog.Transitions(log.FromContext(ctx), before, st.Conditions)
	if stalled(before, st.Conditions) {
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, grovev1alpha1.ReasonProgressDeadlineExceeded, "Update", "%s",
			meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionUpdateInProgress).Message)
	}
	if becameReason(before, st.Conditions, grovev1alpha1.ConditionPodCliqueScheduled, grovev1alpha1.ReasonReplacedPodsTerminating) {
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeNormal, grovev1alpha1.ReasonReplacedPodsTerminating, "Create", "%s", replacedPodsMessage)
	}
	r.pending.ExpectWrite(key, replaced)
	return false, after, nil
}

// actedOn reports a status change that other controllers act on at once: a breach starts the
// gang-termination timer (its transition time is the timer's start) and its end stops it, and a
// training clique's success may finish its workload.
func actedOn(old, st grovev1alpha1.PodCliqueStatus) bool {
	for _, t := range []string{grovev1alpha1.ConditionMinAvailableBreached, grovev1alpha1.ConditionSucceeded} {
		if meta.IsStatusConditionTrue(st.Conditions, t) != meta.IsStatusConditionTrue(old.Conditions, t) {
			return true
		}
	}
	return false
}

// hasDependents reports whether cliques start after this one: they wait for its readiness.
func (r *Reconciler) hasDependents(ctx context.Context, pclq *grovev1alpha1.PodClique) (bool, error) {
	list := &grovev1alpha1.PodCliqueList{}
	if err := r.Client.List(ctx, list, client.InNamespace(pclq.Namespace), client.MatchingFields{fieldindex.StartsAfter: pclq.Name},
		client.UnsafeDisableDeepCopy); err != nil { // only counted
		return false, err
	}
	return len(list.Items) > 0, nil
}

// setMinAvailableBreached evaluates the gang-termination condition in the seed's order: enough
// Ready pods; never available yet; rolling update in progress; breached. Only Ready pods count.
// WasAvailable is sticky and is not set while pods of an older template remain, so a rollout
// cannot make a clique look healthy, nor breached.
//
// failed counts Training pods that exited non-zero: a definitive failure, so it breaches even a
// clique that was never available (the gate only shields pods still starting).
//
// awaitsQueue says Kueue has not admitted the clique's gang, or evicted it: its pods wait behind
// Kueue's gate or are being stopped by Kueue, which is no breach and no failure. The gang starts
// over once admitted again, so WasAvailable is cleared: a Training workload spends no restart
// and gang termination counts nothing.
func setMinAvailableBreached(pclq *grovev1alpha1.PodClique, st *grovev1alpha1.PodCliqueStatus, available, failed int32, awaitsQueue bool) {
	min := minAvailable(pclq)
	updating := st.UpdatedReplicas < st.Replicas || (st.UpdateProgress != nil && st.UpdateProgress.UpdateEndedAt == nil)
	if awaitsQueue {
		st.WasAvailable = false
	}
	if available >= min && !updating {
		st.WasAvailable = true
	}
	cond := metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, ObservedGeneration: pclq.Generation}
	msg := fmt.Sprintf("%d Ready pods, minAvailable %d", available, min)
	switch {
	case pclq.Spec.Replicas == 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, grovev1alpha1.ReasonIdle
		msg = "0 replicas: idle, never breached"
	case available >= min:
		cond.Status, cond.Reason = metav1.ConditionFalse, grovev1alpha1.ReasonSufficientReadyPods
	case awaitsQueue:
		cond.Status, cond.Reason = metav1.ConditionFalse, grovev1alpha1.ReasonAwaitingQueueAdmission
		msg += "; the gang waits for Kueue to admit it, so not a breach"
	case !st.WasAvailable && failed == 0:
		cond.Status, cond.Reason = metav1.ConditionFalse, grovev1alpha1.ReasonNeverAvailable
		msg += "; never available yet, so not a breach"
	case updating:
		cond.Status, cond.Reason = metav1.ConditionUnknown, grovev1alpha1.ReasonUpdateInProgress
		msg += "; a rolling update is replacing pods"
	default:
		cond.Status, cond.Reason = metav1.ConditionTrue, grovev1alpha1.ReasonInsufficientReadyPods
		if failed > 0 {
			msg += fmt.Sprintf("; %d pods failed", failed)
		}
	}
	cond.Message = msg
	meta.SetStatusCondition(&st.Conditions, cond)
}

// setSucceeded marks a Training PodClique Succeeded once every one of its pods exited 0; the
// condition is sticky and is written before anything is cleaned up, so the fact survives the pods.
func setSucceeded(pclq *grovev1alpha1.PodClique, st *grovev1alpha1.PodCliqueStatus, succeeded int) {
	if meta.IsStatusConditionTrue(st.Conditions, grovev1alpha1.ConditionSucceeded) {
		return
	}
	cond := metav1.Condition{Type: grovev1alpha1.ConditionSucceeded, Status: metav1.ConditionFalse, Reason: "PodsRunning",
		Message: fmt.Sprintf("%d of %d pods exited 0", succeeded, pclq.Spec.Replicas), ObservedGeneration: pclq.Generation}
	if pclq.Spec.Replicas > 0 && succeeded >= int(pclq.Spec.Replicas) {
		cond.Status, cond.Reason = metav1.ConditionTrue, grovev1alpha1.ReasonAllPodsSucceeded
	}
	meta.SetStatusCondition(&st.Conditions, cond)
}

// stalled reports UpdateInProgress turning ProgressDeadlineExceeded between two condition lists.
func stalled(before, after []metav1.Condition) bool {
	return becameReason(before, after, grovev1alpha1.ConditionUpdateInProgress, grovev1alpha1.ReasonProgressDeadlineExceeded)
}

// becameReason reports whether condition t has reason now and had another (or none) before.
func becameReason(before, after []metav1.Condition, t, reason string) bool {
	c, o := meta.FindStatusCondition(after, t), meta.FindStatusCondition(before, t)
	return c != nil && c.Reason == reason && (o == nil || o.Reason != reason)
}
