package trainjob

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// created is when every test TrainJob was created.
var created = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func testRuntime(ttl *int32) *trainerv1alpha1.TrainingRuntime {
	b := builders.RuntimeSpec("img:v1", 2)
	if ttl != nil {
		b.TTL(*ttl)
	}
	return b.TrainingRuntime("ns", "rt")
}

func testJob(mutate ...func(*trainerv1alpha1.TrainJob)) *trainerv1alpha1.TrainJob {
	tj := builders.TrainJob("ns", "job", "rt").UID("job-uid").Generation(1).Created(metav1.NewTime(created)).Obj()
	for _, m := range mutate {
		m(tj)
	}
	return tj
}

type harness struct {
	r        *Reconciler
	c        client.Client
	clock    *clocktesting.FakePassiveClock
	recorder *events.FakeRecorder
	// statusWrites counts TrainJob status writes; failStatus makes the next ones fail.
	statusWrites int
	failStatus   error
	// deletions are the deletes sent, as "<type>/<name> <propagation>".
	deletions []string
}

func newHarness(t *testing.T, objs ...client.Object) *harness {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, trainerv1alpha1.AddToScheme(scheme))
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	require.NoError(t, jobsetv1alpha2.AddToScheme(scheme))
	h := &harness{clock: clocktesting.NewFakePassiveClock(created), recorder: events.NewFakeRecorder(100)}
	h.c = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&trainerv1alpha1.TrainJob{}, &grovev1alpha1.PodCliqueSet{}).
		WithInterceptorFuncs(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			do := &client.DeleteOptions{}
			do.ApplyOptions(opts)
			h.deletions = append(h.deletions, fmt.Sprintf("%T/%s %s", obj, obj.GetName(), ptr.Deref(do.PropagationPolicy, "")))
			return c.Delete(ctx, obj, opts...)
		}, SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			if _, ok := obj.(*trainerv1alpha1.TrainJob); ok && sub == "status" {
				if h.failStatus != nil {
					return h.failStatus
				}
				h.statusWrites++
			}
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	h.r = &Reconciler{Client: h.c, Recorder: h.recorder, Clock: h.clock}
	return h
}

// events drains the events recorded so far.
func (h *harness) events() []string {
	var out []string
	for {
		select {
		case e := <-h.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func (h *harness) reconcile(t *testing.T) ctrl.Result {
	t.Helper()
	res, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "job"}})
	require.NoError(t, err)
	return res
}

func (h *harness) job(t *testing.T) *trainerv1alpha1.TrainJob {
	t.Helper()
	tj := &trainerv1alpha1.TrainJob{}
	require.NoError(t, h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "job"}, tj))
	return tj
}

func (h *harness) pcs(t *testing.T) (*grovev1alpha1.PodCliqueSet, bool) {
	t.Helper()
	pcs := &grovev1alpha1.PodCliqueSet{}
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "job"}, pcs)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	require.NoError(t, err)
	return pcs, true
}

func TestStartSnapshotsTheRuntimeThenCreatesTheOwnedPodCliqueSet(t *testing.T) {
	h := newHarness(t, testRuntime(nil), testJob())
	h.reconcile(t)
	cm := &corev1.ConfigMap{}
	require.NoError(t, h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "job-runtime-snapshot"}, cm))
	assert.True(t, *cm.Immutable)
	assert.Equal(t, types.UID("job-uid"), metav1.GetControllerOf(cm).UID)
	pcs, ok := h.pcs(t)
	require.True(t, ok)
	assert.Equal(t, types.UID("job-uid"), metav1.GetControllerOf(pcs).UID)
	assert.Equal(t, "1", pcs.Annotations[annotationBuiltFrom])
	tj := h.job(t)
	running := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobRunning)
	require.NotNil(t, running)
	assert.Equal(t, metav1.ConditionTrue, running.Status)
	assert.Equal(t, "PodCliqueSetCreated", running.Reason)
	assert.EqualValues(t, 2, tj.Status.NumNodes)
}

