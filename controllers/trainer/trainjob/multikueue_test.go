package trainjob

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// finishedAt is when a dispatched test TrainJob's copied-back status says it finished.
var finishedAt = created.Add(100 * time.Second)

// dispatchedJob is the manager's TrainJob of Kueue's MultiKueue, with the conditions its status
// copied back from the worker holds.
func dispatchedJob(conds ...metav1.Condition) *trainerv1alpha1.TrainJob {
	b := builders.TrainJob("ns", "job", "rt").UID("job-uid").Generation(1).Created(metav1.NewTime(created)).
		ManagedBy(trainerv1alpha1.MultiKueueManagedBy)
	for _, c := range conds {
		b.Condition(c)
	}
	return b.Obj()
}

// runningOnWorker is the Dispatched condition the worker's copy wrote, as MultiKueue copies it to
// the manager.
func runningOnWorker() metav1.Condition {
	return metav1.Condition{Type: ConditionDispatched, Status: metav1.ConditionTrue, Reason: grovev1alpha1.ReasonRunsOnWorker,
		Message: `runs on cluster worker-1, dispatched by Kueue's MultiKueue (origin "multikueue")`, LastTransitionTime: metav1.NewTime(created)}
}

// madeByTheController lists what the controller could have created for the TrainJob: its
// runtime snapshot, PodCliqueSet or JobSet.
func madeByTheController(t *testing.T, h *harness) []string {
	t.Helper()
	var out []string
	cms := &corev1.ConfigMapList{}
	require.NoError(t, h.c.List(context.Background(), cms, client.InNamespace("ns")))
	for _, cm := range cms.Items {
		out = append(out, "ConfigMap/"+cm.Name)
	}
	pcss := &grovev1alpha1.PodCliqueSetList{}
	require.NoError(t, h.c.List(context.Background(), pcss, client.InNamespace("ns")))
	for _, p := range pcss.Items {
		out = append(out, "PodCliqueSet/"+p.Name)
	}
	jss := &jobsetv1alpha2.JobSetList{}
	require.NoError(t, h.c.List(context.Background(), jss, client.InNamespace("ns")))
	for _, j := range jss.Items {
		out = append(out, "JobSet/"+j.Name)
	}
	return out
}

func (h *harness) jobExists(t *testing.T) bool {
	t.Helper()
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "job"}, &trainerv1alpha1.TrainJob{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

func TestADispatchedTrainJobOnTheManagerGetsNoStatusWriteAndNothingCreated(t *testing.T) {
	jobSetRuntime := testRuntime(ptr.To[int32](30))
	jobSetRuntime.Spec.WorkloadKind = trainerv1alpha1.WorkloadKindJobSet
	for _, tc := range []struct {
		name    string
		runtime *trainerv1alpha1.TrainingRuntime
		job     *trainerv1alpha1.TrainJob
	}{
		{"queued, no status copied back yet", testRuntime(ptr.To[int32](30)), dispatchedJob()},
		{"running on a worker", testRuntime(ptr.To[int32](30)), dispatchedJob(runningOnWorker(),
			cond(trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, "PodCliqueSetCreated", created))},
		{"on the JobSet path", jobSetRuntime, dispatchedJob(runningOnWorker())},
		{"past its deadline: the worker's copy runs it", testRuntime(nil), func() *trainerv1alpha1.TrainJob {
			tj := dispatchedJob()
			tj.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
			return tj
		}()},
		{"its runtime missing", nil, dispatchedJob()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{tc.job}
			if tc.runtime != nil {
				objs = append(objs, tc.runtime)
			}
			h := newHarness(t, objs...)
			h.r.ClusterName = "manager"
			h.clock.SetTime(created.Add(time.Hour))
			before := h.job(t)

			assert.Equal(t, ctrl.Result{}, h.reconcile(t), "nothing to wait for until its status says it finished")

			assert.Zero(t, h.statusWrites, "the status is the worker's, copied back by MultiKueue")
			assert.Equal(t, before.Status, h.job(t).Status)
			assert.Empty(t, madeByTheController(t, h), "no snapshot and no workload on the manager")
			assert.Empty(t, h.deletions)
			assert.Empty(t, h.events())
		})
	}
}

