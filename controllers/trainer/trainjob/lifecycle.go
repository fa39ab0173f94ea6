package trainjob

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// minRequeue is the wait used when a computed time is already past: a clock that runs behind the
// one that wrote a timestamp must not turn into a hot loop (KEP-2899, clock skew).
const minRequeue = time.Second

// untilTime is how long to wait for t; a time not in the future becomes minRequeue.
func untilTime(t, now time.Time) time.Duration {
	if d := t.Sub(now); d > 0 {
		return d
	}
	return minRequeue
}

// isSuspended reports whether the user asked the TrainJob to be suspended.
func isSuspended(tj *trainerv1alpha1.TrainJob) bool {
	return tj.Spec.Suspend != nil && *tj.Spec.Suspend
}

// finished returns the TrainJob's True Complete or Failed condition, if any.
func finished(tj *trainerv1alpha1.TrainJob) *metav1.Condition {
	for _, t := range []string{trainerv1alpha1.TrainJobComplete, trainerv1alpha1.TrainJobFailed} {
		if c := meta.FindStatusCondition(tj.Status.Conditions, t); c != nil && c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return nil
}

// activeSince is when the deadline timer started: the last resume, else creation. A TrainJob
// that is suspended, or was created suspended and never resumed, has no running timer.
func activeSince(tj *trainerv1alpha1.TrainJob) (time.Time, bool) {
	if isSuspended(tj) {
		return time.Time{}, false
	}
	c := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobSuspended)
	switch {
	case c == nil:
		return tj.CreationTimestamp.Time, true
	case c.Status == metav1.ConditionFalse && c.Reason == trainerv1alpha1.TrainJobResumedReason:
		return c.LastTransitionTime.Time, true
	}
	// Suspended=True while spec.suspend is false: the resume is not recorded yet.
	return time.Time{}, false
}

// deadline is when activeDeadlineSeconds expires, if a timer runs.
func deadline(tj *trainerv1alpha1.TrainJob) (time.Time, bool) {
	ads := tj.Spec.ActiveDeadlineSeconds
	if ads == nil {
		return time.Time{}, false
	}
	since, ok := activeSince(tj)
	if !ok {
		return time.Time{}, false
	}
	return since.Add(time.Duration(*ads) * time.Second), true
}

// expiry is when a finished TrainJob is deleted: ttlSecondsAfterFinished after its Complete or
// Failed transition.
func expiry(tj *trainerv1alpha1.TrainJob, ttl *int32) (time.Time, bool) {
	done := finished(tj)
	if done == nil || ttl == nil {
		return time.Time{}, false
	}
	return done.LastTransitionTime.Add(time.Duration(*ttl) * time.Second), true
}
