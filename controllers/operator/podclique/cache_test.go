package podclique

import (
	"encoding/json"
	"runtime"
	"testing"
	"unsafe"

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
			SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("c-group")},
			NodeName:        "n1",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
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
	assert.Equal(t, pod.Spec.SchedulingGroup, slim.Spec.SchedulingGroup, "a gated pod in its assigned group is ungated, not recreated")
	assert.Equal(t, "n1", slim.Spec.NodeName)
	assert.Equal(t, []corev1.PodCondition{pod.Status.Conditions[0], pod.Status.Conditions[2]}, slim.Status.Conditions,
		"the conditions the operator reads, not ContainersReady")
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

func TestSlimPodSharesTheStringsItsPodsRepeat(t *testing.T) {
	decoded := func(name string) *corev1.Pod {
		// Each pod decoded on its own, as the informer does: no string is shared before SlimPod.
		pod := &corev1.Pod{}
		require.NoError(t, json.Unmarshal([]byte(`{"metadata":{"name":"`+name+`","namespace":"ns",
			"labels":{"grove.io/podclique":"inf-0-worker"},
			"ownerReferences":[{"apiVersion":"grove.io/v1alpha1","kind":"PodClique","name":"inf-0-worker","uid":"u1"}]},
			"spec":{"nodeName":"node-1","schedulingGates":[{"name":"grove.io/podgang-pending-creation"}]},
			"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","reason":"r","message":"0/20 nodes are available"}]}}`), pod))
		return pod
	}
	a, b := decoded("inf-0-worker-0"), decoded("inf-0-worker-1")
	require.NotSame(t, unsafe.StringData(a.Labels["grove.io/podclique"]), unsafe.StringData(b.Labels["grove.io/podclique"]))

	slimA, err := SlimPod(a)
	require.NoError(t, err)
	runtime.GC() // what is shared stays shared across collections
	slimB, err := SlimPod(b)
	require.NoError(t, err)
	sa, sb := slimA.(*corev1.Pod), slimB.(*corev1.Pod)
	same := func(x, y string) bool { return unsafe.StringData(x) == unsafe.StringData(y) }
	assert.True(t, same(sa.Labels["grove.io/podclique"], sb.Labels["grove.io/podclique"]), "label value")
	assert.True(t, same(sa.Namespace, sb.Namespace), "namespace")
	assert.True(t, same(sa.OwnerReferences[0].Name, sb.OwnerReferences[0].Name), "owner")
	assert.True(t, same(string(sa.OwnerReferences[0].UID), string(sb.OwnerReferences[0].UID)), "owner UID")
	assert.True(t, same(sa.Spec.NodeName, sb.Spec.NodeName), "node")
	assert.True(t, same(sa.Spec.SchedulingGates[0].Name, sb.Spec.SchedulingGates[0].Name), "gate")
	assert.True(t, same(sa.Status.Conditions[0].Message, sb.Status.Conditions[0].Message), "condition message")
	assert.Equal(t, a.Labels, sa.Labels, "interning changes no value")
	assert.Equal(t, a.Status.Conditions, sa.Status.Conditions)
	assert.Equal(t, a.OwnerReferences, sa.OwnerReferences)
	assert.NotEqual(t, sa.Name, sb.Name)
}
