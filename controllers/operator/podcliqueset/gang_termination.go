package podcliqueset

import (
	"context"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/expand"
	"github.com/kubegrove/grove/controllers/operator/gangtermination"
)

// gangTerminate terminates every PodCliqueSet replica in which a standalone PodClique (with the
// PodCliqueSet's terminationDelay) or a PodCliqueScalingGroup (with its effective delay) has been
// MinAvailableBreached for longer than the delay: all PodCliques of that replica are deleted
// together and recreated on the next pass. It returns the replicas terminated now and when the
// next pending breach expires. An unset terminationDelay disables it. A Training replica is
// restarted (or the workload failed) instead, recorded in status first: recorded tells that the
// status was written, and the pass ends there.
func (r *Reconciler) gangTerminate(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed) (terminated map[int]bool, requeue time.Duration, recorded bool, err error) {
	terminated = map[int]bool{}
	training := expand.IsTraining(pcs)
	if pcs.Spec.Template.TerminationDelay == nil && !training {
		return terminated, 0, false, nil
	}
	var delay time.Duration // Training without a delay (no webhook defaulted it) terminates at once
	if pcs.Spec.Template.TerminationDelay != nil {
		delay = pcs.Spec.Template.TerminationDelay.Duration
	}
	now := time.Now()
	var soonest gangtermination.Soonest
	for i := 0; i < int(pcs.Spec.Replicas); i++ {
		members, why := expiredBreaches(pcs, obs, i, delay, now, &soonest)
		if len(why) == 0 {
			continue
		}
		if training {
			terminated[i] = true
			recorded, err := r.restartOrFail(ctx, pcs, obs, i, members, strings.Join(why, ", ")+" below minAvailable")
			if err != nil || recorded {
				return terminated, 0, recorded, err
			}
			continue
		}
		deleted, err := gangtermination.DeletePodCliques(ctx, r.Client, members)
		if err != nil {
			return terminated, 0, false, err
		}
		terminated[i] = true
		if deleted {
			log.FromContext(ctx).Info("gang termination: replica terminated, its PodCliques are recreated", "replica", i,
				"reason", strings.Join(why, ", ")+" below minAvailable for longer than terminationDelay", "terminationDelay", delay, "podCliques", len(members))
			gangtermination.Terminations.WithLabelValues(gangtermination.LevelPodCliqueSet).Inc()
			r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, "GangTerminated", "Terminate",
				"replica %d terminated: %s below minAvailable for longer than its terminationDelay; all its PodCliques are recreated",
				i, strings.Join(why, ", "))
		}
	}
	return terminated, soonest.After(), false, nil
}

// expiredBreaches returns replica i's PodCliques and the standalone PodCliques and scaling
// groups of it whose breach outlasted their delay; breaches still within it add their remaining
// time to soonest.
func expiredBreaches(pcs *grovev1alpha1.PodCliqueSet, obs *observed, i int, delay time.Duration, now time.Time, soonest *gangtermination.Soonest) (members []*grovev1alpha1.PodClique, why []string) {
	idx := strconv.Itoa(i)
	for _, p := range obs.cliques {
		if p.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] != idx {
			continue
		}
		members = append(members, p)
		if p.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] != "" {
			continue // a scaling group speaks for its PodCliques
		}
		if breached, remaining := gangtermination.Remaining(p.Status.Conditions, delay, now); breached {
			if remaining <= 0 {
				why = append(why, "PodClique "+p.Name)
			} else {
				soonest.Add(remaining)
			}
		}
	}
	for _, g := range obs.groups {
		if g.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] != idx {
			continue
		}
		if !anyBreached(obs, g.Name) {
			// The group's condition is stale: none of its PodCliques now is breached (a restart
			// just replaced them, and the group has not looked at the new ones yet). A group's
			// breach is its PodCliques' breach, never a second failure of its own.
			continue
		}
		d := delay
		if g.Spec.TerminationDelay != nil {
			d = g.Spec.TerminationDelay.Duration
		}
		if breached, remaining := gangtermination.Remaining(g.Status.Conditions, d, now); breached {
			if remaining <= 0 {
				why = append(why, "PodCliqueScalingGroup "+g.Name)
			} else {
				soonest.Add(remaining)
			}
		}
	}
	return members, why
}

// anyBreached reports whether a PodClique of the scaling group is MinAvailableBreached.
func anyBreached(obs *observed, group string) bool {
	for _, p := range obs.cliques {
		if p.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] == group &&
			meta.IsStatusConditionTrue(p.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached) {
			return true
		}
	}
	return false
}
