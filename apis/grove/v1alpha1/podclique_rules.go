package v1alpha1

import "k8s.io/apimachinery/pkg/api/meta"

// MinAvailableOrReplicas is spec.minAvailable, or spec.replicas where it is not set.
func (p *PodClique) MinAvailableOrReplicas() int32 {
	if p.Spec.MinAvailable != nil {
		return *p.Spec.MinAvailable
	}
	return p.Spec.Replicas
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
