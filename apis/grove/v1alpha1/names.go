package v1alpha1

import (
	"fmt"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Names of the objects the operator creates. They are part of the API: users address pods by
// hostname, and the trainer builds endpoints from them.

// ReplicaIndexOf is the PodCliqueSet replica an object the operator made belongs to, read from its
// LabelPodCliqueSetReplicaIndex label; false when the label is missing or not a number (the
// object is not one of a replica's).
func ReplicaIndexOf(obj metav1.Object) (int, bool) {
	i, err := strconv.Atoi(obj.GetLabels()[LabelPodCliqueSetReplicaIndex])
	return i, err == nil
}

// PodCliqueName is the name of a standalone PodClique of a PodCliqueSet replica.
func PodCliqueName(pcs string, replica int, clique string) string {
	return fmt.Sprintf("%s-%d-%s", pcs, replica, clique)
}

// PodCliqueScalingGroupName is the name of a PodCliqueScalingGroup of a PodCliqueSet replica.
func PodCliqueScalingGroupName(pcs string, replica int, group string) string {
	return fmt.Sprintf("%s-%d-%s", pcs, replica, group)
}

// ScalingGroupPodCliqueName is the name of a PodClique of one PodCliqueScalingGroup replica.
func ScalingGroupPodCliqueName(pcsg string, groupReplica int, clique string) string {
	return fmt.Sprintf("%s-%d-%s", pcsg, groupReplica, clique)
}

// HeadlessServiceName is the headless Service (and pod subdomain) of a PodCliqueSet replica.
func HeadlessServiceName(pcs string, replica int) string {
	return fmt.Sprintf("%s-%d", pcs, replica)
}

// BasePodGangName is the PodGang holding a replica's standalone cliques and the first
// minAvailable replicas of each scaling group.
func BasePodGangName(pcs string, replica int) string {
	return fmt.Sprintf("%s-%d", pcs, replica)
}

// ScaledPodGangName is the PodGang of scaling-group replica groupReplica (>= minAvailable).
func ScaledPodGangName(pcsg string, groupReplica, minAvailable int) string {
	return fmt.Sprintf("%s-%d", pcsg, groupReplica-minAvailable)
}

// PodGangMapName is the PodGangMap of a PodCliqueSet replica.
func PodGangMapName(pcs string, replica int) string {
	return fmt.Sprintf("%s-%d", pcs, replica)
}

// AnchorPodGangName is the PodGang of a PodGangMap's Anchor entry.
func AnchorPodGangName(pcs string, replica int, epoch string) string {
	return fmt.Sprintf("%s-%d-%s", pcs, replica, epoch)
}

// EntryPodGangName is the PodGang of one scaling-group replica of a PodGangMap's Tail or
// ScaleOut entry; group is the scaling group's name in the template.
func EntryPodGangName(pcs string, replica int, epoch, group string, groupReplica int) string {
	return fmt.Sprintf("%s-%d-%s-%s-%d", pcs, replica, epoch, group, groupReplica)
}

// PodHostname is a pod's hostname and name: stable per index, so DNS names survive restarts.
func PodHostname(pclq string, index int) string {
	return fmt.Sprintf("%s-%d", pclq, index)
}

// GeneratedNames lists the names, by kind, the operator gives the children of a PodCliqueSet at
// its template's sizes: headless Services, PodCliques, PodCliqueScalingGroups and PodGangs
// (scaling groups default to 1 replica and minAvailable 1).
func GeneratedNames(pcs *PodCliqueSet) map[string][]string {
	names := map[string][]string{}
	add := func(kind, name string) { names[kind] = append(names[kind], name) }
	inGroup := map[string]bool{}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		for _, c := range g.CliqueNames {
			inGroup[c] = true
		}
	}
	for i := 0; i < int(pcs.Spec.Replicas); i++ {
		add("Service", HeadlessServiceName(pcs.Name, i))
		add("PodGang", BasePodGangName(pcs.Name, i))
		for _, c := range pcs.Spec.Template.Cliques {
			if c != nil && !inGroup[c.Name] {
				add("PodClique", PodCliqueName(pcs.Name, i, c.Name))
			}
		}
		for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
			pcsg := PodCliqueScalingGroupName(pcs.Name, i, g.Name)
			add("PodCliqueScalingGroup", pcsg)
			replicas, minAvailable := int32(1), int32(1)
			if g.Replicas != nil {
				replicas = *g.Replicas
			}
			if g.MinAvailable != nil {
				minAvailable = *g.MinAvailable
			}
			for j := 0; j < int(replicas); j++ {
				for _, c := range g.CliqueNames {
					add("PodClique", ScalingGroupPodCliqueName(pcsg, j, c))
				}
				if j >= int(minAvailable) {
					add("PodGang", ScaledPodGangName(pcsg, j, int(minAvailable)))
				}
			}
		}
	}
	return names
}

// GeneratedNameCount is how many names GeneratedNames lists, computed without listing them: a
// PodCliqueSet at its size limits would have billions.
func GeneratedNameCount(pcs *PodCliqueSet) int64 {
	inGroup := map[string]bool{}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		for _, c := range g.CliqueNames {
			inGroup[c] = true
		}
	}
	perReplica := int64(2) // the headless Service and the base PodGang
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && !inGroup[c.Name] {
			perReplica++
		}
	}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		replicas, minAvailable := int64(1), int64(1)
		if g.Replicas != nil {
			replicas = int64(*g.Replicas)
		}
		if g.MinAvailable != nil {
			minAvailable = int64(*g.MinAvailable)
		}
		perReplica += 1 + replicas*int64(len(g.CliqueNames)) + max(0, replicas-minAvailable)
	}
	return int64(pcs.Spec.Replicas) * perReplica
}

// NamesMayOverlap reports whether the children of two PodCliqueSets in one namespace can ever
// be given the same names: every generated name starts with `<pcs>-<replica index>`, so only a
// PodCliqueSet named like another's children (`a` and `a-0-g`) can.
func NamesMayOverlap(a, b string) bool {
	return startsWithReplicaOf(a, b) || startsWithReplicaOf(b, a)
}

// startsWithReplicaOf reports whether name begins with `<pcs>-<digits>` followed by "-" or its end.
func startsWithReplicaOf(name, pcs string) bool {
	rest, ok := strings.CutPrefix(name, pcs+"-")
	if !ok {
		return false
	}
	digits := 0
	for digits < len(rest) && rest[digits] >= '0' && rest[digits] <= '9' {
		digits++
	}
	return digits > 0 && (digits == len(rest) || rest[digits] == '-')
}
