package podcliquescalinggroup

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/gangtermination"
)

// gangTerminate applies gang termination inside the group: a group replica is breached when one
// of its PodCliques is. While the group keeps minAvailable healthy replicas, breached replicas
// whose delay expired are recycled — their PodCliques deleted, to be recreated. Below
// minAvailable the group reports MinAvailableBreached=True and leaves the decision to the
// PodCliqueSet, which terminates the whole PodCliqueSet replica. It returns the group condition,
// the replicas terminated now, and when to look again.
func (r *Reconciler) gangTerminate(ctx context.Context, pcsg *grovev1alpha1.PodCliqueScalingGroup, have map[string]*grovev1alpha1.PodClique) (metav1.Condition, map[string]bool, time.Duration, error) {
	delay := time.Duration(0)
	if pcsg.Spec.TerminationDelay != nil {
		delay = pcsg.Spec.TerminationDelay.Duration
	}
	byReplica, healthy, expired, soonest := replicaHealth(pcsg, have, delay, time.Now())
	min := int32(1)
	if pcsg.Spec.MinAvailable != nil {
		min = *pcsg.Spec.MinAvailable
	}
	training := pcsg.Spec.Training()
	if training {
		// A Training breach restarts (or fails) the whole PodCliqueSet replica, counted against
		// one budget, so the group never recycles a replica on its own.
		min = pcsg.Spec.Replicas
	}
	cond := metav1.Condition{
		Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionFalse, Reason: grovev1alpha1.ReasonSufficientAvailableReplicas,
		Message: fmt.Sprintf("%d of %d replicas healthy, minAvailable %d", healthy, pcsg.Spec.Replicas, min), ObservedGeneration: pcsg.Generation,
	}
	switch {
	case pcsg.Spec.Replicas == 0:
		cond.Reason, cond.Message = grovev1alpha1.ReasonIdle, "0 replicas: idle, never breached"
		return cond, map[string]bool{}, soonest.After(), nil
	case healthy < min:
		cond.Status, cond.Reason = metav1.ConditionTrue, grovev1alpha1.ReasonInsufficientAvailableReplicas
		cond.Message += "; the PodCliqueSet decides on its replica"
	}
	terminated := map[string]bool{}
	if pcsg.Spec.TerminationDelay == nil || healthy < min || training {
		return cond, terminated, soonest.After(), nil
	}
	replicas := make([]string, 0, len(expired))
	for j := range expired {
		replicas = append(replicas, j)
	}
	sort.Strings(replicas)
	for _, j := range replicas {
		deleted, err := gangtermination.DeletePodCliques(ctx, r.Client, byReplica[j])
		if err != nil {
			return cond, terminated, 0, err
		}
		terminated[j] = true
		if deleted {
			log.FromContext(ctx).Info("gang termination: group replica terminated, its PodCliques are recreated", "groupReplica", j,
				"reason", "a PodClique stayed below minAvailable for longer than terminationDelay", "terminationDelay", delay, "healthyReplicas", healthy, "minAvailable", min)
			gangtermination.Terminations.WithLabelValues(gangtermination.LevelPodCliqueScalingGroup).Inc()
			r.Recorder.Eventf(pcsg, nil, corev1.EventTypeWarning, "GangTerminated", "Terminate",
				"replica %s stayed below minAvailable for more than %s: its PodCliques are recreated", j, delay)
		}
	}
	return cond, terminated, soonest.After(), nil
}

// replicaHealth groups the group's PodCliques by group replica and counts the healthy replicas
// (a replica is breached when one of its PodCliques is; one not created yet counts as healthy).
// expired are the breached replicas whose delay ran out; soonest is when the next one does.
func replicaHealth(pcsg *grovev1alpha1.PodCliqueScalingGroup, have map[string]*grovev1alpha1.PodClique, delay time.Duration, now time.Time) (
	byReplica map[string][]*grovev1alpha1.PodClique, healthy int32, expired map[string]bool, soonest gangtermination.Soonest) {
	byReplica = map[string][]*grovev1alpha1.PodClique{}
	for _, p := range have {
		j := p.Labels[grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex]
		if idx, err := strconv.Atoi(j); err == nil && idx < int(pcsg.Spec.Replicas) {
			byReplica[j] = append(byReplica[j], p)
		}
	}
	healthy = pcsg.Spec.Replicas - int32(len(byReplica))
	expired = map[string]bool{}
	for j, pclqs := range byReplica {
		breached := false
		for _, p := range pclqs {
			if b, remaining := gangtermination.Remaining(p.Status.Conditions, delay, now); b {
				breached = true
				if remaining <= 0 {
					expired[j] = true
				} else {
					soonest.Add(remaining)
				}
			}
		}
		if !breached {
			healthy++
		}
	}
	return byReplica, healthy, expired, soonest
}
