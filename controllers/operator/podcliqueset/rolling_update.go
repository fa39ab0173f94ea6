package podcliqueset

import (
	"strconv"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
)

// rollout decides, replica by replica, which replicas may take the newest template. With
// RollingRecreate only one replica is rolled at a time: the lowest-index replica that is not yet
// at the newest generation hash, or that is but whose pods are not all replaced and available,
// holds the turn and the replicas after it keep their template. Everything is derived from the
// children's spec and status, so a restarted operator resumes the same rollout, and a
// change during a change rolls every replica to the newest template.
type rollout struct {
	hash      string
	rolling   bool
	turnTaken bool
}

func newRollout(pcs *grovev1alpha1.PodCliqueSet) *rollout {
	return &rollout{
		hash: children.GenerationHash(pcs),
		// Training pods run to completion; their template does not roll (admission rejects it).
		rolling: children.UpdateStrategy(pcs) == grovev1alpha1.RollingRecreateStrategy && !children.IsTraining(pcs),
	}
}

// allow reports whether replica i may be updated to the newest template now.
func (ro *rollout) allow(replica int, obs *observed) bool {
	if !ro.rolling {
		return true
	}
	exists, atHash, done := ro.replicaState(replica, obs)
	switch {
	case !exists:
		return true // a new replica is created at the newest template
	case !atHash:
		if ro.turnTaken {
			return false
		}
		ro.turnTaken = true
		return true
	default:
		if !done {
			ro.turnTaken = true
		}
		return true
	}
}

// replicaState reports whether replica i has children, whether all of them carry the newest
// hash, and whether all its pods are of the newest template and its cliques available.
func (ro *rollout) replicaState(replica int, obs *observed) (exists, atHash, done bool) {
	idx := strconv.Itoa(replica)
	atHash, done = true, true
	for _, pclq := range obs.cliques {
		if pclq.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] != idx {
			continue
		}
		exists = true
		if pclq.Spec.PodCliqueSetGenerationHash != ro.hash {
			atHash, done = false, false
			continue
		}
		if !cliqueRolledOut(pclq) {
			done = false
		}
	}
	for _, pcsg := range obs.groups {
		if pcsg.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == idx && pcsg.Spec.PodCliqueSetGenerationHash != ro.hash {
			exists, atHash, done = true, false, false
		}
	}
	return exists, atHash, done
}

// cliqueRolledOut reports whether a PodClique's pods all run its current template and enough of
// them are ready.
func cliqueRolledOut(pclq *grovev1alpha1.PodClique) bool {
	st := pclq.Status
	return st.ObservedGeneration != nil && *st.ObservedGeneration == pclq.Generation &&
		st.UpdatedReplicas == pclq.Spec.Replicas && st.Replicas == pclq.Spec.Replicas &&
		(pclq.Spec.Replicas == 0 || st.ReadyReplicas >= minAvailable(pclq)) // an idle clique has nothing to roll
}

// replicaRolledOut reports whether replica i is entirely at the newest template.
func (ro *rollout) replicaRolledOut(replica int, obs *observed) bool {
	exists, atHash, done := ro.replicaState(replica, obs)
	return exists && atHash && done
}
