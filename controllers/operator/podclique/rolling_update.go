package podclique

import (
	corev1 "k8s.io/api/core/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// rollingVictims picks the outdated pods (older template hash) to delete now under
// RollingRecreate. Outdated pods that are not Ready go at once: they serve nothing. Ready ones go
// one at a time, and only when every other pod exists and every pod already on the new template
// is Ready, so the clique drops at most one Ready pod below its full size at any moment — below
// minAvailable only when replicas equals minAvailable and it cannot be avoided. The choice is made
// from the pods alone, so a restarted operator continues the same rollout.
func rollingVictims(pclq *grovev1alpha1.PodClique, active, alreadyDeleting []*corev1.Pod, hash string) []*corev1.Pod {
	skip := map[string]bool{}
	for _, p := range alreadyDeleting {
		skip[p.Name] = true
	}
	var victims, readyOutdated []*corev1.Pod
	settled := len(active)-len(alreadyDeleting) == int(pclq.Spec.Replicas)
	for _, p := range active {
		if skip[p.Name] {
			continue
		}
		ready := podCondition(p, corev1.PodReady)
		switch {
		case p.Labels[grovev1alpha1.LabelPodTemplateHash] == hash:
			if !ready {
				settled = false
			}
		case ready:
			readyOutdated = append(readyOutdated, p)
		default:
			victims = append(victims, p)
		}
	}
	if len(victims) == 0 && settled && len(readyOutdated) > 0 {
		victims = append(victims, highestIndex(readyOutdated))
	}
	return victims
}

func highestIndex(pods []*corev1.Pod) *corev1.Pod {
	best := pods[0]
	for _, p := range pods[1:] {
		i, _ := podIndex(p)
		b, _ := podIndex(best)
		if i > b {
			best = p
		}
	}
	return best
}
