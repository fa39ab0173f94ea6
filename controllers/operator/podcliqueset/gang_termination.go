package podcliqueset

import (
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/gangtermination"
)

// expiredBreaches returns replica i's PodCliques and the standalone PodCliques and scaling
// groups of it whose breach outlasted their delay; breaches still within it add their remaining
// time to soonest.
func expiredBreaches(obs *observed, i int, delay time.Duration, now time.Time, soonest *gangtermination.Soonest) (members []*grovev1alpha1.PodClique, why []string) {
	idx := strconv.Itoa(i)
	for _, p := range obs.cliques {
		if p.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] != idx {
			continue
		}
		members = append(members, p)
		if p.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] != "" {
			continue // a scaling group speaks for its PodCliques
		}
		if breached, remaining := gangtermination.Remaining(p.Status.Conditions, delay, now); breached {
			if remaining <= 0 {
				why = append(why, "PodClique "+p.Name)
			} else {
				soonest.Add(remaining)
			}
		}
	}
	for _, g := range obs.groups {
		if g.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] != idx {
			continue
		}
		if !anyBreached(obs, g.Name) {
			// The group's condition is stale: none of its PodCliques now is breached (a restart
			// just replaced them, and the group has not looked at the new ones yet). A group's
			// breach is its PodCliques' breach, never a second failure of its own.
			continue
		}
		d := delay
		if g.Spec.TerminationDelay != nil {
			d = g.Spec.TerminationDelay.Duration
		}
		if breached, remaining := gangtermination.Remaining(g.Status.Conditions, d, now); breached {
			if remaining <= 0 {
				why = append(why, "PodCliqueScalingGroup "+g.Name)
			} else {
				soonest.Add(remaining)
			}
		}
	}
	return members, why
}

// anyBreached reports whether a PodClique of the scaling group is MinAvailableBreached.
func anyBreached(obs *observed, group string) bool {
	for _, p := range obs.cliques {
		if p.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] == group &&
			meta.IsStatusConditionTrue(p.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached) {
			return true
		}
	}
	return false
}

// scaledAway lists the standalone PodCliques among pclqs whose replicas differ from their
// template's: what gang recovery must give back.
func scaledAway(pclqs []*grovev1alpha1.PodClique) []grovev1alpha1.ScaledReplicas {
	var out []grovev1alpha1.ScaledReplicas
	for _, p := range pclqs {
		if p.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] != "" || p.Spec.TemplateReplicas == nil || *p.Spec.TemplateReplicas == p.Spec.Replicas {
			continue // a scaling group keeps its own count; a PodClique at its template's has nothing to restore
		}
		out = append(out, grovev1alpha1.ScaledReplicas{Name: p.Name, Replicas: p.Spec.Replicas, TemplateReplicas: *p.Spec.TemplateReplicas, ReplacedUID: p.UID})
	}
	return out
}

// scaledReplicasFor is the count to give a PodClique created in place of a deleted one, if any:
// the recorded one, unless the template's count changed since (then the template's wins, as it
// does for a PodClique that was never deleted).
func scaledReplicasFor(pcs *grovev1alpha1.PodCliqueSet, want *grovev1alpha1.PodClique) (int32, bool) {
	for _, s := range pcs.Status.ScaledReplicasToRestore {
		if s.Name == want.Name && want.Spec.TemplateReplicas != nil && *want.Spec.TemplateReplicas == s.TemplateReplicas {
			return s.Replicas, true
		}
	}
	return 0, false
}

// restoredScaledReplicas keeps the counts still to give: their PodClique is still wanted and is
// gone, or is still the one that was deleted (or is about to be, in this very pass).
func restoredScaledReplicas(pcs *grovev1alpha1.PodCliqueSet, counts []grovev1alpha1.ScaledReplicas, obs *observed) []grovev1alpha1.ScaledReplicas {
	wanted := map[string]bool{}
	for i := 0; i < int(pcs.Spec.Replicas); i++ {
		for _, c := range standaloneCliques(pcs) {
			wanted[grovev1alpha1.PodCliqueName(pcs.Name, i, c.Name)] = true
		}
	}
	var out []grovev1alpha1.ScaledReplicas
	for _, s := range counts {
		if p := obs.cliques[s.Name]; wanted[s.Name] && (p == nil || p.UID == s.ReplacedUID) {
			out = append(out, s)
		}
	}
	return out
}
