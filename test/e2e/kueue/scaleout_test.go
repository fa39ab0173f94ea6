package kueuee2e

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

func scaleGroup(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	pcsg := &grovev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":`+strconv.Itoa(int(replicas))+`}}`))
	require.NoError(t, k8s().SubResource("scale").Patch(context.Background(), pcsg, patch))
}

func podGangAdmission(t *testing.T, ns, name string) *metav1.Condition {
	t.Helper()
	pg := &schedulerv1alpha1.PodGang{}
	if err := k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
		return nil
	}
	for i := range pg.Status.Conditions {
		if pg.Status.Conditions[i].Type == schedulerv1alpha1.ConditionQueueAdmitted {
			return &pg.Status.Conditions[i]
		}
	}
	return nil
}

// A scaling-group replica beyond minAvailable is a gang of its own with a Workload of its own:
// scaling out past the quota leaves it waiting and never evicts the base gang.
func TestScaledGangsQueueOnTheirOwnAndNeverEvictTheBaseGang(t *testing.T) {
	ctx := context.Background()
	ns := queueWithGPUs(t, "scale", 8)
	pcs := gpuPCS(ns, "svc", "scale", 1, 2) // the standalone clique: 2 GPUs
	pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, &grovev1alpha1.PodCliqueTemplateSpec{Name: "prefill", Spec: *pcs.Spec.Template.Cliques[0].Spec.DeepCopy()})
	pcs.Spec.Template.Cliques[1].Spec.PodSpec.Containers[0].Resources.Limits[gpu] = *resourceGPUs(4)
	pcs.Spec.Template.Cliques[1].Spec.PodSpec.Containers[0].Resources.Requests[gpu] = *resourceGPUs(4)
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "pf", CliqueNames: []string{"prefill"}, Replicas: ptr.To[int32](1), MinAvailable: ptr.To[int32](1)},
	}
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "svc", 2, 2*time.Minute) // base gang: 2 + 4 GPUs
	base := map[types.UID]bool{}
	for _, p := range pods(t, ns, "svc") {
		base[p.UID] = true
	}

	scaleGroup(t, ns, "svc-0-pf", 2) // a scaled gang of 4 more GPUs: 10 > 8
	scaled := grovev1alpha1.ScaledPodGangName("svc-0-pf", 1, 1)
	eventually(t, time.Minute, func() (bool, string) {
		c := podGangAdmission(t, ns, scaled)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == schedulerv1alpha1.ReasonQueuePending, "waiting for the scaled gang to wait in its queue"
	})
	wl := &kueuev1beta2.Workload{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: scaled}, wl), "the scaled gang has its own Workload")
	c := waitQueueAdmitted(t, ns, "svc", metav1.ConditionFalse, schedulerv1alpha1.ReasonQueuePending, time.Minute)
	assert.Contains(t, c.Message, "1 of 2 gangs not admitted")
	waitKeptPending(t, ns, scaled, time.Minute)
	running := 0
	for _, p := range pods(t, ns, "svc") {
		if base[p.UID] {
			assert.Equal(t, corev1.PodRunning, p.Status.Phase, "base gang pod %s keeps running", p.Name)
			running++
		} else {
			assert.Empty(t, p.Spec.NodeName, "the scaled gang's pod %s waits for Kueue", p.Name)
		}
	}
	assert.Equal(t, 2, running, "no base gang pod was evicted")
	assert.Equal(t, metav1.ConditionTrue, podGangAdmission(t, ns, "svc-0").Status)

	scaleGroup(t, ns, "svc-0-pf", 1)
	waitQueueAdmitted(t, ns, "svc", metav1.ConditionTrue, grovev1alpha1.ReasonAllGangsAdmitted, time.Minute)
	waitRunning(t, ns, "svc", 2, time.Minute)
}