func TestAReconcileWithNothingNewWritesNothing(t *testing.T) {
	h := newHarness(t, testRuntime(nil), testJob())
	h.reconcile(t)
	before := h.job(t).ResourceVersion
	pcsBefore, _ := h.pcs(t)
	h.reconcile(t)
	assert.Equal(t, before, h.job(t).ResourceVersion, "no status write")
	pcsAfter, _ := h.pcs(t)
	assert.Equal(t, pcsBefore.ResourceVersion, pcsAfter.ResourceVersion, "a running child is never rebuilt")
}

func TestAResumedJobIsRebuiltFromTheSnapshotNotTheEditedRuntime(t *testing.T) {
	rt := testRuntime(nil)
	h := newHarness(t, rt, testJob())
	h.reconcile(t)
	edited := rt.DeepCopy()
	require.NoError(t, h.c.Get(context.Background(), client.ObjectKeyFromObject(rt), edited))
	edited.Spec.Template.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Image = "img:v2"
	require.NoError(t, h.c.Update(context.Background(), edited))

	setSpec(t, h, func(tj *trainerv1alpha1.TrainJob) { tj.Spec.Suspend = ptr.To(true) })
	h.reconcile(t)
	_, exists := h.pcs(t)
	assert.False(t, exists, "suspending frees every pod by deleting the PodCliqueSet")
	require.NoError(t, h.c.Delete(context.Background(), edited))

	setSpec(t, h, func(tj *trainerv1alpha1.TrainJob) { tj.Spec.Suspend = ptr.To(false) })
	writes := h.statusWrites
	h.reconcile(t)
	pcs, ok := h.pcs(t)
	require.True(t, ok, "resumed with the runtime deleted")
	assert.Equal(t, "img:v1", pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image)
	tj := h.job(t)
	resumed := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobSuspended)
	assert.Equal(t, trainerv1alpha1.TrainJobResumedReason, resumed.Reason)
	assert.True(t, meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1alpha1.TrainJobRunning))
	assert.Equal(t, 1, h.statusWrites-writes, "the resume and the running workload are one status write")
}

func setSpec(t *testing.T, h *harness, change func(*trainerv1alpha1.TrainJob)) {
	t.Helper()
	tj := h.job(t)
	change(tj)
	tj.Generation++
	require.NoError(t, h.c.Update(context.Background(), tj))
}

func TestRunningJobRequeuesAtItsDeadlineAndFailsPastIt(t *testing.T) {
	h := newHarness(t, testRuntime(nil), testJob(func(tj *trainerv1alpha1.TrainJob) { tj.Spec.ActiveDeadlineSeconds = ptr.To[int64](100) }))
	h.clock.SetTime(created.Add(40 * time.Second))
	assert.Equal(t, 60*time.Second, h.reconcile(t).RequeueAfter, "woken exactly at the deadline")

	h.clock.SetTime(created.Add(100 * time.Second))
	h.reconcile(t)
	failed := meta.FindStatusCondition(h.job(t).Status.Conditions, trainerv1alpha1.TrainJobFailed)
	require.NotNil(t, failed)
	assert.Equal(t, trainerv1alpha1.TrainJobDeadlineExceededReason, failed.Reason)
	assert.True(t, created.Add(100*time.Second).Equal(failed.LastTransitionTime.Time), "stamped with the controller clock")
	_, exists := h.pcs(t)
	assert.False(t, exists, "the workload is torn down")
}

