package kueuee2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// gpuRuntime is a torch runtime of the given workload kind whose node pods ask for 4 GPUs each
// and run until stopped.
func gpuRuntime(t *testing.T, ns string, kind trainerv1alpha1.WorkloadKind) string {
	t.Helper()
	requests := corev1.ResourceList{gpu: *resource.NewQuantity(4, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("100m")}
	rt := builders.RuntimeSpec("busybox:1.36", 1).WorkloadKind(kind).OnePodJobs().
		// kwok completes a Job's pod at once unless told when to exit: never, here.
		PodLabel(cluster.LabelExitCode, "0").PodAnnotation(cluster.AnnotationExitAfter, "87600h").
		PodSpecEdit(func(s *corev1.PodSpec) {
			s.RestartPolicy = corev1.RestartPolicyNever
			s.Containers[0].Resources = corev1.ResourceRequirements{Requests: requests, Limits: requests}
		}).
		TrainingRuntime(ns, "torch-gpu")
	require.NoError(t, k8s().Create(context.Background(), rt))
	return rt.Name
}

// workloadPriority makes a Kueue WorkloadPriorityClass for the test.
func workloadPriority(t *testing.T, name string, value int32) {
	t.Helper()
	wpc := &kueuev1beta2.WorkloadPriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	require.NoError(t, k8s().Create(context.Background(), wpc))
	t.Cleanup(func() { _ = k8s().Delete(context.Background(), wpc) })
}

// queuedTrainJob is a TrainJob of two 4-GPU nodes in queue, with a Kueue workload priority. It
// is created unsuspended, as users write it: Kueue's webhook suspends it until admitted.
func queuedTrainJob(ns, name, runtime, queue, priority string) *trainerv1alpha1.TrainJob {
	return builders.TrainJob(ns, name, runtime).Nodes(2).Queue(queue, priority).Obj()
}

// createTrainJob creates a TrainJob. Kueue's TrainJob webhook reads the runtime from its own
// cache to validate the TrainJob and refuses it while that cache has not seen a runtime created
// a moment before ("runtime '<name>' not found"): such a refusal is retried, any other error
// fails the test.
func createTrainJob(t *testing.T, tj *trainerv1alpha1.TrainJob) {
	t.Helper()
	eventually(t, 30*time.Second, func() (bool, string) {
		err := k8s().Create(context.Background(), tj.DeepCopy())
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("runtime '%s' not found", tj.Spec.RuntimeRef.Name)) {
			require.NoError(t, err, "creating TrainJob %s", tj.Name)
		}
		return err == nil, fmt.Sprintf("creating TrainJob %s: %v", tj.Name, err)
	})
}

func getTrainJob(t *testing.T, ns, name string) *trainerv1alpha1.TrainJob {
	t.Helper()
	tj := &trainerv1alpha1.TrainJob{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, tj))
	return tj
}

// trainJobPods are the live pods of a TrainJob on either path.
func trainJobPods(t *testing.T, ns, name string, kind trainerv1alpha1.WorkloadKind) []corev1.Pod {
	t.Helper()
	sel := client.MatchingLabels{trainerv1alpha1.LabelTrainJobName: name}
	if kind == trainerv1alpha1.WorkloadKindJobSet {
		sel = client.MatchingLabels{jobsetv1alpha2.JobSetNameKey: name}
	}
	list := &corev1.PodList{}
	require.NoError(t, k8s().List(context.Background(), list, client.InNamespace(ns), sel))
	return slices.DeleteFunc(list.Items, func(p corev1.Pod) bool { return !p.DeletionTimestamp.IsZero() })
}

// waitTrainJobRunning waits until Kueue admitted the TrainJob (unsuspended it) and its n pods run.
func waitTrainJobRunning(t *testing.T, ns, name string, kind trainerv1alpha1.WorkloadKind, n int) {
	t.Helper()
	eventually(t, 2*time.Minute, func() (bool, string) {
		tj := getTrainJob(t, ns, name)
		if ptr.Deref(tj.Spec.Suspend, false) {
			return false, "suspended"
		}
		ps := trainJobPods(t, ns, name, kind)
		running := 0
		for _, p := range ps {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == n, fmt.Sprintf("%d of %d pods running: %s", running, n, describe(ps))
	})
}

// waitTrainJobSuspended waits until the TrainJob is suspended by Kueue, says so, and has no pod.
func waitTrainJobSuspended(t *testing.T, ns, name string, kind trainerv1alpha1.WorkloadKind) {
	t.Helper()
	eventually(t, 2*time.Minute, func() (bool, string) {
		tj := getTrainJob(t, ns, name)
		c := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobSuspended)
		ps := trainJobPods(t, ns, name, kind)
		return ptr.Deref(tj.Spec.Suspend, false) && c != nil && c.Status == metav1.ConditionTrue && len(ps) == 0,
			fmt.Sprintf("suspend=%v condition=%+v pods=%s", ptr.Deref(tj.Spec.Suspend, false), c, describe(ps))
	})
}

// kueueWorkloadOf is the Workload Kueue keeps for a TrainJob.
func kueueWorkloadOf(t *testing.T, ns, trainJob string) *kueuev1beta2.Workload {
	t.Helper()
	list := &kueuev1beta2.WorkloadList{}
	require.NoError(t, k8s().List(context.Background(), list, client.InNamespace(ns)))
	for i := range list.Items {
		for _, ref := range list.Items[i].OwnerReferences {
			if ref.Kind == trainerv1alpha1.TrainJobKind && ref.Name == trainJob {
				return &list.Items[i]
			}
		}
	}
	return nil
}

