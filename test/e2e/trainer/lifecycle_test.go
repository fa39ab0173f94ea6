package trainere2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// path is one of the two workloads a TrainJob becomes, with how to find its pods.
type path struct {
	kind  trainerv1alpha1.WorkloadKind
	child func(ns, name string) client.Object
	pods  func(name string) map[string]string
}

var paths = []path{
	{trainerv1alpha1.WorkloadKindJobSet,
		func(ns, name string) client.Object {
			return &jobsetv1alpha2.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		},
		func(name string) map[string]string { return map[string]string{jobsetv1alpha2.JobSetNameKey: name} }},
	{trainerv1alpha1.WorkloadKindPodCliqueSet,
		func(ns, name string) client.Object {
			return &grovev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		},
		func(name string) map[string]string { return map[string]string{grovev1alpha1.LabelPartOf: name} }},
}

func TestDeadlineExceededFailsTheTrainJobAndTearsItsPodsDown(t *testing.T) {
	t.Parallel()
	for _, p := range paths {
		t.Run(string(p.kind), func(t *testing.T) {
			t.Parallel()
			ns := cluster.Current.NewNamespace(t)
			newRuntime(t, ns, "rt", runtimeSpec(p.kind, neverExit, nil, 0))
			tj := trainJob(ns, "slow", "rt", 2, ptr.To[int64](4), false)
			create(t, tj)
			waitRunningPods(t, ns, p.pods("slow"))
			failed := waitCondition(t, tj, trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, trainerv1alpha1.TrainJobDeadlineExceededReason, time.Minute)
			at := findCondition(failed, trainerv1alpha1.TrainJobFailed).LastTransitionTime.Time
			elapsed := at.Sub(failed.CreationTimestamp.Time)
			assert.GreaterOrEqual(t, elapsed, 3*time.Second, "not before the deadline (1 s timestamp resolution)")
			assert.Less(t, elapsed, 8*time.Second, "on time")
			waitGone(t, p.child(ns, "slow"), time.Minute)
			waitNoPods(t, ns, p.pods("slow"))
			assertEvent(t, ns, "slow", "DeadlineExceeded")
			assert.GreaterOrEqual(t, metricValue(t, `grove_trainjobs_finished_total{condition="Failed",reason="DeadlineExceeded"}`), 1.0)
			// A finished TrainJob never brings its workload back: nothing for 2 s once the
			// trainer-controller stopped writing in the namespace.
			quietTrainer(t, ns)
			assert.True(t, apierrors.IsNotFound(k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "slow"}, p.child(ns, "slow"))))
		})
	}
}

func TestTTLDeletesTheFinishedTrainJobAndEveryChild(t *testing.T) {
	t.Parallel()
	for i, p := range paths {
		ttl := []int32{3, 0}[i] // TTL 0 on the PodCliqueSet path: deleted at once
		t.Run(string(p.kind), func(t *testing.T) {
			t.Parallel()
			ns := cluster.Current.NewNamespace(t)
			newRuntime(t, ns, "rt", runtimeSpec(p.kind, succeedAfter2s, ptr.To(ttl), 0))
			tj := trainJob(ns, "short", "rt", 2, nil, false)
			create(t, tj)
			var completedAt time.Time
			require.Eventually(t, func() bool {
				got := &trainerv1alpha1.TrainJob{}
				err := k8s().Get(context.Background(), client.ObjectKeyFromObject(tj), got)
				if c := meta.FindStatusCondition(got.Status.Conditions, trainerv1alpha1.TrainJobComplete); err == nil && c != nil && completedAt.IsZero() {
					completedAt = c.LastTransitionTime.Time
				}
				return apierrors.IsNotFound(err)
			}, 2*time.Minute, 100*time.Millisecond, "the TrainJob is deleted after its TTL")
			deletedAt := time.Now()
			if !completedAt.IsZero() {
				assert.GreaterOrEqual(t, deletedAt.Sub(completedAt), time.Duration(ttl)*time.Second-time.Second, "not before the TTL")
			}
			waitGone(t, p.child(ns, "short"), time.Minute)
			waitNoPods(t, ns, p.pods("short"))
			waitGone(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "short-runtime-snapshot"}}, time.Minute)
		})
	}
}

func TestSuspendedAtCreationTheTimerDoesNotRunUntilResumed(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	newRuntime(t, ns, "rt", runtimeSpec(trainerv1alpha1.WorkloadKindPodCliqueSet, neverExit, nil, 0))
	tj := trainJob(ns, "later", "rt", 2, ptr.To[int64](4), true)
	create(t, tj)
	waitCondition(t, tj, trainerv1alpha1.TrainJobSuspended, metav1.ConditionTrue, trainerv1alpha1.TrainJobSuspendedReason, 30*time.Second)
	got := get(t, tj)
	cluster.SleepPast(got.CreationTimestamp.Time, 4*time.Second) // past the deadline, had it run
	got = get(t, tj)
	assert.Nil(t, finishedCondition(got), "a suspended TrainJob's deadline does not run")
	assert.Empty(t, pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "later"}))

	setSuspend(t, tj, false)
	resumed := waitCondition(t, tj, trainerv1alpha1.TrainJobSuspended, metav1.ConditionFalse, trainerv1alpha1.TrainJobResumedReason, 30*time.Second)
	resumedAt := findCondition(resumed, trainerv1alpha1.TrainJobSuspended).LastTransitionTime.Time
	waitRunningPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "later"})
	waitCondition(t, tj, trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, "", 30*time.Second)
	failed := waitCondition(t, tj, trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, trainerv1alpha1.TrainJobDeadlineExceededReason, time.Minute)
	elapsed := findCondition(failed, trainerv1alpha1.TrainJobFailed).LastTransitionTime.Sub(resumedAt)
	assert.GreaterOrEqual(t, elapsed, 3*time.Second, "the deadline counts from the resume")
	assert.Less(t, elapsed, 8*time.Second)
	assertEvent(t, ns, "later", "Resumed")
}