// A JobSet is deleted in the foreground, so the JobSet controller, which leaves a JobSet marked
// for deletion alone, cannot re-create its Jobs from a stale cache while its pods go.
func TestAJobPastItsDeadlineDeletesItsJobSetInTheForegroundAndItsPodCliqueSetInTheBackground(t *testing.T) {
	for _, tc := range []struct {
		kind trainerv1alpha1.WorkloadKind
		want string
	}{
		{trainerv1alpha1.WorkloadKindJobSet, "*v1alpha2.JobSet/job Foreground"},
		{trainerv1alpha1.WorkloadKindPodCliqueSet, "*v1alpha1.PodCliqueSet/job Background"},
	} {
		t.Run(string(tc.kind), func(t *testing.T) {
			rt := testRuntime(nil)
			rt.Spec.WorkloadKind = tc.kind
			h := newHarness(t, rt, testJob(func(tj *trainerv1alpha1.TrainJob) { tj.Spec.ActiveDeadlineSeconds = ptr.To[int64](100) }))
			h.reconcile(t)
			require.Empty(t, h.deletions, "nothing is deleted before the deadline")
			h.clock.SetTime(created.Add(100 * time.Second))
			h.reconcile(t)
			assert.Equal(t, []string{tc.want}, h.deletions)
		})
	}
}

func TestFinishedJobWaitsForItsTTLThenIsDeleted(t *testing.T) {
	h := newHarness(t, testRuntime(ptr.To[int32](30)), testJob())
	h.reconcile(t)
	pcs, _ := h.pcs(t)
	pcs.Status.Phase = grovev1alpha1.PodCliqueSetPhaseSucceeded
	require.NoError(t, h.c.Status().Update(context.Background(), pcs))
	h.clock.SetTime(created.Add(5 * time.Second))
	assert.Equal(t, 30*time.Second, h.reconcile(t).RequeueAfter, "the TTL counts from the Complete transition")
	complete := meta.FindStatusCondition(h.job(t).Status.Conditions, trainerv1alpha1.TrainJobComplete)
	require.NotNil(t, complete)
	assert.Equal(t, ReasonPodCliqueSetSucceeded, complete.Reason)

	h.clock.SetTime(created.Add(20 * time.Second))
	assert.Equal(t, 15*time.Second, h.reconcile(t).RequeueAfter, "recomputed from the API on every reconcile")
	h.clock.SetTime(created.Add(35 * time.Second))
	h.reconcile(t)
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "job"}, &trainerv1alpha1.TrainJob{})
	assert.True(t, apierrors.IsNotFound(err), "deleted once the TTL expired")
}

// The controller first sees the TrainJob after its deadline (it was down, or the runtime
// appeared late): the job fails before any workload exists, and still goes when its TTL expires.
func TestJobPastItsDeadlineBeforeItsWorkloadExistedStillWaitsForItsTTL(t *testing.T) {
	h := newHarness(t, testRuntime(ptr.To[int32](30)), testJob(func(tj *trainerv1alpha1.TrainJob) { tj.Spec.ActiveDeadlineSeconds = ptr.To[int64](10) }))
	h.clock.SetTime(created.Add(15 * time.Second))
	assert.Equal(t, 30*time.Second, h.reconcile(t).RequeueAfter, "woken when the TTL expires: nothing else will wake it")
	failed := meta.FindStatusCondition(h.job(t).Status.Conditions, trainerv1alpha1.TrainJobFailed)
	require.NotNil(t, failed)
	assert.Equal(t, trainerv1alpha1.TrainJobDeadlineExceededReason, failed.Reason)
	_, exists := h.pcs(t)
	assert.False(t, exists, "no workload was ever built")

	h.clock.SetTime(created.Add(45 * time.Second))
	h.reconcile(t)
	err := h.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "job"}, &trainerv1alpha1.TrainJob{})
	assert.True(t, apierrors.IsNotFound(err), "deleted once the TTL expired")
}

func TestFinishedJobNeverRecreatesItsChildren(t *testing.T) {
	h := newHarness(t, testRuntime(nil), testJob())
	h.reconcile(t)
	pcs, _ := h.pcs(t)
	pcs.Status.Phase = grovev1alpha1.PodCliqueSetPhaseFailed
	pcs.Status.Conditions = []metav1.Condition{{Type: grovev1alpha1.ConditionFailed, Status: metav1.ConditionTrue, Reason: grovev1alpha1.ReasonMaxRestartsExceeded, Message: "3 restarts"}}
	require.NoError(t, h.c.Status().Update(context.Background(), pcs))
	h.reconcile(t)
	failed := meta.FindStatusCondition(h.job(t).Status.Conditions, trainerv1alpha1.TrainJobFailed)
	require.NotNil(t, failed)
	assert.Equal(t, grovev1alpha1.ReasonMaxRestartsExceeded, failed.Reason)
	assert.Equal(t, "3 restarts", failed.Message)

	require.NoError(t, h.c.Delete(context.Background(), pcs))
	h.reconcile(t)
	_, exists := h.pcs(t)
	assert.False(t, exists)
}