func TestADispatchedTrainJobQueuedOnTheManagerSaysItIsSuspendedOnce(t *testing.T) {
	tj := dispatchedJob()
	tj.Spec.Suspend = ptr.To(true) // Kueue holds it in its queue
	h := newHarness(t, tj, testRuntime(nil))
	h.clock.SetTime(created.Add(time.Minute))

	h.reconcile(t)
	got := h.job(t)
	c := meta.FindStatusCondition(got.Status.Conditions, trainerv1alpha1.TrainJobSuspended)
	require.NotNil(t, c, "Suspended, as a queued TrainJob says on one cluster")
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Contains(t, c.Message, "MultiKueue")
	assert.False(t, meta.IsStatusConditionTrue(got.Status.Conditions, trainerv1alpha1.TrainJobRunning))
	assert.Equal(t, 1, h.statusWrites)
	assert.Len(t, h.events(), 1)
	assert.Empty(t, madeByTheController(t, h), "nothing is built on the manager")

	h.reconcile(t)
	assert.Equal(t, 1, h.statusWrites, "quiet once it says so")
	assert.Empty(t, h.events())
}

func TestAFinishedDispatchedTrainJobIsDeletedOnceItsRuntimesTTLHasPassed(t *testing.T) {
	complete := cond(trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "PodCliqueSetSucceeded", finishedAt)
	failed := cond(trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, trainerv1alpha1.TrainJobDeadlineExceededReason, finishedAt)
	clusterRuntime := builders.RuntimeSpec("img:v1", 2).TTL(30).ClusterTrainingRuntime("crt")
	for _, tc := range []struct {
		name        string
		objs        []client.Object
		job         *trainerv1alpha1.TrainJob
		now         time.Time
		wantRequeue time.Duration
		wantDeleted bool
	}{
		{"complete, TTL not passed: woken when it passes", []client.Object{testRuntime(ptr.To[int32](30))}, dispatchedJob(runningOnWorker(), complete),
			finishedAt.Add(10 * time.Second), 20 * time.Second, false},
		{"complete, TTL passed: deleted", []client.Object{testRuntime(ptr.To[int32](30))}, dispatchedJob(runningOnWorker(), complete),
			finishedAt.Add(30 * time.Second), 0, true},
		{"failed, TTL passed: deleted", []client.Object{testRuntime(ptr.To[int32](30))}, dispatchedJob(runningOnWorker(), failed),
			finishedAt.Add(time.Hour), 0, true},
		{"TTL 0: deleted as soon as its status says it finished", []client.Object{testRuntime(ptr.To[int32](0))}, dispatchedJob(complete),
			finishedAt, 0, true},
		{"finished by the worker's clock, ahead of the manager's: woken at the TTL", []client.Object{testRuntime(ptr.To[int32](30))}, dispatchedJob(complete),
			finishedAt.Add(-5 * time.Second), 35 * time.Second, false},
		{"a ClusterTrainingRuntime's TTL", []client.Object{clusterRuntime}, func() *trainerv1alpha1.TrainJob {
			tj := dispatchedJob(complete)
			tj.Spec.RuntimeRef = trainerv1alpha1.RuntimeRef{Name: "crt", Kind: ptr.To(trainerv1alpha1.ClusterTrainingRuntimeKind)}
			return tj
		}(), finishedAt.Add(30 * time.Second), 0, true},
		{"a runtime without a TTL: kept", []client.Object{testRuntime(nil)}, dispatchedJob(complete),
			finishedAt.Add(24 * time.Hour), 0, false},
		{"no runtime on the manager: no TTL", nil, dispatchedJob(complete),
			finishedAt.Add(24 * time.Hour), 0, false},
		{"a runtimeRef kind that is no runtime: no TTL", []client.Object{testRuntime(ptr.To[int32](30))}, func() *trainerv1alpha1.TrainJob {
			tj := dispatchedJob(complete)
			tj.Spec.RuntimeRef.Kind = ptr.To("Deployment")
			return tj
		}(), finishedAt.Add(time.Hour), 0, false},
		{"Complete=False is not finished", []client.Object{testRuntime(ptr.To[int32](0))},
			dispatchedJob(cond(trainerv1alpha1.TrainJobComplete, metav1.ConditionFalse, "Running", finishedAt)),
			finishedAt.Add(time.Hour), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, append(tc.objs, tc.job)...)
			h.clock.SetTime(tc.now)

			assert.Equal(t, tc.wantRequeue, h.reconcile(t).RequeueAfter)

			assert.Equal(t, !tc.wantDeleted, h.jobExists(t))
			if tc.wantDeleted {
				assert.Equal(t, []string{"*v1alpha1.TrainJob/job Background"}, h.deletions)
				ev := h.events()
				require.Len(t, ev, 1)
				assert.Contains(t, ev[0], EventTTLExpired)
			} else {
				assert.Empty(t, h.deletions)
				assert.Empty(t, h.events())
			}
			assert.Zero(t, h.statusWrites, "its status stays the one copied back")
			assert.Empty(t, madeByTheController(t, h))
		})
	}
}

