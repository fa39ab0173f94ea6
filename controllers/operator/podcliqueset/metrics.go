package podcliqueset

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/internal/contract/podgangstatus"
)

// Histograms of the transitions this reconciler writes (docs/metrics.md). Each is observed only
// after the write that records the transition succeeded: a write lost to a conflict is decided
// again from the stored status by the next pass, which then finds the transition done or not,
// so nothing is observed twice.
var (
	gangTimeToScheduled = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "grove_podgang_time_to_scheduled_seconds",
		Help:    "Time from a PodGang's creation to its first Scheduled=True (every pod group has its minimum of pods bound).",
		Buckets: gangBuckets,
	}, []string{"backend"})
	gangTimeToReady = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "grove_podgang_time_to_ready_seconds",
		Help:    "Time from a PodGang's creation to its first Ready=True (every pod group has its minimum of pods ready).",
		Buckets: gangBuckets,
	}, []string{"backend"})
	updateDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "grove_podcliqueset_update_duration_seconds",
		Help:    "Time from a PodCliqueSet's UpdateInProgress turning True to its update ending (UpdateInProgress False).",
		Buckets: prometheus.ExponentialBuckets(10, 2, 14), // 10s … ~23h
	}, []string{"strategy"})
)

// gangBuckets span a gang placed in under a second to one waiting half a day for capacity.
var gangBuckets = prometheus.ExponentialBuckets(0.5, 2, 17) // 0.5s … ~9h

func init() {
	metrics.Registry.MustRegister(gangTimeToScheduled, gangTimeToReady, updateDuration)
	// Every strategy's series exists from the start, at zero: a series born with its first
	// observation shows no rate for it, so a dashboard would miss the first update.
	for _, s := range []grovev1alpha1.UpdateStrategyType{grovev1alpha1.RollingRecreateStrategy, grovev1alpha1.CoherentStrategy, grovev1alpha1.OnDeleteStrategy} {
		updateDuration.WithLabelValues(string(s))
	}
}

// initGangSeries creates the gang histograms' series of every enabled backend at zero, for the
// same reason.
func initGangSeries(enabled []backends.PodPreparer) {
	for _, b := range enabled {
		gangTimeToScheduled.WithLabelValues(string(b.Name()))
		gangTimeToReady.WithLabelValues(string(b.Name()))
	}
}

// gangFirsts says, for a status part about to replace a PodGang's status before, how long the
// gang took from its creation to be Scheduled and Ready for the first time — when this write is
// the one that records it: lastScheduled (lastReady) is set by the part and was never set
// before. Later placements of the same gang (after a pod was lost) are not a gang's wait to be
// placed, and are not observed.
func gangFirsts(before *schedulerv1alpha1.PodGang, part podgangstatus.Part) (scheduled, ready *time.Duration) {
	since := func(t *metav1.Time) *time.Duration {
		d := max(t.Sub(before.CreationTimestamp.Time), 0) // creation is stored to the second
		return &d
	}
	if before.Status.LastScheduled == nil && part.LastScheduled != nil {
		scheduled = since(part.LastScheduled)
	}
	if before.Status.LastReady == nil && part.LastReady != nil {
		ready = since(part.LastReady)
	}
	return scheduled, ready
}

// observeGangFirsts observes the gang's first placement and readiness, once the status write
// that records them succeeded.
func observeGangFirsts(before *schedulerv1alpha1.PodGang, part podgangstatus.Part) {
	backend := before.Labels[grovev1alpha1.LabelSchedulerName]
	scheduled, ready := gangFirsts(before, part)
	if scheduled != nil {
		gangTimeToScheduled.WithLabelValues(backend).Observe(scheduled.Seconds())
	}
	if ready != nil {
		gangTimeToReady.WithLabelValues(backend).Observe(ready.Seconds())
	}
}

// updateEnded says how long the update took that a status write from old to new ends: the
// PodCliqueSet's UpdateInProgress turns False (NoActiveUpdate) from True (Progressing) or Unknown
// (ProgressDeadlineExceeded). The end is the condition's transition time, the start the time it
// turned True — its lastTransitionTime, unless the update stalled in between: True→Unknown moves
// that time to the stall, and the update recorded in status.updateProgress, open at that time,
// then says when it began.
func updateEnded(old, new *grovev1alpha1.PodCliqueSetStatus) (time.Duration, bool) {
	was := meta.FindStatusCondition(old.Conditions, grovev1alpha1.ConditionUpdateInProgress)
	is := meta.FindStatusCondition(new.Conditions, grovev1alpha1.ConditionUpdateInProgress)
	if was == nil || was.Status == metav1.ConditionFalse || is == nil || is.Status != metav1.ConditionFalse {
		return 0, false
	}
	start := was.LastTransitionTime.Time
	if p := new.UpdateProgress; p != nil && p.UpdateStartedAt.Before(&was.LastTransitionTime) &&
		(p.UpdateEndedAt == nil || !p.UpdateEndedAt.Before(&was.LastTransitionTime)) {
		start = p.UpdateStartedAt.Time
	}
	return max(is.LastTransitionTime.Sub(start), 0), true
}

// failureReason is the training_failures reason of a Failed Training workload: its Failed
// condition's reason. The set stays bounded: a reason this version does not write (none today)
// counts as PodCliqueFailed, the failure of a PodClique that ends the workload.
func failureReason(conds []metav1.Condition) string {
	if c := meta.FindStatusCondition(conds, grovev1alpha1.ConditionFailed); c != nil {
		switch c.Reason {
		case grovev1alpha1.ReasonMaxRestartsExceeded, grovev1alpha1.ReasonMaxRuntimeExceeded, EventPodCliqueFailed:
			return c.Reason
		}
	}
	return EventPodCliqueFailed
}
