package podcliquescalinggroup

import (
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/gangtermination"
)

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
