package kueuee2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// cliques maps each PodClique of a PodCliqueSet to its UID and generation.
func cliques(t *testing.T, ns, pcs string) map[string][2]any {
	t.Helper()
	list := &grovev1alpha1.PodCliqueList{}
	require.NoError(t, k8s().List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: pcs}))
	out := map[string][2]any{}
	for _, p := range list.Items {
		out[p.Name] = [2]any{p.UID, p.Generation}
	}
	return out
}

func getPCS(t *testing.T, ns, name string) *grovev1alpha1.PodCliqueSet {
	t.Helper()
	pcs := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pcs))
	return pcs
}

// A higher-priority PodCliqueSet preempts a running Training one through Kueue: the Training
// gang's pods go, it says why and waits, and once the quota is free it runs again with nothing
// lost — no restart spent, the same PodCliques with the same specs.
func TestAPreemptedTrainingGangWaitsAndRunsAgainWithoutSpendingARestart(t *testing.T) {
	ctx := context.Background()
	ns := queueWithGPUs(t, "shared", 8)
	priorityClass(t, ns+"-low", 100)
	priorityClass(t, ns+"-high", 1000)

	low := gpuPCS(ns, "low", "shared", 2, 4)
	low.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
	low.Spec.TrainingSpec = &grovev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](3)}
	low.Spec.Template.PriorityClassName = ns + "-low"
	require.NoError(t, k8s().Create(ctx, low))
	waitRunning(t, ns, "low", 2, 2*time.Minute)
	waitQueueAdmitted(t, ns, "low", metav1.ConditionTrue, grovev1alpha1.ReasonAllGangsAdmitted, time.Minute)
	before := getPCS(t, ns, "low")
	cliquesBefore := cliques(t, ns, "low")
	require.Len(t, cliquesBefore, 1)
	runningUIDs := map[types.UID]bool{}
	for _, p := range pods(t, ns, "low") {
		runningUIDs[p.UID] = true
	}

	high := gpuPCS(ns, "high", "shared", 2, 4)
	high.Spec.Template.PriorityClassName = ns + "-high"
	require.NoError(t, k8s().Create(ctx, high))
	c := waitQueueAdmitted(t, ns, "low", metav1.ConditionFalse, schedulerv1alpha1.ReasonQueueEvicted, 2*time.Minute)
	assert.Contains(t, c.Message, "Preempted")
	assert.Contains(t, c.Message, "LocalQueue shared")
	assertEvent(t, ns, "low", "QueueEvicted")
	waitRunning(t, ns, "high", 2, 2*time.Minute)
	// The preempted gang's pods were replaced by pods held by Kueue, not restarted as a failure.
	waitHeldByKueue(t, ns, "low", 2)
	for _, p := range pods(t, ns, "low") {
		assert.False(t, runningUIDs[p.UID], "pod %s should have been stopped by Kueue", p.Name)
	}
	waiting := getPCS(t, ns, "low")
	assert.Equal(t, int32(0), waiting.Status.RestartCount, "an eviction is no failure")
	assert.NotEqual(t, grovev1alpha1.PodCliqueSetPhaseFailed, waiting.Status.Phase)

	require.NoError(t, k8s().Delete(ctx, high))
	waitRunning(t, ns, "low", 2, 2*time.Minute)
	waitQueueAdmitted(t, ns, "low", metav1.ConditionTrue, grovev1alpha1.ReasonAllGangsAdmitted, time.Minute)
	after := getPCS(t, ns, "low")
	assert.Equal(t, int32(0), after.Status.RestartCount, "re-admission spends no restart")
	assert.Equal(t, before.Generation, after.Generation, "the PodCliqueSet is unchanged")
	assert.Equal(t, before.Spec, after.Spec)
	assert.Equal(t, cliquesBefore, cliques(t, ns, "low"), "the same PodCliques, specs unchanged")
}
