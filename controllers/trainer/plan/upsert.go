package plan

import (
	corev1 "k8s.io/api/core/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// ancestorOf is the ancestor label of a replicated job's Job template.
func ancestorOf(rj *jobsetv1alpha2.ReplicatedJob) string {
	return rj.Template.Labels[AncestorLabel]
}

// container returns the container called name among a pod's containers.
func container(spec *corev1.PodSpec, name string) *corev1.Container {
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	return nil
}

// containerOrInit looks for the container called name among a pod's containers, then its init
// containers.
func containerOrInit(spec *corev1.PodSpec, name string) *corev1.Container {
	if c := container(spec, name); c != nil {
		return c
	}
	for i := range spec.InitContainers {
		if spec.InitContainers[i].Name == name {
			return &spec.InitContainers[i]
		}
	}
	return nil
}

// replicatedJob returns the replicated job called name.
func replicatedJob(spec *jobsetv1alpha2.JobSetSpec, name string) *jobsetv1alpha2.ReplicatedJob {
	for i := range spec.ReplicatedJobs {
		if spec.ReplicatedJobs[i].Name == name {
			return &spec.ReplicatedJobs[i]
		}
	}
	return nil
}

// upsertEnv replaces variables of the same name in place and appends the others.
func upsertEnv(envs *[]corev1.EnvVar, add ...corev1.EnvVar) {
	for _, e := range add {
		upsert(envs, e, func(a, b corev1.EnvVar) bool { return a.Name == b.Name })
	}
}

// upsertVolume replaces the volume of the same name or appends it.
func upsertVolume(vols *[]corev1.Volume, v corev1.Volume) {
	upsert(vols, v, func(a, b corev1.Volume) bool { return a.Name == b.Name })
}

// upsertVolumeMount replaces the mount at the same path or appends it.
func upsertVolumeMount(mounts *[]corev1.VolumeMount, m corev1.VolumeMount) {
	upsert(mounts, m, func(a, b corev1.VolumeMount) bool { return a.MountPath == b.MountPath })
}

// upsertPort replaces the port with the same number (or the same non-empty name) or appends it.
func upsertPort(ports *[]corev1.ContainerPort, p corev1.ContainerPort) {
	upsert(ports, p, func(a, b corev1.ContainerPort) bool {
		return a.ContainerPort == b.ContainerPort || (b.Name != "" && a.Name == b.Name)
	})
}

func upsert[T any](items *[]T, item T, same func(T, T) bool) {
	for i := range *items {
		if same((*items)[i], item) {
			(*items)[i] = item
			return
		}
	}
	*items = append(*items, item)
}