func TestAFinishedDispatchedTrainJobWaitsAcrossPassesThenGoes(t *testing.T) {
	h := newHarness(t, testRuntime(ptr.To[int32](60)), dispatchedJob(runningOnWorker(),
		cond(trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "PodCliqueSetSucceeded", finishedAt)))
	h.clock.SetTime(finishedAt.Add(15 * time.Second))
	assert.Equal(t, 45*time.Second, h.reconcile(t).RequeueAfter)
	h.clock.SetTime(finishedAt.Add(50 * time.Second))
	assert.Equal(t, 10*time.Second, h.reconcile(t).RequeueAfter, "recomputed from the API on every pass")
	require.True(t, h.jobExists(t))
	h.clock.SetTime(finishedAt.Add(60 * time.Second))
	h.reconcile(t)
	assert.False(t, h.jobExists(t), "deleted once the TTL passed")
	assert.Zero(t, h.statusWrites)
}

func TestAFailedRuntimeReadOfAFinishedDispatchedTrainJobIsRetried(t *testing.T) {
	h := newHarness(t, testRuntime(ptr.To[int32](0)), dispatchedJob(cond(trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, "PodCliqueSetFailed", finishedAt)))
	h.r.Client = interceptor.NewClient(h.c.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*trainerv1alpha1.TrainingRuntime); ok {
			return apierrors.NewServiceUnavailable("the API server is restarting")
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	h.clock.SetTime(finishedAt.Add(time.Hour))
	_, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "job"}})
	require.Error(t, err, "a failed read is no missing runtime: the pass is retried")
	assert.True(t, apierrors.IsServiceUnavailable(err))
	assert.True(t, h.jobExists(t))
}

func TestDispatchedFinishedPassesADispatchedTrainJobWhenItsFinishedNessChanges(t *testing.T) {
	running := cond(trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, "PodCliqueSetCreated", created)
	complete := cond(trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "PodCliqueSetSucceeded", finishedAt)
	failed := cond(trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, "PodCliqueSetFailed", finishedAt)
	ours := func(conds ...metav1.Condition) *trainerv1alpha1.TrainJob {
		tj := dispatchedJob(conds...)
		tj.Spec.ManagedBy = nil
		return tj
	}
	for _, tc := range []struct {
		name     string
		old, new *trainerv1alpha1.TrainJob
		want     bool
	}{
		{"its status copied back says it completed", dispatchedJob(runningOnWorker(), running), dispatchedJob(runningOnWorker(), running, complete), true},
		{"its status copied back says it failed", dispatchedJob(running), dispatchedJob(running, failed), true},
		{"it is no longer finished (MultiKueue dispatched it again)", dispatchedJob(complete), dispatchedJob(running), true},
		{"still running: a progress change", dispatchedJob(running), dispatchedJob(runningOnWorker(), running), false},
		{"still finished: another change", dispatchedJob(complete), dispatchedJob(runningOnWorker(), complete), false},
		{"a finished condition that is False is no finish", dispatchedJob(running),
			dispatchedJob(running, cond(trainerv1alpha1.TrainJobComplete, metav1.ConditionFalse, "Running", finishedAt)), false},
		{"a TrainJob of this controller that finished: its own predicate's", ours(running), ours(running, complete), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, dispatchedFinished.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}))
		})
	}
	for _, tc := range []struct {
		name string
		obj  client.Object
		want bool
	}{
		{"a dispatched TrainJob appears (or the controller starts)", dispatchedJob(complete), true},
		{"a dispatched TrainJob not finished appears", dispatchedJob(), true},
		{"a TrainJob of this controller appears", ours(), false},
		{"another kind", &grovev1alpha1.PodCliqueSet{}, false},
	} {
		t.Run("create: "+tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, dispatchedFinished.Create(event.CreateEvent{Object: tc.obj}))
		})
	}
	assert.False(t, dispatchedFinished.Delete(event.DeleteEvent{Object: dispatchedJob(complete)}), "a deleted TrainJob needs nothing")
	assert.False(t, dispatchedFinished.Generic(event.GenericEvent{Object: dispatchedJob(complete)}))
	assert.False(t, dispatchedFinished.Update(event.UpdateEvent{ObjectOld: &grovev1alpha1.PodCliqueSet{}, ObjectNew: &grovev1alpha1.PodCliqueSet{}}), "another kind")
}

