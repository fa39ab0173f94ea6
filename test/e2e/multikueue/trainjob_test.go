package multikueuee2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// runtimeEverywhere creates the TrainingRuntime of kind on the manager (Kueue's TrainJob webhook
// reads it there) and on each worker (the copy runs from it): two one-pod nodes of 1 CPU that
// exit 0 after exitAfter, and a TTL of ttl seconds after the TrainJob finished.
func runtimeEverywhere(t *testing.T, ns string, kind trainerv1alpha1.WorkloadKind, exitAfter time.Duration, ttl int32) string {
	t.Helper()
	rt := builders.RuntimeSpec("busybox:1.36", 1).WorkloadKind(kind).OnePodJobs().TTL(ttl).
		PodLabel(cluster.LabelExitCode, "0").PodAnnotation(cluster.AnnotationExitAfter, exitAfter.String()).
		PodSpecEdit(func(s *corev1.PodSpec) {
			s.RestartPolicy = corev1.RestartPolicyNever
			s.Containers[0].Resources = corev1.ResourceRequirements{Requests: cpu("1"), Limits: cpu("1")}
		}).
		TrainingRuntime(ns, "torch-"+strings.ToLower(string(kind)))
	for _, c := range []*cluster.Cluster{manager, workers[worker1Name], workers[worker2Name]} {
		require.NoError(t, c.Client().Create(context.Background(), rt.DeepCopy()))
	}
	return rt.Name
}

// createTrainJob creates a TrainJob on the manager, retrying only the refusal of Kueue's webhook
// while its cache has not seen the runtime created a moment before.
func createTrainJob(t *testing.T, tj *trainerv1alpha1.TrainJob) {
	t.Helper()
	eventually(t, 30*time.Second, func() (bool, string) {
		err := manager.Client().Create(context.Background(), tj.DeepCopy())
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("runtime '%s' not found", tj.Spec.RuntimeRef.Name)) {
			require.NoError(t, err, "creating TrainJob %s", tj.Name)
		}
		return err == nil, fmt.Sprintf("creating TrainJob %s: %v", tj.Name, err)
	})
}

func getTrainJob(t *testing.T, c *cluster.Cluster, ns, name string) *trainerv1alpha1.TrainJob {
	t.Helper()
	tj := &trainerv1alpha1.TrainJob{}
	err := c.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, tj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return tj
}

// copiesOf names the workers holding a copy of the TrainJob.
func copiesOf(t *testing.T, ns, name string) []string {
	t.Helper()
	var on []string
	for _, w := range []string{worker1Name, worker2Name} {
		if getTrainJob(t, workers[w], ns, name) != nil {
			on = append(on, w)
		}
	}
	return on
}