func TestSuspendWhileRunningFreesThePodsAndResumeGivesTheFullDeadlineAgain(t *testing.T) {
	t.Parallel()
	for _, p := range paths {
		t.Run(string(p.kind), func(t *testing.T) {
			t.Parallel()
			ns := cluster.Current.NewNamespace(t)
			newRuntime(t, ns, "rt", runtimeSpec(p.kind, neverExit, nil, 0))
			tj := trainJob(ns, "pause", "rt", 2, ptr.To[int64](12), false)
			create(t, tj)
			waitRunningPods(t, ns, p.pods("pause"))
			time.Sleep(3 * time.Second) // use part of the deadline

			setSuspend(t, tj, true)
			waitCondition(t, tj, trainerv1alpha1.TrainJobSuspended, metav1.ConditionTrue, trainerv1alpha1.TrainJobSuspendedReason, 30*time.Second)
			waitNoPods(t, ns, p.pods("pause"))
			state := findCondition(get(t, tj), trainerv1alpha1.TrainJobRunning)
			assert.Equal(t, metav1.ConditionFalse, state.Status)
			assert.Equal(t, trainerv1alpha1.TrainJobSuspendedReason, state.Reason)
			cluster.SleepPast(get(t, tj).CreationTimestamp.Time, 12*time.Second) // past the original deadline while suspended
			assert.Nil(t, finishedCondition(get(t, tj)), "the timer stopped while suspended")

			setSuspend(t, tj, false)
			resumed := waitCondition(t, tj, trainerv1alpha1.TrainJobSuspended, metav1.ConditionFalse, trainerv1alpha1.TrainJobResumedReason, 30*time.Second)
			resumedAt := findCondition(resumed, trainerv1alpha1.TrainJobSuspended).LastTransitionTime.Time
			waitRunningPods(t, ns, p.pods("pause"))
			running := waitCondition(t, tj, trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, "", 30*time.Second)
			assert.Nil(t, finishedCondition(running))
			failed := waitCondition(t, tj, trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, trainerv1alpha1.TrainJobDeadlineExceededReason, time.Minute)
			elapsed := findCondition(failed, trainerv1alpha1.TrainJobFailed).LastTransitionTime.Sub(resumedAt)
			assert.GreaterOrEqual(t, elapsed, 11*time.Second, "the full deadline again after the resume")
			assert.Less(t, elapsed, 16*time.Second)
		})
	}
}

func finishedCondition(tj *trainerv1alpha1.TrainJob) *metav1.Condition {
	for _, typ := range []string{trainerv1alpha1.TrainJobComplete, trainerv1alpha1.TrainJobFailed} {
		if c := meta.FindStatusCondition(tj.Status.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return nil
}

func TestMissingRuntimeIsReportedAndTheTrainJobStartsWhenItAppears(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	tj := trainJob(ns, "early", "not-yet", 1, nil, false)
	create(t, tj)
	waiting := waitCondition(t, tj, trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, trainerv1alpha1.TrainJobRuntimeNotFoundReason, 30*time.Second)
	assert.Contains(t, findCondition(waiting, trainerv1alpha1.TrainJobRunning).Message, `TrainingRuntime "not-yet"`)
	assertEvent(t, ns, "early", "TrainingRuntimeNotFound")

	newRuntime(t, ns, "not-yet", runtimeSpec(trainerv1alpha1.WorkloadKindPodCliqueSet, succeedAfter2s, nil, 0))
	waitCondition(t, tj, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)
}

func TestTrainJobKeepsTheRuntimeItStartedWith(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	rt := newRuntime(t, ns, "rt", runtimeSpec(trainerv1alpha1.WorkloadKindPodCliqueSet, neverExit, nil, 0))
	tj := trainJob(ns, "steady", "rt", 2, nil, false)
	create(t, tj)
	waitRunningPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "steady"})

	// The runtime goes away; a suspend and resume rebuild the workload from the snapshot.
	require.NoError(t, k8s().Delete(context.Background(), rt))
	setSuspend(t, tj, true)
	waitNoPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "steady"})
	setSuspend(t, tj, false)
	waitRunningPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "steady"})
	got := get(t, tj)
	assert.Nil(t, finishedCondition(got))
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, trainerv1alpha1.TrainJobRunning))
}

func TestTrainJobManagedByAnotherControllerIsLeftAlone(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	newRuntime(t, ns, "rt", runtimeSpec(trainerv1alpha1.WorkloadKindJobSet, succeedAfter2s, nil, 0))
	tj := trainJob(ns, "remote", "rt", 1, nil, false)
	tj.Spec.ManagedBy = ptr.To(trainerv1alpha1.MultiKueueManagedBy)
	create(t, tj)
	quietTrainer(t, ns)
	assert.Empty(t, get(t, tj).Status.Conditions)
	assert.True(t, apierrors.IsNotFound(k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "remote"}, &jobsetv1alpha2.JobSet{})))
}

// quietTrainer waits until the trainer-controller has written nothing in the namespace for 2 s
// (the audit log), the bound of a check that it did not act, and returns when.
func quietTrainer(t *testing.T, ns string) time.Time {
	t.Helper()
	return cluster.Current.WaitQuiet(t, 2*time.Second, time.Minute, func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Namespace == ns && ev.User.Username == trainerUser
	})
}
