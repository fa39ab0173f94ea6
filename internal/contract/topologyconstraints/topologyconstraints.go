// Package topologyconstraints reads what a PodCliqueSet or a PodGang asks of a scheduler — topology
// constraints with their field paths, gang sizes — so each backend judges the same facts when it
// decides what it can honour.
package topologyconstraints

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// Level is where a topology constraint is set.
type Level int

// Levels, broadest first.
const (
	LevelPodCliqueSet Level = iota
	LevelScalingGroup
	LevelClique
)

// Topology is one topology constraint of a PodCliqueSet and where it is set.
type Topology struct {
	Path       *field.Path
	Level      Level
	Constraint *grovev1alpha1.TopologyConstraint
}

// All returns every topology constraint a PodCliqueSet sets: its own, each scaling group's and
// each clique's.
func All(pcs *grovev1alpha1.PodCliqueSet) []Topology {
	tmpl := field.NewPath("spec", "template")
	var out []Topology
	if tc := pcs.Spec.Template.TopologyConstraint; tc != nil {
		out = append(out, Topology{tmpl.Child("topologyConstraint"), LevelPodCliqueSet, tc})
	}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if g.TopologyConstraint != nil {
			out = append(out, Topology{tmpl.Child("podCliqueScalingGroups").Index(i).Child("topologyConstraint"), LevelScalingGroup, g.TopologyConstraint})
		}
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.TopologyConstraint != nil {
			out = append(out, Topology{tmpl.Child("cliques").Index(i).Child("topologyConstraint"), LevelClique, c.TopologyConstraint})
		}
	}
	return out
}

// TopologyName is the PodCliqueSet's topology — the first topologyName any of its constraints
// sets (admission keeps them equal) — and where it is set; "" and nil when none sets one.
func TopologyName(pcs *grovev1alpha1.PodCliqueSet) (string, *field.Path) {
	for _, c := range All(pcs) {
		if n := c.Constraint.TopologyName; n != "" {
			return n, c.Path.Child("topologyName")
		}
	}
	return "", nil
}

// Required is a constraint's required domain, or "".
func Required(tc *grovev1alpha1.TopologyConstraint) string {
	return string(tc.RequiredDomain())
}

// Preferred is a constraint's preferred domain, or "".
func Preferred(tc *grovev1alpha1.TopologyConstraint) string {
	return string(tc.PreferredDomain())
}

// RequiredKey is a PodGang constraint's required node-label key, or "".
func RequiredKey(tc *schedulerv1alpha1.TopologyConstraint) string {
	if tc == nil || tc.PackConstraint == nil || tc.PackConstraint.Required == nil {
		return ""
	}
	return *tc.PackConstraint.Required
}

// PreferredKey is a PodGang constraint's preferred node-label key, or "".
func PreferredKey(tc *schedulerv1alpha1.TopologyConstraint) string {
	if tc == nil || tc.PackConstraint == nil || tc.PackConstraint.Preferred == nil {
		return ""
	}
	return *tc.PackConstraint.Preferred
}

// MaxGangSize is the largest number of pods any PodGang of the PodCliqueSet needs placed
// together: the base gang (standalone cliques plus minAvailable replicas of each scaling group)
// or one scaling-group replica.
func MaxGangSize(pcs *grovev1alpha1.PodCliqueSet) int32 {
	minPods := map[string]int32{}
	for _, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		n := c.Spec.Replicas
		if c.Spec.MinAvailable != nil {
			n = *c.Spec.MinAvailable
		}
		minPods[c.Name] = n
	}
	var base, largest int32
	grouped := map[string]bool{}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		var perReplica int32
		for _, name := range g.CliqueNames {
			grouped[name] = true
			perReplica += minPods[name]
		}
		groupMin := int32(1)
		if g.MinAvailable != nil {
			groupMin = *g.MinAvailable
		}
		base += groupMin * perReplica
		largest = max(largest, perReplica)
	}
	for name, n := range minPods {
		if !grouped[name] {
			base += n
		}
	}
	return max(base, largest)
}

// RefuseRequired refuses every required pack constraint of a PodCliqueSet, naming its path,
// for a scheduler that cannot keep a gang within a topology domain (why says so).
func RefuseRequired(pcs *grovev1alpha1.PodCliqueSet, why string) field.ErrorList {
	var errs field.ErrorList
	for _, c := range All(pcs) {
		if r := Required(c.Constraint); r != "" {
			errs = append(errs, field.Invalid(c.Path.Child("pack", "required"), r, why))
		}
	}
	return errs
}

// PreferredIgnored lists every preferred pack constraint of a PodCliqueSet as ignored by
// scheduler, for the SchedulingConstraintsHonored condition.
func PreferredIgnored(pcs *grovev1alpha1.PodCliqueSet, scheduler string) []string {
	var out []string
	for _, c := range All(pcs) {
		if p := Preferred(c.Constraint); p != "" {
			out = append(out, fmt.Sprintf("%s: preferred topology %q is ignored by %s", c.Path.Child("pack", "preferred"), p, scheduler))
		}
	}
	return out
}
