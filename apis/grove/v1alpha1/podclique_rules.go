package v1alpha1

import "k8s.io/apimachinery/pkg/api/meta"

// MinAvailableOrReplicas is the clique's effective minAvailable: spec.minAvailable (spec.replicas
// where it is not set), but never more than a positive spec.replicas. A PodClique scaled below
// its minAvailable (kubectl scale, as upstream Grove admits it) runs and gangs the pods it has.
func (p *PodClique) MinAvailableOrReplicas() int32 {
	if p.Spec.MinAvailable == nil {
		return p.Spec.Replicas
	}
	if p.Spec.Replicas > 0 {
		return min(*p.Spec.MinAvailable, p.Spec.Replicas)
	}
	return *p.Spec.MinAvailable
}

// EffectiveMinAvailable is the group's minAvailable (1 when unset), never more than a positive
// spec.replicas: a group scaled below its minAvailable (upstream Grove's RS-1 scales one from 2
// to 1 with minAvailable 2) gangs and guards the replicas it has.
func (s *PodCliqueScalingGroupSpec) EffectiveMinAvailable() int32 {
	m := int32(1)
	if s.MinAvailable != nil {
		m = *s.MinAvailable
	}
	if s.Replicas > 0 {
		return min(m, s.Replicas)
	}
	return m
}

// UpForDependents is the startup-ordering rule: a PodClique's dependents (those naming it in
// spec.startsAfter) may start once it has minAvailable ready pods or, for a Training clique,
// once its pods all exited 0 (Succeeded=True: none is Ready any more, and some dependents wait
// for exactly that). A dependent naming it in spec.startsAfterSucceeded waits for success only.
func (p *PodClique) UpForDependents(mustSucceed bool) bool {
	if p.Spec.Replicas == 0 {
		return true // idle: it holds back no clique that starts after it
	}
	succeeded := meta.IsStatusConditionTrue(p.Status.Conditions, ConditionSucceeded)
	if mustSucceed {
		return succeeded
	}
	return succeeded || p.Status.ReadyReplicas >= p.MinAvailableOrReplicas()
}

// Role is the clique's roleName, or its name when the roleName is left out (as upstream Grove's
// samples do).
func (t *PodCliqueTemplateSpec) Role() string {
	if t.Spec.RoleName != "" {
		return t.Spec.RoleName
	}
	return t.Name
}
