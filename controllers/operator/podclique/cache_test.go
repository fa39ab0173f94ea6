package podclique

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestSlimPodKeepsWhatTheOperatorReadsAndDropsTheRest(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "c-0", Namespace: "ns", UID: "u", ResourceVersion: "7",
			Labels:          map[string]string{"grove.io/podclique": "c"},
			OwnerReferences: []metav1.OwnerReference{{Name: "c", Controller: ptr.To(true)}},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "grove-operator"}}},
		Spec: corev1.PodSpec{
			Containers:      []corev1.Container{{Name: "w", Env: []corev1.EnvVar{{Name: "GROVE_PCS_NAME", Value: "inf"}}}},
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "grove.io/podgang-pending-creation"}},
			NodeName:        "n1",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "w"}}},
	}
	out, err := SlimPod(pod)
	require.NoError(t, err)
	slim := out.(*corev1.Pod)
	assert.Equal(t, pod.Labels, slim.Labels)
	assert.Equal(t, pod.OwnerReferences, slim.OwnerReferences)
	assert.Equal(t, pod.UID, slim.UID)
	assert.Equal(t, "7", slim.ResourceVersion, "the optimistic lock of the gate patch needs it")
	assert.Equal(t, pod.Spec.SchedulingGates, slim.Spec.SchedulingGates)
	assert.Equal(t, pod.Status.Conditions, slim.Status.Conditions)
	assert.Equal(t, corev1.PodRunning, slim.Status.Phase)
	assert.Empty(t, slim.Spec.Containers)
	assert.Empty(t, slim.Status.ContainerStatuses)
	assert.Empty(t, slim.ManagedFields)
	assert.Len(t, pod.ManagedFields, 1, "the informer's object is not modified")

	other := &corev1.Service{}
	got, err := SlimPod(other)
	require.NoError(t, err)
	assert.Same(t, other, got, "other kinds pass unchanged")
}
