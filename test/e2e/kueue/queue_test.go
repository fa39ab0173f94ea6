package kueuee2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// Two PodCliqueSets of 8 GPUs each in a queue of 8 GPUs: the first runs, the second's pods wait
// behind Kueue's gate with a condition naming the queue; deleting the first lets the second run.
func TestGangsBeyondTheQueuesQuotaWaitGatedUntilQuotaIsFreed(t *testing.T) {
	ctx := context.Background()
	ns := queueWithGPUs(t, "quota-8", 8)

	first := gpuPCS(ns, "first", "quota-8", 2, 4)
	require.NoError(t, k8s().Create(ctx, first))
	waitRunning(t, ns, "first", 2, 2*time.Minute)
	waitQueueAdmitted(t, ns, "first", metav1.ConditionTrue, grovev1alpha1.ReasonAllGangsAdmitted, time.Minute)
	wl := &kueuev1beta2.Workload{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "first-0"}, wl), "one Workload per PodGang, named after it")
	require.Len(t, wl.Spec.PodSets, 1)
	assert.Equal(t, int32(2), wl.Spec.PodSets[0].Count)

	second := gpuPCS(ns, "second", "quota-8", 2, 4)
	require.NoError(t, k8s().Create(ctx, second))
	waitHeldByKueue(t, ns, "second", 2)
	c := waitQueueAdmitted(t, ns, "second", metav1.ConditionFalse, schedulerv1alpha1.ReasonQueuePending, time.Minute)
	assert.Contains(t, c.Message, "LocalQueue quota-8")
	assert.Contains(t, c.Message, "second-0")
	assertEvent(t, ns, "second", "QueuePending")
	keptPending(t, ns, "second", "second-0", time.Minute)

	require.NoError(t, k8s().Delete(ctx, first))
	waitRunning(t, ns, "second", 2, 2*time.Minute)
	waitQueueAdmitted(t, ns, "second", metav1.ConditionTrue, grovev1alpha1.ReasonAllGangsAdmitted, time.Minute)
}

// A queue that does not exist is reported, not waited on silently; creating it lets the gang in.
func TestAMissingLocalQueueIsReportedUntilItExists(t *testing.T) {
	ctx := context.Background()
	ns := queueWithGPUs(t, "present", 8)
	pcs := gpuPCS(ns, "lost", "absent", 1, 1)
	require.NoError(t, k8s().Create(ctx, pcs))
	c := waitQueueAdmitted(t, ns, "lost", metav1.ConditionFalse, schedulerv1alpha1.ReasonLocalQueueNotFound, time.Minute)
	assert.Contains(t, c.Message, "LocalQueue "+ns+"/absent does not exist")
	assertEvent(t, ns, "lost", "QueueLocalQueueNotFound")
	waitHeldByKueue(t, ns, "lost", 1)

	lq := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "absent", Namespace: ns},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: "present"}}
	require.NoError(t, k8s().Create(ctx, lq))
	waitRunning(t, ns, "lost", 1, 2*time.Minute)
}

// A gang larger than the queue can ever give says so instead of waiting forever.
func TestAGangLargerThanTheQueueSaysItCanNeverBeAdmitted(t *testing.T) {
	ctx := context.Background()
	ns := queueWithGPUs(t, "small", 8)
	require.NoError(t, k8s().Create(ctx, gpuPCS(ns, "huge", "small", 4, 4)))
	c := waitQueueAdmitted(t, ns, "huge", metav1.ConditionFalse, schedulerv1alpha1.ReasonQueueInadmissible, time.Minute)
	assert.Contains(t, c.Message, "LocalQueue small")
	assertEvent(t, ns, "huge", "QueueInadmissible")
	waitHeldByKueue(t, ns, "huge", 4)
}
