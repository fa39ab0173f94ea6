package backends

import (
	corev1 "k8s.io/api/core/v1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
)

// podSchedulerNames maps each backend to the pod schedulerName of its scheduler.
var podSchedulerNames = map[configv1alpha1.SchedulerName]string{
	configv1alpha1.SchedulerNameKube:    corev1.DefaultSchedulerName,
	configv1alpha1.SchedulerNameKAI:     "kai-scheduler",
	configv1alpha1.SchedulerNamePlugins: "scheduler-plugins-scheduler",
}

// PodSchedulerName returns the pod schedulerName a backend's pods carry.
func PodSchedulerName(backend configv1alpha1.SchedulerName) string {
	return podSchedulerNames[backend]
}

// ForPodScheduler returns the backend serving a pod schedulerName ("" means kube-scheduler), and
// whether this project knows one.
func ForPodScheduler(schedulerName string) (configv1alpha1.SchedulerName, bool) {
	if schedulerName == "" {
		return configv1alpha1.SchedulerNameKube, true
	}
	for backend, name := range podSchedulerNames {
		if name == schedulerName {
			return backend, true
		}
	}
	return "", false
}