func TestMissingRuntimeIsReportedOnce(t *testing.T) {
	h := newHarness(t, testJob())
	h.reconcile(t)
	tj := h.job(t)
	running := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobRunning)
	require.NotNil(t, running)
	assert.Equal(t, trainerv1alpha1.TrainJobRuntimeNotFoundReason, running.Reason)
	h.reconcile(t)
	assert.Equal(t, tj.ResourceVersion, h.job(t).ResourceVersion, "reported once, not rewritten")
	_, exists := h.pcs(t)
	assert.False(t, exists)
}

func TestJobManagedElsewhereIsLeftAlone(t *testing.T) {
	h := newHarness(t, testRuntime(nil), testJob(func(tj *trainerv1alpha1.TrainJob) {
		tj.Spec.ManagedBy = ptr.To(trainerv1alpha1.MultiKueueManagedBy)
	}))
	h.reconcile(t)
	assert.Empty(t, h.job(t).Status.Conditions)
	_, exists := h.pcs(t)
	assert.False(t, exists)
}

func TestARuntimePatchForAMissingJobIsReportedAndWaitsForAnEdit(t *testing.T) {
	h := newHarness(t, testRuntime(nil), testJob(func(tj *trainerv1alpha1.TrainJob) {
		tj.Spec.RuntimePatches = []trainerv1alpha1.RuntimePatch{{Manager: "example.com/tool", TrainingRuntimeSpec: &trainerv1alpha1.TrainingRuntimeSpecPatch{
			Template: &trainerv1alpha1.JobSetTemplatePatch{Spec: &trainerv1alpha1.JobSetSpecPatch{
				ReplicatedJobs: []trainerv1alpha1.ReplicatedJobPatch{{Name: "ghost"}},
			}},
		}}}
	}))
	h.reconcile(t)
	tj := h.job(t)
	running := meta.FindStatusCondition(tj.Status.Conditions, trainerv1alpha1.TrainJobRunning)
	require.NotNil(t, running)
	assert.Equal(t, ReasonBuildFailed, running.Reason)
	assert.Contains(t, running.Message, "ghost")
	_, exists := h.pcs(t)
	assert.False(t, exists)
	h.reconcile(t)
	assert.Equal(t, tj.ResourceVersion, h.job(t).ResourceVersion, "reported once")
}

func TestEveryPassWritesTheStatusAtMostOnce(t *testing.T) {
	h := newHarness(t, testRuntime(ptr.To[int32](60)), testJob(func(tj *trainerv1alpha1.TrainJob) { tj.Spec.ActiveDeadlineSeconds = ptr.To[int64](100) }))
	steps := []struct {
		name string
		do   func()
	}{
		{"start", func() {}},
		{"suspend", func() { setSpec(t, h, func(tj *trainerv1alpha1.TrainJob) { tj.Spec.Suspend = ptr.To(true) }) }},
		{"resume", func() { setSpec(t, h, func(tj *trainerv1alpha1.TrainJob) { tj.Spec.Suspend = ptr.To(false) }) }},
		{"past the deadline", func() { h.clock.SetTime(created.Add(200 * time.Second)) }},
		{"finished", func() {}},
	}
	for _, step := range steps {
		step.do()
		before := h.statusWrites
		h.reconcile(t)
		assert.LessOrEqual(t, h.statusWrites-before, 1, step.name)
	}
	failed := meta.FindStatusCondition(h.job(t).Status.Conditions, trainerv1alpha1.TrainJobFailed)
	require.NotNil(t, failed)
	assert.Equal(t, trainerv1alpha1.TrainJobDeadlineExceededReason, failed.Reason)
}