func TestAWorkerCopyOfATrainJobSaysOnWhichClusterItRuns(t *testing.T) {
	for _, tc := range []struct {
		name        string
		labels      map[string]string
		clusterName string
		want        string // Dispatched's message, "" for no condition
	}{
		{"MultiKueue's copy names this cluster", map[string]string{grovev1alpha1.LabelMultiKueueOrigin: "multikueue"}, "worker-1",
			`runs on cluster worker-1, dispatched by Kueue's MultiKueue (origin "multikueue")`},
		{"MultiKueue's copy on a cluster whose name is not configured", map[string]string{grovev1alpha1.LabelMultiKueueOrigin: "multikueue"}, "",
			`runs on a worker cluster of MultiKueue (kueue.multiKueue.clusterName is not configured here), dispatched by Kueue's MultiKueue (origin "multikueue")`},
		{"a TrainJob created on this cluster", nil, "worker-1", ""},
		{"a TrainJob queued in Kueue, not dispatched", map[string]string{trainerv1alpha1.LabelKueueQueueName: "team-a"}, "worker-1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tj := testJob(func(tj *trainerv1alpha1.TrainJob) { tj.Labels = tc.labels })
			h := newHarness(t, testRuntime(nil), tj)
			h.r.ClusterName = tc.clusterName

			h.reconcile(t)

			got := h.job(t)
			_, ran := h.pcs(t)
			assert.True(t, ran, "it runs as any TrainJob")
			assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, trainerv1alpha1.TrainJobRunning))
			dispatched := meta.FindStatusCondition(got.Status.Conditions, ConditionDispatched)
			if tc.want == "" {
				assert.Nil(t, dispatched, "only MultiKueue's copies say where they run")
				return
			}
			require.NotNil(t, dispatched)
			assert.Equal(t, metav1.ConditionTrue, dispatched.Status)
			assert.Equal(t, grovev1alpha1.ReasonRunsOnWorker, dispatched.Reason)
			assert.Equal(t, tc.want, dispatched.Message)

			writes := h.statusWrites
			h.reconcile(t)
			assert.Equal(t, writes, h.statusWrites, "the condition is written once")
		})
	}
}

func TestAWorkerCopyKeepsSayingWhereItRanOnceItFinished(t *testing.T) {
	tj := testJob(func(tj *trainerv1alpha1.TrainJob) {
		tj.Labels = map[string]string{grovev1alpha1.LabelMultiKueueOrigin: "multikueue"}
	})
	h := newHarness(t, testRuntime(nil), tj)
	h.r.ClusterName = "worker-2"
	h.reconcile(t)
	pcs, _ := h.pcs(t)
	pcs.Status.Phase = grovev1alpha1.PodCliqueSetPhaseSucceeded
	require.NoError(t, h.c.Status().Update(context.Background(), pcs))
	h.reconcile(t)
	got := h.job(t)
	require.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, trainerv1alpha1.TrainJobComplete))
	dispatched := meta.FindStatusCondition(got.Status.Conditions, ConditionDispatched)
	require.NotNil(t, dispatched, "MultiKueue copies the finished status, Dispatched included, to the manager")
	assert.True(t, strings.HasPrefix(dispatched.Message, "runs on cluster worker-2,"), dispatched.Message)
	n := 0
	for _, c := range got.Status.Conditions {
		if c.Type == ConditionDispatched {
			n++
		}
	}
	assert.Equal(t, 1, n, "one Dispatched condition")
}
