package podcliquescalinggroup

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/gangtermination"
)

// gangTerminate applies gang termination inside the group: a group replica is breached when one
// of its PodCliques is. While the group keeps minAvailable healthy replicas, breached replicas
// whose delay expired are recycled — recorded in status.recoveringReplicas, then their PodCliques
// deleted, to be recreated. Below minAvailable the group reports MinAvailableBreached=True and
// leaves the decision to the PodCliqueSet, which terminates the whole PodCliqueSet replica. It
// returns the group condition, the replicas terminated now, the replicas still recovering, and
// when to look again.
func (r *Reconciler) gangTerminate(ctx context.Context, pcsg *grovev1alpha1.PodCliqueScalingGroup, have map[string]*grovev1alpha1.PodClique) (metav1.Condition, map[string]bool, []int32, time.Duration, error) {
	delay := time.Duration(0)
	if pcsg.Spec.TerminationDelay != nil {
		delay = pcsg.Spec.TerminationDelay.Duration
	}
	h := assessReplicas(pcsg, have, delay, r.clock().Now())
	min := pcsg.Spec.EffectiveMinAvailable()
	training := pcsg.Spec.Training()
	if training {
		// A Training breach restarts (or fails) the whole PodCliqueSet replica, counted against
		// one budget, so the group never recycles a replica on its own.
		min = pcsg.Spec.Replicas
	}
	cond := metav1.Condition{
		Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionFalse, Reason: grovev1alpha1.ReasonSufficientAvailableReplicas,
		Message: fmt.Sprintf("%d of %d replicas healthy, minAvailable %d", h.healthy, pcsg.Spec.Replicas, min), ObservedGeneration: pcsg.Generation,
	}
	if len(h.recovering) > 0 {
		cond.Message += fmt.Sprintf("; recycled and not yet available again: %v", h.recovering)
	}
	switch {
	case pcsg.Spec.Replicas == 0:
		cond.Reason, cond.Message = grovev1alpha1.ReasonIdle, "0 replicas: idle, never breached"
		return cond, map[string]bool{}, nil, h.soonest.After(), nil
	case h.healthy < min:
		cond.Status, cond.Reason = metav1.ConditionTrue, grovev1alpha1.ReasonInsufficientAvailableReplicas
		cond.Message += "; the PodCliqueSet decides on its replica"
	}
	terminated := map[string]bool{}
	if pcsg.Spec.TerminationDelay == nil || h.healthy < min || training || len(h.expired) == 0 {
		return cond, terminated, h.recovering, h.soonest.After(), nil
	}
	// Record the replicas about to be recycled before deleting anything: a restarted operator
	// then still counts them as unhealthy until they are available again.
	recovering := sets.New(h.recovering...)
	for _, j := range h.expired {
		idx, _ := strconv.Atoi(j)
		recovering.Insert(int32(idx))
	}
	if err := r.recordRecovering(ctx, pcsg, sets.List(recovering)); err != nil {
		return cond, terminated, h.recovering, 0, err
	}
	for _, j := range h.expired {
		deleted, err := gangtermination.DeletePodCliques(ctx, r.Client, h.byReplica[j])
		if err != nil {
			return cond, terminated, sets.List(recovering), 0, err
		}
		terminated[j] = true
		if deleted {
			log.FromContext(ctx).Info("gang termination: group replica terminated, its PodCliques are recreated", "groupReplica", j,
				"reason", "a PodClique stayed below minAvailable for longer than terminationDelay", "terminationDelay", delay, "healthyReplicas", h.healthy, "minAvailable", min)
			gangtermination.Terminations.WithLabelValues(gangtermination.LevelPodCliqueScalingGroup).Inc()
			r.Recorder.Eventf(pcsg, nil, corev1.EventTypeWarning, "GangTerminated", "Terminate",
				"replica %s stayed below minAvailable for more than %s: its PodCliques are recreated", j, delay)
		}
	}
	return cond, terminated, sets.List(recovering), h.soonest.After(), nil
}

// recordRecovering writes status.recoveringReplicas when it changes.
func (r *Reconciler) recordRecovering(ctx context.Context, pcsg *grovev1alpha1.PodCliqueScalingGroup, recovering []int32) error {
	if slices.Equal(pcsg.Status.RecoveringReplicas, recovering) {
		return nil
	}
	pcsg.Status.RecoveringReplicas = recovering
	if err := r.Client.Status().Update(ctx, pcsg); err != nil {
		return err
	}
	log.FromContext(ctx).V(1).Info("recorded group replicas to recycle", "recoveringReplicas", recovering)
	return nil
}

// replicaHealth is what one pass sees of the group's replicas.
type replicaHealth struct {
	// byReplica holds the PodCliques of each group replica below spec.replicas.
	byReplica map[string][]*grovev1alpha1.PodClique
	// healthy counts the replicas that are neither breached nor recovering (one not created
	// yet counts as healthy: it is starting).
	healthy int32
	// expired are the breached replicas whose delay ran out, in order.
	expired []string
	// recovering are the recorded recycled replicas not yet available again.
	recovering []int32
	// soonest is when the next breach's delay runs out.
	soonest gangtermination.Soonest
}

// assessReplicas groups the group's PodCliques by group replica and judges each: a replica is
// breached when one of its PodCliques is; a recorded recycled replica stays unhealthy until every
// member PodClique is back, has been available (its WasAvailable) and is not breached.
func assessReplicas(pcsg *grovev1alpha1.PodCliqueScalingGroup, have map[string]*grovev1alpha1.PodClique, delay time.Duration, now time.Time) replicaHealth {
	h := replicaHealth{byReplica: map[string][]*grovev1alpha1.PodClique{}}
	for _, p := range have {
		j := p.Labels[grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex]
		if idx, err := strconv.Atoi(j); err == nil && idx < int(pcsg.Spec.Replicas) {
			h.byReplica[j] = append(h.byReplica[j], p)
		}
	}
	recorded := sets.New(pcsg.Status.RecoveringReplicas...)
	for j := int32(0); j < pcsg.Spec.Replicas; j++ {
		pclqs := h.byReplica[strconv.Itoa(int(j))]
		breached, back := false, len(pclqs) == len(pcsg.Spec.CliqueNames)
		for _, p := range pclqs {
			if b, remaining := gangtermination.Remaining(p.Status.Conditions, delay, now); b {
				breached = true
				if remaining <= 0 {
					h.expired = append(h.expired, strconv.Itoa(int(j)))
				} else {
					h.soonest.Add(remaining)
				}
			}
			if !p.DeletionTimestamp.IsZero() || (!p.Status.WasAvailable && p.Spec.Replicas > 0) {
				back = false // an idle member (0 replicas) is never available, and needs not be
			}
		}
		recovering := recorded.Has(j) && (breached || !back)
		if recovering {
			h.recovering = append(h.recovering, j)
		}
		if !breached && !recovering {
			h.healthy++
		}
	}
	h.expired = slices.Compact(h.expired)
	return h
}