func TestAStatusWriteThatFailsEmitsNothingAndActsOnNothing(t *testing.T) {
	h := newHarness(t, testRuntime(nil), testJob(func(tj *trainerv1alpha1.TrainJob) { tj.Spec.ActiveDeadlineSeconds = ptr.To[int64](10) }))
	h.reconcile(t)
	h.events()
	h.clock.SetTime(created.Add(20 * time.Second))
	h.failStatus = apierrors.NewConflict(schema.GroupResource{Group: "trainer.kubeflow.org", Resource: "trainjobs"}, "job", errors.New("the object has been modified"))
	_, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "job"}})
	require.Error(t, err)
	assert.Empty(t, h.events(), "no event for a failure the status does not record")
	_, exists := h.pcs(t)
	assert.True(t, exists, "the workload stays until its failure is recorded")

	h.failStatus = nil
	h.reconcile(t)
	assert.Len(t, h.events(), 1, "the deadline is reported once it is recorded")
	_, exists = h.pcs(t)
	assert.False(t, exists)
}

func TestAWorkloadNameHeldByAnotherObjectIsReportedAndNeverTouched(t *testing.T) {
	foreign := &grovev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job", UID: "someone-else"}}
	h := newHarness(t, testRuntime(nil), testJob(), foreign)
	res := h.reconcile(t)
	assert.Equal(t, nameCollisionRecheck, res.RequeueAfter, "the holder's deletion wakes nothing: look again")
	running := meta.FindStatusCondition(h.job(t).Status.Conditions, trainerv1alpha1.TrainJobRunning)
	require.NotNil(t, running)
	assert.Equal(t, metav1.ConditionFalse, running.Status)
	assert.Equal(t, trainerv1alpha1.TrainJobNameCollisionReason, running.Reason)
	assert.Contains(t, running.Message, "PodCliqueSet job")
	assert.Len(t, h.events(), 1)

	setSpec(t, h, func(tj *trainerv1alpha1.TrainJob) { tj.Spec.Suspend = ptr.To(true) })
	h.reconcile(t)
	pcs, exists := h.pcs(t)
	require.True(t, exists, "suspending never deletes an object the TrainJob does not own")
	assert.Equal(t, types.UID("someone-else"), pcs.UID)
}

func TestAnUnsupportedRuntimeFailsTheJobAndItsTTLStillRuns(t *testing.T) {
	rt := testRuntime(ptr.To[int32](30))
	rt.Spec.WorkloadKind = "Deployment"
	h := newHarness(t, rt, testJob())
	assert.Equal(t, 30*time.Second, h.reconcile(t).RequeueAfter, "a failure at start waits for the TTL like any other")
	failed := meta.FindStatusCondition(h.job(t).Status.Conditions, trainerv1alpha1.TrainJobFailed)
	require.NotNil(t, failed)
	assert.Equal(t, trainerv1alpha1.TrainJobRuntimeNotSupportedReason, failed.Reason)
	assert.Contains(t, failed.Message, "spec.workloadKind")
	_, exists := h.pcs(t)
	assert.False(t, exists)
}

// Kueue finishes evicting a TrainJob only once no job counts an active pod: while suspended, the
// job counts keep following the workload until its pods are gone.
func TestASuspendedJobStopsCountingActivePodsOnceItsWorkloadIsGone(t *testing.T) {
	h := newHarness(t, testRuntime(nil), testJob())
	h.reconcile(t)
	pcs, ok := h.pcs(t)
	require.True(t, ok)
	pcs.Status.CliqueStatuses = []grovev1alpha1.CliqueStatus{{Name: "node", Replicas: 2, ReadyReplicas: 2}}
	require.NoError(t, h.c.Status().Update(context.Background(), pcs))
	h.reconcile(t)
	require.NotEmpty(t, h.job(t).Status.JobsStatus)
	assert.EqualValues(t, 2, ptr.Deref(h.job(t).Status.JobsStatus[0].Active, 0), "running: both nodes count as active")

	setSpec(t, h, func(tj *trainerv1alpha1.TrainJob) { tj.Spec.Suspend = ptr.To(true) })
	h.reconcile(t)
	_, exists := h.pcs(t)
	require.False(t, exists)
	h.reconcile(t)
	for _, j := range h.job(t).Status.JobsStatus {
		assert.Zero(t, ptr.Deref(j.Active, 0), "suspended and its PodCliqueSet gone: job %s counts no active pod", j.Name)
	}
}