// Kueue's own TrainJob integration queues TrainJobs on both paths unchanged: a TrainJob waits
// suspended until Kueue admits its two 4-GPU nodes in a queue of 8; a higher-priority one
// preempts it (Kueue suspends it, its pods go, its jobs stop counting active pods so Kueue
// finishes the eviction) and it runs again once the quota is free. On the PodCliqueSet path the
// queue reaches the PodCliqueSet and its gangs, whose admission is the TrainJob's: no gang holds
// quota of its own and no pod waits for Kueue's gate.
func TestKueueQueuesAndPreemptsTrainJobsOnBothPaths(t *testing.T) {
	for _, path := range []struct {
		kind  trainerv1alpha1.WorkloadKind
		queue string
	}{{trainerv1alpha1.WorkloadKindJobSet, "tj-js"}, {trainerv1alpha1.WorkloadKindPodCliqueSet, "tj-pcs"}} {
		kind, queue := path.kind, path.queue
		t.Run(string(kind), func(t *testing.T) {
			ctx := context.Background()
			ns := queueWithGPUs(t, queue, 8)
			low, high := queue+"-low", queue+"-high"
			workloadPriority(t, low, 100)
			workloadPriority(t, high, 1000)
			rt := gpuRuntime(t, ns, kind)

			createTrainJob(t, queuedTrainJob(ns, "first", rt, queue, low))
			waitTrainJobRunning(t, ns, "first", kind, 2)
			wl := kueueWorkloadOf(t, ns, "first")
			require.NotNil(t, wl, "Kueue keeps a Workload for the TrainJob")
			assert.True(t, meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadAdmitted))
			var counted int32
			for _, ps := range wl.Spec.PodSets {
				counted += ps.Count
			}
			assert.Equal(t, int32(2), counted, "the TrainJob's Workload counts both nodes")
			if kind == trainerv1alpha1.WorkloadKindPodCliqueSet {
				assertAdmittedThroughTheTrainJob(t, ns, "first", queue)
			}

			createTrainJob(t, queuedTrainJob(ns, "second", rt, queue, low))
			waitTrainJobSuspended(t, ns, "second", kind)
			eventually(t, time.Minute, func() (bool, string) {
				wl := kueueWorkloadOf(t, ns, "second")
				return wl != nil && keptPendingNow(wl), "waiting for Kueue to keep the second TrainJob's Workload pending"
			})
			assert.True(t, ptr.Deref(getTrainJob(t, ns, "second").Spec.Suspend, false), "no quota left: the second TrainJob stays suspended")
			assert.Empty(t, trainJobPods(t, ns, "second", kind))

			createTrainJob(t, queuedTrainJob(ns, "urgent", rt, queue, high))
			waitTrainJobSuspended(t, ns, "first", kind)
			waitTrainJobRunning(t, ns, "urgent", kind, 2)
			evicted := kueueWorkloadOf(t, ns, "first")
			require.NotNil(t, evicted)
			assert.False(t, meta.IsStatusConditionTrue(evicted.Status.Conditions, kueuev1beta2.WorkloadAdmitted), "the preempted TrainJob waits in the queue again")
			for _, j := range getTrainJob(t, ns, "first").Status.JobsStatus {
				assert.Zero(t, ptr.Deref(j.Active, 0), "job %s of the preempted TrainJob counts no active pod", j.Name)
			}

			require.NoError(t, k8s().Delete(ctx, getTrainJob(t, ns, "urgent")))
			eventually(t, 2*time.Minute, func() (bool, string) {
				running := 0
				for _, name := range []string{"first", "second"} {
					if !ptr.Deref(getTrainJob(t, ns, name).Spec.Suspend, true) {
						running++
					}
				}
				return running == 1, fmt.Sprintf("%d of the two waiting TrainJobs admitted", running)
			})
			for _, name := range []string{"first", "second"} {
				if !ptr.Deref(getTrainJob(t, ns, name).Spec.Suspend, true) {
					waitTrainJobRunning(t, ns, name, kind, 2)
				}
			}
		})
	}
}

// assertAdmittedThroughTheTrainJob checks the PodCliqueSet path's contract: the queue label on
// the PodCliqueSet, spec.queueAdmission Owner, every gang naming the queue as admitted by the
// owner, no gang Workload, ungated pods without Kueue's pod labels, and QueueAdmitted True.
func assertAdmittedThroughTheTrainJob(t *testing.T, ns, name, queue string) {
	t.Helper()
	ctx := context.Background()
	pcs := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pcs))
	assert.Equal(t, queue, pcs.Labels[grovev1alpha1.LabelKueueQueueName])
	assert.Equal(t, grovev1alpha1.QueueAdmissionOwner, pcs.Spec.QueueAdmission)
	waitQueueAdmitted(t, ns, name, metav1.ConditionTrue, grovev1alpha1.ReasonAdmittedWithOwner, time.Minute)

	gangs := &schedulerv1alpha1.PodGangList{}
	require.NoError(t, k8s().List(ctx, gangs, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: name}))
	require.NotEmpty(t, gangs.Items)
	for _, pg := range gangs.Items {
		assert.Equal(t, queue, pg.Spec.QueueName, "gang %s carries the queue", pg.Name)
		assert.True(t, pg.Spec.QueueAdmittedByOwner, "gang %s is admitted through the TrainJob", pg.Name)
		wl := &kueuev1beta2.Workload{}
		assert.Error(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: pg.Name}, wl), "gang %s holds no quota of its own", pg.Name)
	}
	for _, p := range trainJobPods(t, ns, name, trainerv1alpha1.WorkloadKindPodCliqueSet) {
		assert.False(t, gated(&p, kueuegang.SchedulingGateAdmission), "pod %s is not held by Kueue", p.Name)
		assert.NotContains(t, p.Labels, grovev1alpha1.LabelKueueQueueName, "pod %s is not a Kueue pod group member", p.Name)
	}
}
