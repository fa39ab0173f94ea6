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
	"github.com/kubegrove/grove/controllers/operator/children"
)

// replicasToUpdate decides which group replicas take the new template now, under RollingRecreate
// (upstream's per-component budget): a group replica is the unit, replaced whole. Replicas
// already at the template, and outdated ones known to be down anyway (a member clique missing,
// short of pods, or short of Ready pods — Pending, breached, still starting), go at once and use
// no budget, so an update that would fix them is never stuck behind them. Available outdated
// replicas go lowest index first while the group keeps at least replicas − maxUnavailable
// available replicas; a replica being replaced counts as unavailable until every member clique
// has minAvailable Ready pods again. A replica whose status lags — it does not describe the
// PodClique's spec yet, or counts fewer Ready pods than readyPods (the pods, by PodClique) shows —
// counts as unavailable and waits for the status: taken for down, it would roll beside the
// replica whose turn it is. readyPods is nil when no status needed checking (readsPods). Under
// OnDelete and for Training every replica takes the template at once (its pods are not rolled).
func replicasToUpdate(pcsg *grovev1alpha1.PodCliqueScalingGroup, want, have map[string]*grovev1alpha1.PodClique, readyPods map[string]int32) map[string]bool {
	type replica struct{ outdated, available, down bool }
	replicas := map[string]*replica{}
	for j := 0; j < int(pcsg.Spec.Replicas); j++ {
		replicas[strconv.Itoa(j)] = &replica{available: true}
	}
	for name, w := range want {
		j := w.Labels[grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex]
		r := replicas[j]
		if r == nil {
			continue
		}
		h := have[name]
		if h == nil {
			r.available, r.down = false, true
			continue
		}
		if h.Spec.PodCliqueSetGenerationHash != w.Spec.PodCliqueSetGenerationHash {
			r.outdated = true
		}
		switch {
		case ptr.Deref(h.Status.ObservedGeneration, -1) != h.Generation:
			// Just handed a template: its old Ready pods say nothing of the new one.
			r.available = false
		case h.Status.UpdatedReplicas < h.Spec.Replicas:
			// Pods missing, or Ready pods of an older template about to be replaced.
			r.available, r.down = false, true
		case readyShort(h):
			r.available = false
			if readyPods == nil || readyPods[name] < h.MinAvailableOrReplicas() {
				r.down = true
			}
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
		case !rolling || !r.outdated || r.down:
			allow[j] = true
		case !r.available:
			// its status lags: counted as unavailable, it waits a pass or two for the status
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

// readyShort reports a PodClique whose status, describing its spec and all its pods at its
// template, counts fewer than minAvailable Ready pods.
func readyShort(h *grovev1alpha1.PodClique) bool {
	return ptr.Deref(h.Status.ObservedGeneration, -1) == h.Generation && h.Status.UpdatedReplicas >= h.Spec.Replicas &&
		h.Spec.Replicas > 0 && h.Status.ReadyReplicas < h.MinAvailableOrReplicas()
}

// readsPods reports whether the rollout must see the group's pods: it reached the group, which
// rolls, and an outdated PodClique's status says it is short of Ready pods — true, or written
// just before they became Ready.
func readsPods(pcs *grovev1alpha1.PodCliqueSet, pcsg *grovev1alpha1.PodCliqueScalingGroup, have map[string]*grovev1alpha1.PodClique) bool {
	hash := children.GenerationHash(pcs)
	if pcsg.Spec.UpdateStrategy == grovev1alpha1.OnDeleteStrategy || pcsg.Spec.Training() || pcsg.Spec.PodCliqueSetGenerationHash != hash {
		return false
	}
	for _, h := range have {
		if h.Spec.PodCliqueSetGenerationHash != hash && readyShort(h) {
			return true
		}
	}
	return false
}
