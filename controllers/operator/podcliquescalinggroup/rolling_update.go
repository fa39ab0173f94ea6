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
// already at the template, and outdated ones that are not available anyway (Pending, breached,
// still starting), go at once — they use no budget, so an update that would fix them is never
// stuck behind them. Available outdated replicas go lowest index first while the group keeps at
// least replicas − maxUnavailable available replicas; a replica being replaced counts as
// unavailable until every member clique has minAvailable Ready pods again. Under OnDelete and
// for Training every replica takes the template at once (its pods are not rolled).
func replicasToUpdate(pcsg *grovev1alpha1.PodCliqueScalingGroup, want, have map[string]*grovev1alpha1.PodClique) map[string]bool {
	type replica struct{ outdated, available bool }
	replicas := map[string]*replica{}
	for j := 0; j < int(pcsg.Spec.Replicas); j++ {
		replicas[strconv.Itoa(j)] = &replica{available: true}
	}
	members := map[string]int{}
	for name, w := range want {
		j := w.Labels[grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex]
		r := replicas[j]
		if r == nil {
			continue
		}
		h := have[name]
		if h == nil {
			r.available = false
			continue
		}
		members[j]++
		if h.Spec.PodCliqueSetGenerationHash != w.Spec.PodCliqueSetGenerationHash {
			r.outdated = true
		}
		// A PodClique whose status does not describe its spec yet (just handed the new
		// template) is not known to be available: counting its old Ready pods would let a
		// second replica go while the first is being replaced.
		// Nor is one whose Ready pods may still be of the old template (a status written before
		// its outdated pods were deleted).
		if ptr.Deref(h.Status.ObservedGeneration, -1) != h.Generation || h.Status.UpdatedReplicas < h.Spec.Replicas ||
			(h.Spec.Replicas > 0 && h.Status.ReadyReplicas < h.MinAvailableOrReplicas()) {
			r.available = false
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
		case !rolling || !r.outdated || !r.available:
			allow[j] = true
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