// A JobSet deleted in the foreground waits for the garbage collector to delete its Jobs. When
// that outlives foregroundStall (a Job re-created from a stale cache after the collector looked
// at the JobSet), it is deleted again in the background, which ends the wait.
func TestAJobSetWhoseForegroundDeletionStallsIsDeletedAgainInTheBackground(t *testing.T) {
	markedAt := created.Add(100 * time.Second)
	for _, tc := range []struct {
		name        string
		after       time.Duration
		finalizers  []string
		owned       bool
		wantDeletes []string
		wantRequeue time.Duration
	}{
		{"within the bound: woken when it ends", 10 * time.Second, []string{metav1.FinalizerDeleteDependents}, true, nil, 5 * time.Second},
		{"at the bound: deleted again in the background", foregroundStall, []string{metav1.FinalizerDeleteDependents}, true, []string{"*v1alpha2.JobSet/job Background"}, 0},
		{"held only by another finalizer: left to its holder", time.Minute, []string{"example.com/hold"}, true, nil, 0},
		{"not the TrainJob's: left alone", time.Minute, []string{metav1.FinalizerDeleteDependents}, false, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := testRuntime(nil)
			rt.Spec.WorkloadKind = trainerv1alpha1.WorkloadKindJobSet
			tj := testJob(func(tj *trainerv1alpha1.TrainJob) {
				tj.Status.Conditions = []metav1.Condition{cond(trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, trainerv1alpha1.TrainJobDeadlineExceededReason, markedAt)}
			})
			js := builders.JobSet("ns", "job").MarkedForDeletion(markedAt, tc.finalizers...)
			if tc.owned {
				js.ControlledBy(tj)
			}
			h := newHarness(t, rt, tj, js.Obj())
			h.clock.SetTime(markedAt.Add(tc.after))
			assert.Equal(t, tc.wantRequeue, h.reconcile(t).RequeueAfter)
			assert.Equal(t, tc.wantDeletes, h.deletions)
			stalled := slices.ContainsFunc(h.events(), func(e string) bool { return strings.Contains(e, EventDeletionStalled) })
			assert.Equal(t, tc.wantDeletes != nil, stalled, "a warning event says so exactly when it is deleted again")
			assert.Zero(t, h.statusWrites, "the status already says how the job ended")
		})
	}
}

// Once the TrainJob is gone nothing looks at its workload again: its TTL deletion releases a
// workload still waiting in the foreground first, whatever the bound.
func TestTheTTLDeletionReleasesAWorkloadStillWaitingInTheForeground(t *testing.T) {
	finishedAt := created.Add(100 * time.Second)
	rt := testRuntime(ptr.To[int32](30))
	rt.Spec.WorkloadKind = trainerv1alpha1.WorkloadKindJobSet
	tj := testJob(func(tj *trainerv1alpha1.TrainJob) {
		tj.Status.Conditions = []metav1.Condition{cond(trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, trainerv1alpha1.TrainJobDeadlineExceededReason, finishedAt)}
	})
	js := builders.JobSet("ns", "job").ControlledBy(tj).MarkedForDeletion(finishedAt.Add(28*time.Second), metav1.FinalizerDeleteDependents)
	h := newHarness(t, rt, tj, js.Obj())
	h.clock.SetTime(finishedAt.Add(30 * time.Second))
	h.reconcile(t)
	assert.Equal(t, []string{"*v1alpha2.JobSet/job Background", "*v1alpha1.TrainJob/job Background"}, h.deletions)
}
