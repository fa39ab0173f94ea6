package v1alpha1

import "fmt"

// Names of the objects the operator creates. They are part of the API: users address pods by
// hostname, and the trainer builds endpoints from them.

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

// PodHostname is a pod's hostname and name: stable per index, so DNS names survive restarts.
func PodHostname(pclq string, index int) string {
	return fmt.Sprintf("%s-%d", pclq, index)
}
