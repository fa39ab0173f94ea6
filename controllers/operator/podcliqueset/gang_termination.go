package podcliqueset

import (
	"context"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/expand"
	"github.com/kubegrove/grove/controllers/operator/gangtermination"
)

// gangTerminate terminates every PodCliqueSet replica in which a standalone PodClique (with the
// PodCliqueSet's terminationDelay) or a PodCliqueScalingGroup (with its effective delay) has been
// MinAvailableBreached for longer than the delay: all PodCliques of that replica are deleted
// together and recreated on the next pass. It returns the replicas terminated now and when the
// next pending breach expires. An unset terminationDelay disables it.
func (r *Reconciler) gangTerminate(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed) (map[int]bool, time.Duration, error) {
	terminated := map[int]bool{}
	training := expand.IsTraining(pcs)
	if pcs.Spec.Template.TerminationDelay == nil && !training {
		return terminated, 0, nil
	}
	var delay time.Duration // Training without a delay (no webhook defaulted it) terminates at once
	if pcs.Spec.Template.TerminationDelay != nil {
		delay = pcs.Spec.Template.TerminationDelay.Duration
	}
	now := time.Now()
	var soonest gangtermination.Soonest
	for i := 0; i < int(pcs.Spec.Replicas); i++ {
		idx := strconv.Itoa(i)
		var members []*grovev1alpha1.PodClique
		var why []string
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
		if len(why) == 0 {
			continue
		}
		if training {
			terminated[i] = true
			if err := r.restartOrFail(ctx, pcs, obs, i, members, strings.Join(why, ", ")+" below minAvailable"); err != nil {
				return terminated, 0, err
			}
			if terminal(pcs.Status.Phase) {
				return terminated, 0, nil
			}
			continue
		}
		deleted, err := gangtermination.DeletePodCliques(ctx, r.Client, members)
		if err != nil {
			return terminated, 0, err
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
	return terminated, soonest.After(), nil
}
