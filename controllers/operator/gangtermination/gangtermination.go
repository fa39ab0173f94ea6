// Package gangtermination holds what the PodCliqueSet and PodCliqueScalingGroup reconcilers share
// to gang-terminate: when a MinAvailableBreached condition's delay expires, and how a gang's
// PodCliques are deleted so that one breach episode terminates once — even when a reconcile acts
// on a stale cache or the operator restarts mid-way.
package gangtermination

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// Levels of the gang-termination metric.
const (
	LevelPodCliqueSet          = "PodCliqueSet"
	LevelPodCliqueScalingGroup = "PodCliqueScalingGroup"
)

// ReasonMinAvailableBreached is the reason label of a gang termination: a MinAvailableBreached
// condition outlasted its terminationDelay. It is the only cause today; the label exists so a
// dashboard keeps working when another one is added.
const ReasonMinAvailableBreached = grovev1alpha1.ConditionMinAvailableBreached

// terminations counts gang terminations by level and reason.
var terminations = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "grove_gang_terminations_total",
	Help: "Gang terminations: PodCliqueSet replicas or PodCliqueScalingGroup replicas deleted and recreated after a breach outlasted terminationDelay.",
}, []string{"level", "reason"})

func init() {
	metrics.Registry.MustRegister(terminations)
	// Both levels exist from the start at 0, so increase() sees the first termination.
	for _, level := range []string{LevelPodCliqueSet, LevelPodCliqueScalingGroup} {
		terminations.WithLabelValues(level, ReasonMinAvailableBreached)
	}
}

// Terminated counts one gang termination at level (LevelPodCliqueSet or
// LevelPodCliqueScalingGroup). Callers count only what their own call deleted (DeletePodCliques
// reports it), so a retried pass does not count the same termination twice.
func Terminated(level string) {
	terminations.WithLabelValues(level, ReasonMinAvailableBreached).Inc()
}

// Remaining returns whether conditions hold MinAvailableBreached=True and how long until the
// delay counted from its last transition expires (<= 0: expired). The condition's
// LastTransitionTime is the clock, so no timer lives in memory.
func Remaining(conditions []metav1.Condition, delay time.Duration, now time.Time) (breached bool, remaining time.Duration) {
	c := meta.FindStatusCondition(conditions, grovev1alpha1.ConditionMinAvailableBreached)
	if c == nil || c.Status != metav1.ConditionTrue {
		return false, 0
	}
	return true, c.LastTransitionTime.Add(delay).Sub(now)
}

// Soonest tracks the smallest positive wait, for RequeueAfter.
type Soonest struct{ d time.Duration }

// Add records a wait.
func (s *Soonest) Add(d time.Duration) {
	if d > 0 && (s.d == 0 || d < s.d) {
		s.d = d
	}
}

// After returns the smallest wait recorded, or 0.
func (s *Soonest) After() time.Duration { return s.d }

// DeletePodCliques deletes exactly the PodCliques observed — each with its UID as precondition,
// so a stale view never deletes their replacements — and reports whether any was deleted by this
// call (the termination happened now, not in an earlier pass).
func DeletePodCliques(ctx context.Context, c client.Client, pclqs []*grovev1alpha1.PodClique) (bool, error) {
	deleted := false
	for _, p := range pclqs {
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		uid := p.UID
		err := c.Delete(ctx, p, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		switch {
		case err == nil:
			deleted = true
			log.FromContext(ctx).V(1).Info("deleted PodClique", "podClique", client.ObjectKeyFromObject(p), "uid", uid)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		default:
			return deleted, err
		}
	}
	return deleted, nil
}
