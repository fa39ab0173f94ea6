package multikueuee2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/cmd/kubectl-grove/status"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// trainingPCS is a Training PodCliqueSet of replicas replicas, each one gang of pods pods asking
// for 1 CPU, queued in queue; each pod runs for runFor (kwok's test exit stage), then succeeds.
func trainingPCS(ns, name, queue string, replicas, pods int32, runFor time.Duration) *grovev1alpha1.PodCliqueSet {
	pcs := builders.PodCliqueSet(ns, name).Replicas(replicas).Training(0).
		Clique("trainer", pods, builders.Requests(cpu("1"), nil), func(c *grovev1alpha1.PodCliqueTemplateSpec) {
			c.Labels = map[string]string{cluster.LabelExitCode: "0"}
			c.Annotations = map[string]string{cluster.AnnotationExitAfter: runFor.String()}
		}).
		Label(queueLabel, queue).Obj()
	pcs.UID = ""
	return pcs
}

// getPCS reads a PodCliqueSet on c; nil when it does not exist.
func getPCS(t *testing.T, c *cluster.Cluster, ns, name string) *grovev1alpha1.PodCliqueSet {
	t.Helper()
	pcs := &grovev1alpha1.PodCliqueSet{}
	err := c.Client().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pcs)
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(t, err)
	return pcs
}

// runsOn waits until MultiKueue placed every gang of the manager's PodCliqueSet on one worker and
// returns that worker's name.
func runsOn(t *testing.T, ns, name string, gangs int) string {
	t.Helper()
	where := ""
	eventually(t, 2*time.Minute, func() (bool, string) {
		list := &schedulerv1alpha1.PodGangList{}
		if err := manager.Client().List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: name}); err != nil {
			return false, err.Error()
		}
		clusters := map[string]int{}
		var conds []string
		for _, pg := range list.Items {
			clusters[pg.DispatchedCluster()]++
			if c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionDispatched); c != nil {
				conds = append(conds, fmt.Sprintf("%s: %s/%s %s", pg.Name, c.Status, c.Reason, c.Message))
			}
		}
		msg := fmt.Sprintf("%d of %d gangs on the manager; Dispatched %v; manager Workloads %s", len(list.Items), gangs, conds, describeWorkloads(workloads(t, manager, ns)))
		if len(list.Items) != gangs || len(clusters) != 1 {
			return false, msg
		}
		for c := range clusters {
			where = c
		}
		return where != "", msg
	})
	return where
}

