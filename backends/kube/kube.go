// Package kube is the kube-scheduler backend in its plain mode: pods are scheduled one by one by
// kube-scheduler, so the backend has no objects to create and only names the scheduler.
package kube

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// Name is the backend's name in OperatorConfiguration profiles and the PodGang label.
const Name = "kube-scheduler"

// SchedulerName is the pod schedulerName of kube-scheduler.
const SchedulerName = corev1.DefaultSchedulerName

// PreparePod points a pod at kube-scheduler unless it names a scheduler already.
func PreparePod(pod *corev1.Pod) {
	if pod.Spec.SchedulerName == "" {
		pod.Spec.SchedulerName = SchedulerName
	}
}

// BackendFor returns the backend that serves a pod schedulerName.
func BackendFor(schedulerName string) string {
	switch schedulerName {
	case "", SchedulerName:
		return Name
	default:
		return schedulerName
	}
}

// Backend is the plain kube-scheduler backend of the backend-controller.
type Backend struct{}

// Name returns the backend's name.
func (Backend) Name() string { return Name }

// SyncPodGang has nothing to create: kube-scheduler places pods one by one once ungated.
func (Backend) SyncPodGang(context.Context, *schedulerv1alpha1.PodGang) (string, string, error) {
	return "SchedulerReady", "kube-scheduler needs no scheduler objects; pods are scheduled individually", nil
}
