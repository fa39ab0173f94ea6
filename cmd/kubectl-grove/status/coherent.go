package status

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/cmd/kubectl-grove/tree"
	"github.com/kubegrove/grove/controllers/operator/coherent"
)

// addCoherentUpdate draws a Coherent update in progress: its scope, and for the replica being
// updated its step (the epochs in flight), what the step waits for, and each changed component's
// Ready capacity at the new and the old revision against its budget.
func addCoherentUpdate(root *tree.Node, v *View) {
	pcs := v.PodCliqueSet
	p := pcs.Status.UpdateProgress
	if pcs.Spec.UpdateStrategy == nil || pcs.Spec.UpdateStrategy.Type != grovev1alpha1.CoherentStrategy || p == nil || p.UpdateEndedAt != nil {
		return
	}
	n := root.Add(fmt.Sprintf("Coherent update since %s: changed standalone cliques %s, scaling groups %s", p.UpdateStartedAt.UTC().Format("15:04:05"),
		orNone(p.InScopeStandalonePodCliques), orNone(p.InScopePodCliqueScalingGroups)))
	for _, u := range p.CurrentlyUpdating {
		r := n.Add(fmt.Sprintf("replica %d: step in flight: epochs %s", u.ReplicaIndex, orNone(u.InFlightEpochs)))
		if m := ptr.Deref(u.Message, ""); m != "" {
			r.Add(m)
		}
		for _, line := range capacities(v, int(u.ReplicaIndex)) {
			r.Add(line)
		}
	}
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return "[" + strings.Join(names, ", ") + "]"
}

// capacities are the changed components' Ready pods (or available replicas) at the new revision
// and at older ones, against replicas − maxUnavailable, as the PodGangMap divides them.
func capacities(v *View, replica int) []string {
	pcs := v.PodCliqueSet
	m := v.Maps[replica]
	if m == nil {
		return nil
	}
	hash := ptr.Deref(pcs.Status.CurrentGenerationHash, "")
	gangs := coherent.Gangs(pcs.Name, replica, m.Spec.Entries)
	current := map[string]bool{}
	for _, g := range gangs {
		current[g.Name] = g.Entry.PodCliqueSetGenerationHash == hash
	}
	p := pcs.Status.UpdateProgress
	var out []string
	for _, c := range pcs.Spec.Template.Cliques {
		if c == nil || !slices.Contains(p.InScopeStandalonePodCliques, c.Name) {
			continue
		}
		name := grovev1alpha1.PodCliqueName(pcs.Name, replica, c.Name)
		var newReady, oldReady int32
		for _, pod := range v.Pods[name] {
			if !podReady(pod) {
				continue
			}
			if current[pod.Labels[grovev1alpha1.LabelPodGang]] {
				newReady++
			} else {
				oldReady++
			}
		}
		replicas := c.Spec.Replicas
		if pclq := v.PodCliques[name]; pclq != nil {
			replicas = pclq.Spec.Replicas
		}
		out = append(out, capacityLine(c.Name, "pods", newReady, oldReady, replicas, budget(c.RollingUpdate, ptr.Deref(c.Spec.MinAvailable, replicas))))
	}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if !slices.Contains(p.InScopePodCliqueScalingGroups, g.Name) {
			continue
		}
		pcsg := grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, replica, g.Name)
		replicas := ptr.Deref(g.Replicas, 1)
		for _, have := range v.Groups {
			if have.Name == pcsg {
				replicas = have.Spec.Replicas
			}
		}
		var newAvail, oldAvail int32
		for j := range replicas {
			gang := coherent.GroupReplicaGang(gangs, g.Name, j)
			if gang == nil || !groupReplicaAvailable(v, pcsg, int(j), g.CliqueNames) {
				continue
			}
			if current[gang.Name] {
				newAvail++
			} else {
				oldAvail++
			}
		}
		out = append(out, capacityLine(g.Name, "replicas", newAvail, oldAvail, replicas, budget(g.RollingUpdate, ptr.Deref(g.MinAvailable, 1))))
	}
	return out
}

func capacityLine(name, unit string, newReady, oldReady, replicas, maxUnavailable int32) string {
	return fmt.Sprintf("%s: %d new + %d old %s Ready of %d (keeps at least %d: maxUnavailable %d)", name, newReady, oldReady, unit, replicas,
		max(replicas-maxUnavailable, 0), maxUnavailable)
}

func budget(ru *grovev1alpha1.RollingUpdateConfiguration, minAvailable int32) int32 {
	if ru != nil && ru.MaxUnavailable != nil {
		return *ru.MaxUnavailable
	}
	return minAvailable
}

// groupReplicaAvailable reports whether every member PodClique of a group replica has its
// minAvailable Ready pods.
func groupReplicaAvailable(v *View, pcsg string, j int, cliques []string) bool {
	for _, c := range cliques {
		pclq := v.PodCliques[grovev1alpha1.ScalingGroupPodCliqueName(pcsg, j, c)]
		if pclq == nil {
			return false
		}
		ready := int32(0)
		for _, pod := range v.Pods[pclq.Name] {
			if podReady(pod) {
				ready++
			}
		}
		if ready < pclq.MinAvailableOrReplicas() {
			return false
		}
	}
	return true
}

func podReady(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue })
}
