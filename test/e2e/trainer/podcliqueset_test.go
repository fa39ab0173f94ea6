package trainere2e

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

func TestTrainJobOnPodCliqueSetRunsInitializerFirstAndCompletes(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	spec := runtimeSpec(trainerv1alpha1.WorkloadKindPodCliqueSet, succeedAfter2s, nil, 0,
		replicatedJob("dataset-initializer", exit{"0", "1s"}),
		replicatedJob("node", succeedAfter2s, "dataset-initializer"))
	newRuntime(t, ns, "torch-pcs", spec)
	tj := trainJob(ns, "llm", "torch-pcs", 3, nil, false)
	tj.Labels = map[string]string{"kai.scheduler/queue": "team-a"}
	create(t, tj)

	done := waitCondition(t, tj, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "PodCliqueSetSucceeded", 2*time.Minute)
	assert.False(t, meta.IsStatusConditionTrue(done.Status.Conditions, trainerv1alpha1.TrainJobRunning))
	assert.EqualValues(t, 3, done.Status.NumNodes)
	jobs := map[string]trainerv1alpha1.JobStatus{}
	for _, j := range done.Status.JobsStatus {
		jobs[j.Name] = j
	}
	require.Contains(t, jobs, "node")
	assert.EqualValues(t, 3, *jobs["node"].Succeeded, "every node pod exited 0")
	assert.EqualValues(t, 1, *jobs["dataset-initializer"].Succeeded)
	assertEvent(t, ns, "llm", "Created")
	assertEvent(t, ns, "llm", "Completed")

	pcs := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "llm"}, pcs))
	assert.Equal(t, grovev1alpha1.WorkloadTypeTraining, pcs.Spec.WorkloadType)
	assert.Equal(t, "team-a", pcs.Labels["kai.scheduler/queue"], "queue labels reach the PodCliqueSet's backend")
	require.Len(t, pcs.Spec.Template.Cliques, 2)
	assert.Equal(t, []string{"dataset-initializer"}, pcs.Spec.Template.Cliques[1].Spec.StartsAfterSucceeded, "the trainer starts once the initializer exited 0")
	owner := metav1.GetControllerOf(pcs)
	require.NotNil(t, owner)
	assert.Equal(t, done.UID, owner.UID)

	// Every node pod started after the initializer finished, carries torch's environment and
	// reaches the first node by the PodCliqueSet's hostname.
	init := pods(t, ns, map[string]string{grovev1alpha1.LabelPodClique: "llm-0-dataset-initializer"})
	require.Len(t, init, 1)
	initDone := finishedAt(t, init[0])
	nodes := pods(t, ns, map[string]string{grovev1alpha1.LabelPodClique: "llm-0-node"})
	require.Len(t, nodes, 3)
	sort.Slice(nodes, func(a, b int) bool { return nodes[a].Name < nodes[b].Name })
	for i, p := range nodes {
		require.NotNil(t, p.Status.StartTime)
		assert.False(t, p.Status.StartTime.Time.Before(initDone), "%s started before the initializer finished", p.Name)
		env := builders.EnvOf(p.Spec.Containers[0])
		assert.Equal(t, "3", env["PET_NNODES"])
		assert.Equal(t, "llm-0-node-0.llm-0", env["PET_MASTER_ADDR"])
		assert.Equal(t, "29500", env["PET_MASTER_PORT"])
		assert.Equal(t, "fieldRef:metadata.labels['grove.io/podclique-pod-index']", env["PET_NODE_RANK"])
		assert.Equal(t, name("llm-0-node", i), p.Spec.Hostname)
		assert.Equal(t, "llm-0", p.Spec.Subdomain)
		require.NotEmpty(t, p.Spec.Containers[0].Ports)
		assert.EqualValues(t, 29500, p.Spec.Containers[0].Ports[0].ContainerPort)
	}
}

// finishedAt is when a pod's container terminated.
func finishedAt(t *testing.T, p corev1.Pod) time.Time {
	t.Helper()
	require.Equal(t, corev1.PodSucceeded, p.Status.Phase)
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Terminated != nil {
			return c.State.Terminated.FinishedAt.Time
		}
	}
	// kwok may not record a termination time; the Ready=False transition is the next best.
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Time
		}
	}
	t.Fatalf("pod %s has no finish time", p.Name)
	return time.Time{}
}

func TestTrainJobOnPodCliqueSetRestartsTheGangWithinBudgetThenFails(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	newRuntime(t, ns, "torch-pcs", runtimeSpec(trainerv1alpha1.WorkloadKindPodCliqueSet, neverExit, nil, 1))
	tj := trainJob(ns, "flaky", "torch-pcs", 2, nil, false)
	create(t, tj)
	node := map[string]string{grovev1alpha1.LabelPodClique: "flaky-0-node"}
	waitRunningPods(t, ns, node)

	cluster.Current.FailPod(t, ns, "flaky-0-node-1")
	pcs := &grovev1alpha1.PodCliqueSet{}
	require.Eventually(t, func() bool {
		return k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "flaky"}, pcs) == nil && pcs.Status.RestartCount == 1
	}, time.Minute, 100*time.Millisecond, "the gang restarts once")
	assert.False(t, meta.IsStatusConditionTrue(get(t, tj).Status.Conditions, trainerv1alpha1.TrainJobFailed), "a restart within the budget does not fail the TrainJob")
	waitRunningPods(t, ns, node)
	waitCliqueAvailable(t, ns, "flaky-0-node")

	cluster.Current.FailPod(t, ns, "flaky-0-node-0")
	failed := waitCondition(t, tj, trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, grovev1alpha1.ReasonMaxRestartsExceeded, time.Minute)
	assert.NotEmpty(t, meta.FindStatusCondition(failed.Status.Conditions, trainerv1alpha1.TrainJobFailed).Message, "the PodCliqueSet's message is carried over")
	assertEvent(t, ns, "flaky", "Failed")
}

// waitCliqueAvailable waits until the restarted clique reports itself available again, so the
// next failure is a breach of the new gang, not part of the restart still being recorded.
func waitCliqueAvailable(t *testing.T, ns, name string) {
	t.Helper()
	require.Eventually(t, func() bool {
		pclq := &grovev1alpha1.PodClique{}
		if k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pclq) != nil {
			return false
		}
		return pclq.Status.WasAvailable && meta.IsStatusConditionFalse(pclq.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
	}, time.Minute, 100*time.Millisecond, "%s available after the restart", name)
}

// waitRunningPods waits until exactly two pods match sel and run: every workload these tests
// wait on has two pods.
func waitRunningPods(t *testing.T, ns string, sel map[string]string) {
	t.Helper()
	require.Eventually(t, func() bool {
		running := 0
		for _, p := range pods(t, ns, sel) {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero() {
				running++
			}
		}
		return running == 2
	}, 2*time.Minute, 100*time.Millisecond, "2 running pods %v", sel)
}