// TestATrainingPodCliqueSetRunsOnTheWorkerWithRoomAndSucceedsOnTheManager queues a Training
// PodCliqueSet of two gangs (replicas) of two 1-CPU pods on the manager. worker-1's queue has 1
// CPU, worker-2's 8: MultiKueue runs both gangs on worker-2 only. On the manager nothing runs —
// only the gangs and their Workloads are kept — and the phase the worker reports, Succeeded,
// comes back with the worker's name; then MultiKueue removes the worker's copy.
func TestATrainingPodCliqueSetRunsOnTheWorkerWithRoomAndSucceedsOnTheManager(t *testing.T) {
	ctx := context.Background()
	ns := newTest(t, "8", map[string]string{worker1Name: "1", worker2Name: "8"})
	w1, w2 := workers[worker1Name], workers[worker2Name]

	begin := time.Now()
	pcs := trainingPCS(ns, "train", ns, 2, 2, 8*time.Second)
	require.NoError(t, manager.Client().Create(ctx, pcs))
	created := getPCS(t, manager, ns, "train")
	require.NotNil(t, created)
	assert.Equal(t, grovev1alpha1.ManagedByMultiKueue, ptr.Deref(created.Spec.ManagedBy, ""), "grove-webhook marks a PodCliqueSet whose queue leads to MultiKueue")

	where := runsOn(t, ns, "train", 2)
	assert.Equal(t, worker2Name, where, "the worker with room runs every gang")
	t.Logf("both gangs placed on %s after %s", where, time.Since(begin).Round(time.Millisecond))

	// The manager keeps the gangs' Workloads, each MultiKueue's component of the PodCliqueSet.
	for _, wl := range workloads(t, manager, ns) {
		assert.Equal(t, kueuegang.PodCliqueSetGVK.String(), wl.Annotations[kueuegang.AnnotationJobOwnerGVK], "Workload %s", wl.Name)
		assert.Equal(t, "train", wl.Annotations[kueuegang.AnnotationJobOwnerName], "Workload %s", wl.Name)
	}
	// kubectl grove status on the manager names the worker.
	view, err := status.ReadPodCliqueSet(ctx, manager.Client(), client.ObjectKey{Namespace: ns, Name: "train"})
	require.NoError(t, err)
	var out bytes.Buffer
	status.PrintPodCliqueSet(&out, view)
	assert.Contains(t, out.String(), "dispatched by MultiKueue: runs on cluster worker-2", "kubectl grove status:\n%s", out.String())

	// The phase comes back from worker-2, with where it ran.
	eventually(t, 3*time.Minute, func() (bool, string) {
		got := getPCS(t, manager, ns, "train")
		if got == nil {
			return false, "the manager's PodCliqueSet is gone"
		}
		c := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionDispatched)
		return got.Status.Phase == grovev1alpha1.PodCliqueSetPhaseSucceeded && c != nil && strings.Contains(c.Message, "cluster "+worker2Name),
			fmt.Sprintf("manager's phase %q, conditions %v; worker-2's copy %v", got.Status.Phase, got.Status.Conditions, phaseOf(getPCS(t, w2, ns, "train")))
	})
	t.Logf("Succeeded on the manager after %s", time.Since(begin).Round(time.Millisecond))

	// MultiKueue finishes the manager's Workloads and removes the copy and its Workloads.
	eventually(t, 2*time.Minute, func() (bool, string) {
		finished := 0
		for _, wl := range workloads(t, manager, ns) {
			if kueuegang.Finished(&wl) {
				finished++
			}
		}
		left := workloads(t, w2, ns)
		return finished == 2 && getPCS(t, w2, ns, "train") == nil && len(left) == 0,
			fmt.Sprintf("%d of 2 manager Workloads finished; worker-2 copy %v, Workloads %s", finished, phaseOf(getPCS(t, w2, ns, "train")), describeWorkloads(left))
	})

	// Nothing of it ever ran on the manager or on worker-1.
	assert.Empty(t, creates(t, manager, ns, "podcliques"), "no PodClique on the manager")
	assert.Empty(t, creates(t, manager, ns, "pods"), "no pod on the manager")
	assert.Empty(t, creates(t, w1, ns, "podcliquesets"), "no copy on worker-1")
	assert.Empty(t, creates(t, w1, ns, "pods"), "no pod on worker-1")
	got := getPCS(t, manager, ns, "train")
	require.NotNil(t, got)
	assert.Equal(t, grovev1alpha1.PodCliqueSetPhaseSucceeded, got.Status.Phase, "the last status copied back stays")
}

// TestWithTheFirstWorkerFullTheNextPodCliqueSetGoesToTheSecond fills one worker with a
// long-running PodCliqueSet; the next one queued on the manager runs on the other worker.
func TestWithTheFirstWorkerFullTheNextPodCliqueSetGoesToTheSecond(t *testing.T) {
	ctx := context.Background()
	ns := newTest(t, "8", map[string]string{worker1Name: "2", worker2Name: "2"})

	require.NoError(t, manager.Client().Create(ctx, trainingPCS(ns, "first", ns, 1, 2, time.Hour)))
	first := runsOn(t, ns, "first", 1)
	eventually(t, 2*time.Minute, func() (bool, string) {
		return runningPods(t, workers[first], ns) == 2, fmt.Sprintf("%d of 2 pods of first Running on %s", runningPods(t, workers[first], ns), first)
	})

	require.NoError(t, manager.Client().Create(ctx, trainingPCS(ns, "second", ns, 1, 2, time.Hour)))
	second := runsOn(t, ns, "second", 1)
	assert.NotEqual(t, first, second, "the second PodCliqueSet runs where there is room")
	t.Logf("first on %s, second on %s", first, second)
	eventually(t, 2*time.Minute, func() (bool, string) {
		n := runningPods(t, workers[second], ns)
		return n == 2, fmt.Sprintf("%d pods Running on %s", n, second)
	})
}

