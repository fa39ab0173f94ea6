package podclique

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// maxUnavailable is the clique's budget during a rolling update: its rollingUpdate's, 1 when
// unset (upstream's default); unlimited (0 here) for a member of a scaling group without one,
// whose group replaces the whole group replica at once and paces the replicas itself.
func maxUnavailable(pclq *grovev1alpha1.PodClique) (int, bool) {
	if ru := pclq.Spec.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		return int(*ru.MaxUnavailable), true
	}
	if pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] != "" {
		return 0, false
	}
	return 1, true
}

// rollingVictims picks the outdated pods (older template hash) to delete now under
// RollingRecreate. Outdated pods that are not Ready go at once: they serve nothing and already
// count as unavailable (so Pending pods never block the update that would fix them). Ready ones
// go, highest index first, only while the clique keeps at least replicas − maxUnavailable Ready
// pods: missing pods, pods not yet Ready at the new template and pods being deleted all count
// as unavailable, so a replacement counts only once it is Ready. The choice is made from the
// pods alone, so a restarted operator continues the same rollout.
func rollingVictims(pclq *grovev1alpha1.PodClique, active, alreadyDeleting []*corev1.Pod, hash string) []*corev1.Pod {
	skip := map[string]bool{}
	for _, p := range alreadyDeleting {
		skip[p.Name] = true
	}
	var victims, readyOutdated []*corev1.Pod
	ready := 0
	for _, p := range active {
		if skip[p.Name] {
			continue
		}
		isReady := podCondition(p, corev1.PodReady)
		if isReady {
			ready++
		}
		switch {
		case p.Labels[grovev1alpha1.LabelPodTemplateHash] == hash:
		case isReady:
			readyOutdated = append(readyOutdated, p)
		default:
			victims = append(victims, p)
		}
	}
	budget, limited := maxUnavailable(pclq)
	allowed := len(readyOutdated)
	if limited {
		allowed = min(allowed, budget-(int(pclq.Spec.Replicas)-ready))
	}
	if allowed <= 0 {
		return victims
	}
	sort.Slice(readyOutdated, func(i, j int) bool {
		a, _ := podIndex(readyOutdated[i])
		b, _ := podIndex(readyOutdated[j])
		return a > b
	})
	return append(victims, readyOutdated[:allowed]...)
}

// trackUpdate keeps status.updateProgress and the UpdateInProgress condition (upstream Grove's):
// an update opens when pods of another template exist, or when the template the clique last
// realised (current, the stored status.currentPodTemplateHash) is not hash — the pass that deleted
// every outdated pod wrote no status, and the next sees none of them (at once ended under
// OnDelete, where users replace the pods), moves forward each time one more pod at the new template is Ready
// (lastProgressedAt), and ends once no outdated pod is left and every desired pod at the new
// template is Ready. It returns when the progress deadline runs out, so the caller looks again.
// Times come from now and are written only when something moves, so a clique at rest writes
// nothing.
func trackUpdate(pclq *grovev1alpha1.PodClique, st *grovev1alpha1.PodCliqueStatus, outdated, updatedReady int32, hash string, current *string, now metav1.Time) time.Duration {
	p := st.UpdateProgress
	changed := outdated > 0 || (current != nil && *current != hash)
	if changed && (p == nil || p.PodTemplateHash != hash) && !isTraining(pclq) {
		p = &grovev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: now, PodCliqueSetGenerationHash: pclq.Spec.PodCliqueSetGenerationHash,
			PodTemplateHash: hash, LastProgressedAt: ptr.To(now)}
		if pclq.Spec.UpdateStrategy == grovev1alpha1.OnDeleteStrategy {
			p.UpdateEndedAt, p.LastProgressedAt = ptr.To(now), nil
		}
		st.UpdateProgress = p
	}
	cond := metav1.Condition{Type: grovev1alpha1.ConditionUpdateInProgress, Status: metav1.ConditionFalse,
		Reason: grovev1alpha1.ReasonNoActiveUpdate, Message: "No rolling update is in progress", ObservedGeneration: pclq.Generation}
	var after time.Duration
	if p != nil && p.UpdateEndedAt == nil {
		if updatedReady > p.UpdatedReadyReplicas {
			p.LastProgressedAt = ptr.To(now)
		}
		p.UpdatedReadyReplicas = updatedReady
		if outdated == 0 && updatedReady >= pclq.Spec.Replicas {
			p.UpdateEndedAt, p.LastProgressedAt = ptr.To(now), nil
		}
	}
	if p != nil && p.UpdateEndedAt == nil {
		cond.Status, cond.Reason = metav1.ConditionTrue, grovev1alpha1.ReasonProgressing
		cond.Message = fmt.Sprintf("Rolling update is in progress: %d of %d pods at the new template are Ready", updatedReady, pclq.Spec.Replicas)
		if d := progressDeadline(pclq); d > 0 && p.LastProgressedAt != nil {
			left := p.LastProgressedAt.Add(d).Sub(now.Time)
			if left <= 0 {
				cond.Status, cond.Reason = metav1.ConditionUnknown, grovev1alpha1.ReasonProgressDeadlineExceeded
				cond.Message = fmt.Sprintf("no pod at the new template became Ready within progressDeadline %s: %d of %d are Ready", d, updatedReady, pclq.Spec.Replicas)
			} else {
				after = left
			}
		}
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	return after
}

func progressDeadline(pclq *grovev1alpha1.PodClique) time.Duration {
	if ru := pclq.Spec.RollingUpdate; ru != nil && ru.ProgressDeadline != nil {
		return ru.ProgressDeadline.Duration
	}
	return 0
}
