package podcliquescalinggroup

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// replicasToUpdate decides which group replicas take the new template now, under RollingRecreate
// (upstream's per-component budget): a group replica is the unit, replaced whole. Replicas
// already at the template, and outdated ones known not to be available anyway (Pending, breached,
// still starting), go at once — they use no budget, so an update that would fix them is never
// stuck behind them. Available outdated replicas go lowest index first while the group keeps at
// least replicas − maxUnavailable available replicas; a replica being replaced counts as
// unavailable until every member clique has minAvailable Ready pods again. A replica whose
// PodCliques' status does not describe their spec yet is not known either way: it counts as
// unavailable and waits (a template change that lands while an earlier one is being handed out
// would otherwise take it, Ready pods and all, beside the replica whose turn it is). Nor is one
// whose status says it is down while its pods (readyPods, by PodClique) say every member clique
// has minAvailable Ready: a status written just before its pods became Ready. Both count as
// unavailable and wait. Under OnDelete and for Training every replica takes the template at
// once (its pods are not rolled).
func replicasToUpdate(pcsg *grovev1alpha1.PodCliqueScalingGroup, want, have map[string]*grovev1alpha1.PodClique, readyPods map[string]int32) map[string]bool {
	type replica struct{ outdated, available, unknown, podsUp bool }
	replicas := map[string]*replica{}
	for j := 0; j < int(pcsg.Spec.Replicas); j++ {
		replicas[strconv.Itoa(j)] = &replica{available: true, podsUp: readyPods != nil}
	}
	for name, w := range want {
		j := w.Labels[grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex]
		r := replicas[j]
		if r == nil {
			continue
		}
		h := have[name]
		if h == nil {
			r.available, r.podsUp = false, false
			continue
		}
		if h.Spec.PodCliqueSetGenerationHash != w.Spec.PodCliqueSetGenerationHash {
			r.outdated = true
		}
		// A PodClique whose status does not describe its spec yet (just handed a template) is not
		// known to be available: counting its old Ready pods would let a second replica go while
		// the first is being replaced.
		if ptr.Deref(h.Status.ObservedGeneration, -1) != h.Generation {
			r.available, r.unknown = false, true
		}
		// Nor is one whose Ready pods may still be of the old template (a status written before
		// its outdated pods were deleted), or that has fewer than minAvailable Ready pods.
		if h.Status.UpdatedReplicas < h.Spec.Replicas || (h.Spec.Replicas > 0 && h.Status.ReadyReplicas < h.MinAvailableOrReplicas()) {
			r.available = false
		}
		if h.Spec.Replicas > 0 && readyPods[name] < h.MinAvailableOrReplicas() {
			r.podsUp = false
		}
	}
	allow := map[string]bool{}
	rolling := pcsg.Spec.UpdateStrategy != grovev1alpha1.OnDeleteStrategy && !pcsg.Spec.Training()
	unavailable := 0
	var candidates []int
	for j, r := range replicas {
		if !r.available {
			unavailable++
		}
		switch {
		case !rolling || !r.outdated || (!r.available && !r.unknown && !r.podsUp):
			allow[j] = true
		case !r.available:
			// its status lags its spec or its pods: it waits, counted as unavailable, until the
			// status catches up (a pass or two)
		default:
			idx, _ := strconv.Atoi(j)
			candidates = append(candidates, idx)
		}
	}
	slices.Sort(candidates)
	budget := 1
	if ru := pcsg.Spec.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		budget = int(*ru.MaxUnavailable)
	}
	for _, idx := range candidates[:max(0, min(len(candidates), budget-unavailable))] {
		allow[strconv.Itoa(idx)] = true
	}
	return allow
}

// trackProgress keeps updateProgress.lastProgressedAt and the UpdateInProgress condition: the
// update moved forward when more PodCliques run the new revision than before (before is the
// count the stored status had for the same revision); Unknown/ProgressDeadlineExceeded once
// progressDeadline passed without that. It returns when the deadline runs out.
func trackProgress(st *grovev1alpha1.PodCliqueScalingGroupStatus, pcsg *grovev1alpha1.PodCliqueScalingGroup, before int32, now metav1.Time) time.Duration {
	cond := metav1.Condition{Type: grovev1alpha1.ConditionUpdateInProgress, Status: metav1.ConditionFalse,
		Reason: grovev1alpha1.ReasonNoActiveUpdate, Message: "No rolling update is in progress", ObservedGeneration: pcsg.Generation}
	var after time.Duration
	p := st.UpdateProgress
	switch {
	case p == nil:
	case p.UpdateEndedAt != nil:
		p.LastProgressedAt = nil
	default:
		if p.LastProgressedAt == nil || p.UpdatedPodCliquesCount > before {
			p.LastProgressedAt = ptr.To(now)
		}
		cond.Status, cond.Reason = metav1.ConditionTrue, grovev1alpha1.ReasonProgressing
		cond.Message = fmt.Sprintf("Rolling update is in progress: %d of %d PodCliques run the new template, %d of %d replicas available",
			p.UpdatedPodCliquesCount, p.TotalPodCliquesCount, st.AvailableReplicas, pcsg.Spec.Replicas)
		if ru := pcsg.Spec.RollingUpdate; ru != nil && ru.ProgressDeadline != nil {
			left := p.LastProgressedAt.Add(ru.ProgressDeadline.Duration).Sub(now.Time)
			if left <= 0 {
				cond.Status, cond.Reason = metav1.ConditionUnknown, grovev1alpha1.ReasonProgressDeadlineExceeded
				cond.Message = fmt.Sprintf("no progress within progressDeadline %s: %d of %d PodCliques run the new template, %d of %d replicas available",
					ru.ProgressDeadline.Duration, p.UpdatedPodCliquesCount, p.TotalPodCliquesCount, st.AvailableReplicas, pcsg.Spec.Replicas)
			} else {
				after = left
			}
		}
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return after
}