// TestAWorkersCopyDeletedBehindKueuesBackIsHandled deletes the copy MultiKueue made on the
// worker: MultiKueue makes it again there (or elsewhere), and the workload runs again.
func TestAWorkersCopyDeletedBehindKueuesBackIsHandled(t *testing.T) {
	ctx := context.Background()
	ns := newTest(t, "8", map[string]string{worker1Name: "4", worker2Name: "4"})
	require.NoError(t, manager.Client().Create(ctx, trainingPCS(ns, "train", ns, 1, 2, time.Hour)))
	where := runsOn(t, ns, "train", 1)
	eventually(t, 2*time.Minute, func() (bool, string) {
		n := runningPods(t, workers[where], ns)
		return n == 2, fmt.Sprintf("%d pods Running on %s", n, where)
	})
	copied := getPCS(t, workers[where], ns, "train")
	require.NotNil(t, copied)
	require.NoError(t, workers[where].Client().Delete(ctx, copied))
	t.Logf("deleted the copy on %s (uid %s)", where, copied.UID)

	eventually(t, 3*time.Minute, func() (bool, string) {
		var on []string
		for name, w := range workers {
			if again := getPCS(t, w, ns, "train"); again != nil && again.UID != copied.UID && runningPods(t, w, ns) == 2 {
				on = append(on, name)
			}
		}
		return len(on) == 1, fmt.Sprintf("a new copy running on %v; manager Workloads %s", on, describeWorkloads(workloads(t, manager, ns)))
	})
	// The manager's PodCliqueSet tells that it left the worker, and why.
	eventually(t, time.Minute, func() (bool, string) {
		list := &eventsv1.EventList{}
		if err := manager.Client().List(ctx, list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "PodCliqueSet" && e.Reason == schedulerv1alpha1.ReasonLeftWorker && strings.Contains(e.Note, "left cluster "+where) {
				return true, ""
			}
			seen = append(seen, e.Reason+": "+e.Note)
		}
		return false, fmt.Sprintf("no LeftWorker event on the PodCliqueSet; events %v", seen)
	})
}

// TestDeletingTheManagersPodCliqueSetLeavesNothingOnTheWorkers deletes a running dispatched
// PodCliqueSet on the manager: its copy, Workloads and pods go from the worker too.
func TestDeletingTheManagersPodCliqueSetLeavesNothingOnTheWorkers(t *testing.T) {
	ctx := context.Background()
	ns := newTest(t, "8", map[string]string{worker1Name: "4", worker2Name: "4"})
	pcs := trainingPCS(ns, "train", ns, 2, 1, time.Hour)
	require.NoError(t, manager.Client().Create(ctx, pcs))
	where := runsOn(t, ns, "train", 2)
	eventually(t, 2*time.Minute, func() (bool, string) {
		n := runningPods(t, workers[where], ns)
		return n == 2, fmt.Sprintf("%d pods Running on %s", n, where)
	})

	require.NoError(t, manager.Client().Delete(ctx, getPCS(t, manager, ns, "train")))
	eventually(t, 2*time.Minute, func() (bool, string) {
		var left []string
		for name, w := range workers {
			if getPCS(t, w, ns, "train") != nil {
				left = append(left, name+": PodCliqueSet")
			}
			if wls := workloads(t, w, ns); len(wls) > 0 {
				left = append(left, name+": Workloads "+describeWorkloads(wls))
			}
			if n := livePods(t, w, ns); n > 0 {
				left = append(left, fmt.Sprintf("%s: %d pods", name, n))
			}
		}
		return len(left) == 0 && len(workloads(t, manager, ns)) == 0, fmt.Sprintf("left %v; manager Workloads %s", left, describeWorkloads(workloads(t, manager, ns)))
	})
}

// TestAnInferencePodCliqueSetIsRefusedForAMultiKueueQueue states the scope: MultiKueue would
// never pass an Inference PodCliqueSet's scaling or updates on to the worker.
func TestAnInferencePodCliqueSetIsRefusedForAMultiKueueQueue(t *testing.T) {
	ns := newTest(t, "8", map[string]string{worker1Name: "4", worker2Name: "4"})
	pcs := builders.PodCliqueSet(ns, "serve").Clique("frontend", 1).Label(queueLabel, ns).Obj()
	pcs.UID = ""
	err := manager.Client().Create(context.Background(), pcs)
	require.Error(t, err)
	assert.True(t, apierrors.IsInvalid(err), "refused as invalid: %v", err)
	assert.Contains(t, err.Error(), "spec.workloadType")
	assert.Contains(t, err.Error(), "MultiKueue dispatches Training workloads only")
}

func phaseOf(pcs *grovev1alpha1.PodCliqueSet) string {
	if pcs == nil {
		return "none"
	}
	return fmt.Sprintf("phase %q, conditions %d", pcs.Status.Phase, len(pcs.Status.Conditions))
}

// runningPods counts the Running pods of ns on c.
func runningPods(t *testing.T, c *cluster.Cluster, ns string) int {
	t.Helper()
	pods := &corev1.PodList{}
	require.NoError(t, c.Client().List(context.Background(), pods, client.InNamespace(ns)))
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// livePods counts the pods of ns on c that have not ended.
func livePods(t *testing.T, c *cluster.Cluster, ns string) int {
	t.Helper()
	pods := &corev1.PodList{}
	require.NoError(t, c.Client().List(context.Background(), pods, client.InNamespace(ns)))
	n := 0
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n
}
