package trainjob

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func job(suspend bool, ads *int64, conds ...metav1.Condition) *trainerv1alpha1.TrainJob {
	tj := &trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}}
	tj.Spec.Suspend = ptr.To(suspend)
	tj.Spec.ActiveDeadlineSeconds = ads
	tj.Status.Conditions = conds
	return tj
}

func cond(typ string, status metav1.ConditionStatus, reason string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(at)}
}

func TestDeadlineCountsFromCreationOrTheLastResume(t *testing.T) {
	resumedAt := t0.Add(time.Hour)
	for _, tc := range []struct {
		name   string
		tj     *trainerv1alpha1.TrainJob
		want   time.Time
		active bool
	}{
		{"no deadline", job(false, nil), time.Time{}, false},
		{"never suspended: from creation", job(false, ptr.To[int64](60)), t0.Add(time.Minute), true},
		{"suspended: timer stopped", job(true, ptr.To[int64](60), cond(trainerv1alpha1.TrainJobSuspended, metav1.ConditionTrue, trainerv1alpha1.TrainJobSuspendedReason, t0)), time.Time{}, false},
		{"created suspended, never resumed", job(true, ptr.To[int64](60)), time.Time{}, false},
		{"resumed: full deadline from the resume", job(false, ptr.To[int64](60), cond(trainerv1alpha1.TrainJobSuspended, metav1.ConditionFalse, trainerv1alpha1.TrainJobResumedReason, resumedAt)), resumedAt.Add(time.Minute), true},
		{"unsuspended but the resume is not recorded yet", job(false, ptr.To[int64](60), cond(trainerv1alpha1.TrainJobSuspended, metav1.ConditionTrue, trainerv1alpha1.TrainJobSuspendedReason, t0)), time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := deadline(tc.tj)
			assert.Equal(t, tc.active, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestExpiryCountsFromTheTerminalTransition(t *testing.T) {
	doneAt := t0.Add(2 * time.Hour)
	complete := cond(trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "AllJobsCompleted", doneAt)
	failed := cond(trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, trainerv1alpha1.TrainJobDeadlineExceededReason, doneAt)
	for _, tc := range []struct {
		name  string
		tj    *trainerv1alpha1.TrainJob
		ttl   *int32
		want  time.Time
		found bool
	}{
		{"running: no expiry", job(false, nil), ptr.To[int32](10), time.Time{}, false},
		{"complete without ttl: kept", job(false, nil, complete), nil, time.Time{}, false},
		{"complete with ttl", job(false, nil, complete), ptr.To[int32](10), doneAt.Add(10 * time.Second), true},
		{"failed with ttl 0: at once", job(false, nil, failed), ptr.To[int32](0), doneAt, true},
		{"suspended then finished: ttl ignores the suspension", job(true, nil, cond(trainerv1alpha1.TrainJobSuspended, metav1.ConditionTrue, trainerv1alpha1.TrainJobSuspendedReason, t0), failed), ptr.To[int32](5), doneAt.Add(5 * time.Second), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := expiry(tc.tj, tc.ttl)
			assert.Equal(t, tc.found, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestUntilTimeNeverReturnsAPastOrZeroWait(t *testing.T) {
	for _, tc := range []struct {
		name string
		at   time.Time
		now  time.Time
		want time.Duration
	}{
		{"future", t0.Add(90 * time.Second), t0, 90 * time.Second},
		{"exactly now", t0, t0, time.Second},
		{"past: clock ahead of the writer's", t0, t0.Add(2 * time.Second), time.Second},
		{"far past: controller was down", t0, t0.Add(48 * time.Hour), time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, untilTime(tc.at, tc.now))
		})
	}
}
