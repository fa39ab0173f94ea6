package multikueuee2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// TestJobSetRunsOnTheWorkerWithRoom queues a JobSet of two 1-CPU pods on the manager: worker-1's
// queue has 1 CPU, worker-2's 4, so MultiKueue runs it on worker-2 only; its status comes back
// to the manager; deleting it on the manager leaves nothing on worker-2.
func TestJobSetRunsOnTheWorkerWithRoom(t *testing.T) {
	ctx := context.Background()
	ns := newTest(t, "8", map[string]string{worker1Name: "1", worker2Name: "4"})
	w1, w2 := workers[worker1Name], workers[worker2Name]

	begin := time.Now()
	js := jobSet(ns, "train", ns, 2, "1", time.Hour) // runs until deleted
	require.NoError(t, manager.Client().Create(ctx, js))

	// Kueue's JobSet webhook on the manager hands the JobSet to MultiKueue, suspended.
	created := &jobsetv1alpha2.JobSet{}
	require.NoError(t, manager.Client().Get(ctx, client.ObjectKeyFromObject(js), created))
	assert.Equal(t, kueuev1beta2.MultiKueueControllerName, ptr.Deref(created.Spec.ManagedBy, ""), "spec.managedBy defaulted by Kueue's webhook")
	assert.True(t, ptr.Deref(created.Spec.Suspend, false), "suspended by Kueue's webhook")

	// The manager's Workload is dispatched to worker-2.
	eventually(t, 2*time.Minute, func() (bool, string) {
		wls := workloads(t, manager, ns)
		msg := "manager Workloads " + describeWorkloads(wls) + "; worker-1 " + describeWorkloads(workloads(t, w1, ns)) + "; worker-2 " + describeWorkloads(workloads(t, w2, ns))
		if len(wls) != 1 || ptr.Deref(wls[0].Status.ClusterName, "") != worker2Name {
			return false, msg
		}
		check := findCheck(wls[0].Status.AdmissionChecks, "multikueue")
		return check != nil && check.State == kueuev1beta2.CheckStateReady && meta.IsStatusConditionTrue(wls[0].Status.Conditions, kueuev1beta2.WorkloadAdmitted), msg
	})
	t.Logf("admitted on the manager and dispatched to %s after %s", worker2Name, time.Since(begin).Round(time.Millisecond))
	t.Logf("manager Workload: %s", describeWorkloads(workloads(t, manager, ns)))

	// The copy on worker-2 runs: its pods are Running, its status says so and comes back.
	remote := &jobsetv1alpha2.JobSet{}
	eventually(t, 2*time.Minute, func() (bool, string) {
		if err := w2.Client().Get(ctx, client.ObjectKeyFromObject(js), remote); err != nil {
			return false, "JobSet on worker-2: " + err.Error()
		}
		pods := &corev1.PodList{}
		if err := w2.Client().List(ctx, pods, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2 && activeJobs(remote) == 1, fmt.Sprintf("worker-2: %d of %d pods Running; JobSet status %+v", running, len(pods.Items), remote.Status)
	})
	t.Logf("running on %s after %s", worker2Name, time.Since(begin).Round(time.Millisecond))
	t.Logf("worker-2's copy: labels %v, annotations %v", remote.Labels, remote.Annotations)
	assert.Equal(t, "multikueue", remote.Labels[kueuev1beta2.MultiKueueOriginLabel], "the copy carries the manager's origin")
	assert.Nil(t, remote.Spec.ManagedBy, "the copy is the worker JobSet controller's")
	assert.False(t, ptr.Deref(remote.Spec.Suspend, true), "the copy is admitted by worker-2's Kueue")
	eventually(t, time.Minute, func() (bool, string) {
		got := &jobsetv1alpha2.JobSet{}
		if err := manager.Client().Get(ctx, client.ObjectKeyFromObject(js), got); err != nil {
			return false, err.Error()
		}
		return activeJobs(got) == 1, fmt.Sprintf("manager's JobSet status %+v", got.Status)
	})
	t.Logf("status back on the manager after %s", time.Since(begin).Round(time.Millisecond))

	// Nothing ran on the manager or worker-1; worker-2's JobSet was made by the manager's Kueue.
	jobs := &batchv1.JobList{}
	require.NoError(t, manager.Client().List(ctx, jobs, client.InNamespace(ns)))
	assert.Empty(t, jobs.Items, "Jobs on the manager")
	require.NoError(t, w1.Client().List(ctx, jobs, client.InNamespace(ns)))
	assert.Empty(t, jobs.Items, "Jobs on worker-1")
	assert.Empty(t, jobSetCreates(t, w1, ns), "JobSets created on worker-1")
	t.Logf("Workloads created on worker-1: %v", creates(t, w1, ns, "workloads"))
	assert.Equal(t, []string{"train by " + managerUser}, jobSetCreates(t, w2, ns), "JobSets created on worker-2")
	eventually(t, time.Minute, func() (bool, string) {
		wls := workloads(t, w1, ns)
		return len(wls) == 0, "worker-1's copy of the Workload is removed once worker-2 admitted it: " + describeWorkloads(wls)
	})

	// Deleting the JobSet on the manager deletes it, its Workload and its pods on worker-2.
	deleted := time.Now()
	require.NoError(t, manager.Client().Delete(ctx, js, client.PropagationPolicy("Background")))
	eventually(t, 2*time.Minute, func() (bool, string) {
		err := w2.Client().Get(ctx, client.ObjectKeyFromObject(js), &jobsetv1alpha2.JobSet{})
		wls := workloads(t, w2, ns)
		return apierrors.IsNotFound(err) && len(wls) == 0,
			fmt.Sprintf("worker-2 after the delete: JobSet %v, Workloads %s; manager Workloads %s", err, describeWorkloads(wls), describeWorkloads(workloads(t, manager, ns)))
	})
	t.Logf("JobSet and Workload gone from %s %s after the delete on the manager", worker2Name, time.Since(deleted).Round(time.Millisecond))
	eventually(t, 2*time.Minute, func() (bool, string) {
		pods := &corev1.PodList{}
		require.NoError(t, w2.Client().List(ctx, pods, client.InNamespace(ns)))
		require.NoError(t, w2.Client().List(ctx, jobs, client.InNamespace(ns)))
		return len(pods.Items) == 0 && len(jobs.Items) == 0, fmt.Sprintf("worker-2 after the delete: %d pods, %d Jobs", len(pods.Items), len(jobs.Items))
	})
	t.Logf("its Jobs and pods gone from %s %s after the delete on the manager", worker2Name, time.Since(deleted).Round(time.Millisecond))
}

// TestJobSetCompletionComesBack lets a JobSet run to completion on a worker: the manager's
// JobSet turns Completed and its Workload Finished.
func TestJobSetCompletionComesBack(t *testing.T) {
	ctx := context.Background()
	ns := newTest(t, "8", map[string]string{worker1Name: "4", worker2Name: "4"})
	begin := time.Now()
	js := jobSet(ns, "short", ns, 2, "1", 5*time.Second)
	require.NoError(t, manager.Client().Create(ctx, js))
	eventually(t, 3*time.Minute, func() (bool, string) {
		got := &jobsetv1alpha2.JobSet{}
		if err := manager.Client().Get(ctx, client.ObjectKeyFromObject(js), got); err != nil {
			return false, err.Error()
		}
		wls := workloads(t, manager, ns)
		finished := len(wls) == 1 && meta.IsStatusConditionTrue(wls[0].Status.Conditions, kueuev1beta2.WorkloadFinished)
		return meta.IsStatusConditionTrue(got.Status.Conditions, string(jobsetv1alpha2.JobSetCompleted)) && finished,
			fmt.Sprintf("manager's JobSet conditions %+v; Workloads %s", got.Status.Conditions, describeWorkloads(wls))
	})
	wl := workloads(t, manager, ns)[0]
	where := ptr.Deref(wl.Status.ClusterName, "")
	t.Logf("Completed on the manager after %s (ran on %s)", time.Since(begin).Round(time.Millisecond), where)
	require.Contains(t, workers, where)
	// Once the manager's Workload is finished, MultiKueue removes what it made on the worker.
	eventually(t, time.Minute, func() (bool, string) {
		err := workers[where].Client().Get(ctx, client.ObjectKeyFromObject(js), &jobsetv1alpha2.JobSet{})
		wls := workloads(t, workers[where], ns)
		return apierrors.IsNotFound(err) && len(wls) == 0, fmt.Sprintf("%s after completion: JobSet %v, Workloads %s", where, err, describeWorkloads(wls))
	})
	t.Logf("removed from %s after %s", where, time.Since(begin).Round(time.Millisecond))
}

func findCheck(checks []kueuev1beta2.AdmissionCheckState, name string) *kueuev1beta2.AdmissionCheckState {
	for i := range checks {
		if string(checks[i].Name) == name {
			return &checks[i]
		}
	}
	return nil
}

// activeJobs sums the active Jobs of a JobSet's status.
func activeJobs(js *jobsetv1alpha2.JobSet) int32 {
	var n int32
	for _, s := range js.Status.ReplicatedJobsStatus {
		n += s.Active
	}
	return n
}