// TestATrainJobRunsOnTheWorkerWithRoomOnEachPath queues a TrainJob of two 1-CPU nodes on the
// manager, on the PodCliqueSet path and on the JobSet path: Kueue's TrainJob adapter runs it on
// worker-2 (worker-1's queue has 1 CPU), where the trainer-controller builds its workload; its
// completion, jobsStatus and where it ran come back to the manager, and the manager's
// trainer-controller deletes it when the runtime's TTL has passed.
func TestATrainJobRunsOnTheWorkerWithRoomOnEachPath(t *testing.T) {
	for _, kind := range []trainerv1alpha1.WorkloadKind{trainerv1alpha1.WorkloadKindPodCliqueSet, trainerv1alpha1.WorkloadKindJobSet} {
		t.Run(string(kind), func(t *testing.T) {
			ctx := context.Background()
			ns := newTest(t, "6", map[string]string{worker1Name: "1", worker2Name: "4"})
			rt := runtimeEverywhere(t, ns, kind, 5*time.Second, 10)
			begin := time.Now()
			createTrainJob(t, builders.TrainJob(ns, "train", rt).Nodes(2).Queue(ns, "").Obj())
			got := getTrainJob(t, manager, ns, "train")
			require.NotNil(t, got)
			assert.Equal(t, trainerv1alpha1.MultiKueueManagedBy, ptr.Deref(got.Spec.ManagedBy, ""), "Kueue's webhook hands it to MultiKueue")

			// Its workload is built on worker-2 only; nothing of it on the manager.
			eventually(t, 2*time.Minute, func() (bool, string) {
				on := copiesOf(t, ns, "train")
				return len(on) == 1 && on[0] == worker2Name, fmt.Sprintf("copies on %v; manager Workloads %s", on, describeWorkloads(workloads(t, manager, ns)))
			})
			eventually(t, 2*time.Minute, func() (bool, string) {
				w := workers[worker2Name]
				switch kind {
				case trainerv1alpha1.WorkloadKindPodCliqueSet:
					return getPCS(t, w, ns, "train") != nil, "no PodCliqueSet on worker-2 yet"
				default:
					js := &jobsetv1alpha2.JobSet{}
					err := w.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: "train"}, js)
					return err == nil, fmt.Sprintf("JobSet on worker-2: %v", err)
				}
			})
			t.Logf("%s: its workload built on worker-2 after %s", kind, time.Since(begin).Round(time.Millisecond))

			// Complete comes back, with where it ran and its jobs' counts.
			eventually(t, 3*time.Minute, func() (bool, string) {
				tj := getTrainJob(t, manager, ns, "train")
				if tj == nil {
					return false, "the manager's TrainJob is gone before it was seen Complete"
				}
				d := meta.FindStatusCondition(tj.Status.Conditions, grovev1alpha1.ConditionDispatched)
				return meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1alpha1.TrainJobComplete) && d != nil && strings.Contains(d.Message, "cluster "+worker2Name) &&
					len(tj.Status.JobsStatus) > 0, fmt.Sprintf("manager's TrainJob conditions %v, jobsStatus %v", tj.Status.Conditions, tj.Status.JobsStatus)
			})
			t.Logf("%s: Complete on the manager after %s", kind, time.Since(begin).Round(time.Millisecond))
			assert.Empty(t, creates(t, manager, ns, "podcliquesets"), "no PodCliqueSet on the manager")
			assert.Empty(t, creates(t, manager, ns, "jobsets"), "no JobSet on the manager")
			assert.Empty(t, creates(t, workers[worker1Name], ns, "trainjobs"), "no copy on worker-1")

			// The runtime's TTL (10 s) deletes it on the manager, and MultiKueue's copy goes too.
			eventually(t, 2*time.Minute, func() (bool, string) {
				return getTrainJob(t, manager, ns, "train") == nil && len(copiesOf(t, ns, "train")) == 0,
					fmt.Sprintf("manager's TrainJob present %v, copies on %v", getTrainJob(t, manager, ns, "train") != nil, copiesOf(t, ns, "train"))
			})
			t.Logf("%s: deleted by its TTL after %s", kind, time.Since(begin).Round(time.Millisecond))
		})
	}
}

// TestADispatchedTrainJobWaitsSuspendedInTheQueueAndFailsAtItsDeadline fills the manager's queue
// (2 CPUs) with a TrainJob that never ends and has a deadline of 20 s: a second TrainJob waits
// suspended on the manager, says so, and no worker gets a copy of it; the worker fails the first
// at its deadline, the manager's TrainJob says DeadlineExceeded, and the second is dispatched.
func TestADispatchedTrainJobWaitsSuspendedInTheQueueAndFailsAtItsDeadline(t *testing.T) {
	ns := newTest(t, "2", map[string]string{worker1Name: "4", worker2Name: "4"})
	rt := runtimeEverywhere(t, ns, trainerv1alpha1.WorkloadKindPodCliqueSet, 1000*time.Hour, 3600)
	createTrainJob(t, builders.TrainJob(ns, "first", rt).Nodes(2).Queue(ns, "").Deadline(20).Obj())
	eventually(t, 2*time.Minute, func() (bool, string) {
		on := copiesOf(t, ns, "first")
		return len(on) == 1 && getPCS(t, workers[on[0]], ns, "first") != nil, fmt.Sprintf("copies of first on %v", on)
	})
	createTrainJob(t, builders.TrainJob(ns, "second", rt).Nodes(2).Queue(ns, "").Obj())

	// The second waits in the manager's queue, suspended, and says so.
	eventually(t, time.Minute, func() (bool, string) {
		tj := getTrainJob(t, manager, ns, "second")
		c := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobSuspended)
		return ptr.Deref(tj.Spec.Suspend, false) && c != nil && c.Status == "True", fmt.Sprintf("second: suspend %v, conditions %v", ptr.Deref(tj.Spec.Suspend, false), tj.Status.Conditions)
	})
	assert.Empty(t, copiesOf(t, ns, "second"), "no worker gets a copy while it waits")

	// The worker fails the first at its deadline; the manager's TrainJob says so.
	eventually(t, 2*time.Minute, func() (bool, string) {
		tj := getTrainJob(t, manager, ns, "first")
		c := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobFailed)
		return c != nil && c.Status == "True" && c.Reason == trainerv1alpha1.TrainJobDeadlineExceededReason, fmt.Sprintf("first's conditions %v", tj.Status.Conditions)
	})
	// Its quota released, the second runs on a worker.
	eventually(t, 2*time.Minute, func() (bool, string) {
		on := copiesOf(t, ns, "second")
		return len(on) == 1 && len(copiesOf(t, ns, "first")) == 0, fmt.Sprintf("copies of second on %v, of first on %v", on, copiesOf(t, ns, "first"))
	})
}
