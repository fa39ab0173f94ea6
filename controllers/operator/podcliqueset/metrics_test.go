package podcliqueset

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/podgangstatus"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/metricstest"
)

func TestGangFirstsAreTheFirstPlacementAndReadinessOnly(t *testing.T) {
	created := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: created.Add(d)} }
	dur := func(d time.Duration) *time.Duration { return &d }
	for _, tc := range []struct {
		name                     string
		lastScheduled, lastReady *metav1.Time // stored before the write
		part                     podgangstatus.Part
		wantScheduled, wantReady *time.Duration
	}{
		{name: "nothing placed yet", part: podgangstatus.Part{}},
		{name: "placed for the first time", part: podgangstatus.Part{LastScheduled: at(90 * time.Second)}, wantScheduled: dur(90 * time.Second)},
		{name: "placed and ready in one write", part: podgangstatus.Part{LastScheduled: at(time.Minute), LastReady: at(time.Minute)},
			wantScheduled: dur(time.Minute), wantReady: dur(time.Minute)},
		{name: "ready for the first time, placed before", lastScheduled: at(time.Minute),
			part: podgangstatus.Part{LastScheduled: at(time.Minute), LastReady: at(3 * time.Minute)}, wantReady: dur(3 * time.Minute)},
		{name: "placed again after losing a pod: not a gang's first wait", lastScheduled: at(time.Minute), lastReady: at(2 * time.Minute),
			part: podgangstatus.Part{LastScheduled: at(time.Hour), LastReady: at(time.Hour)}},
		{name: "stamped before the API server's second of creation", part: podgangstatus.Part{LastScheduled: at(-time.Second)}, wantScheduled: dur(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := builders.PodGang("ns", "inf-0").Created(created).Obj()
			pg.Status.LastScheduled, pg.Status.LastReady = tc.lastScheduled, tc.lastReady

			scheduled, ready := gangFirsts(pg, tc.part)

			assert.Equal(t, tc.wantScheduled, scheduled)
			assert.Equal(t, tc.wantReady, ready)
		})
	}
}

// Through the reconciler's own writes: observed once the status write succeeded, and once.
func TestAGangsFirstPlacementIsObservedAfterItsStatusWriteSucceeded(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedulerv1alpha1.AddToScheme(scheme))
	refuse := false
	c := fakeClient(scheme).WithStatusSubresource(&schedulerv1alpha1.PodGang{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				if refuse {
					return errors.New("the API server is unavailable")
				}
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
			SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
				if refuse {
					return errors.New("the API server is unavailable")
				}
				return c.SubResource(sub).Apply(ctx, obj, opts...)
			},
		}).Build()
	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10)}
	pcs := builders.PodCliqueSet("ns", "inf").Replicas(1).Clique("router", 1).Obj()
	obs := emptyObserved()
	obs.backend = "metrics-test"
	ctx := context.Background()
	current := func() *schedulerv1alpha1.PodGang {
		pg := &schedulerv1alpha1.PodGang{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, pg))
		return pg
	}
	// pass plans replica 0's PodGangs from obs as observe would see them, and acts on the plan.
	pass := func() error {
		t.Helper()
		p := plan{wantGangs: map[string]bool{}}
		p.podGangs(input{pcs: pcs, obs: obs, now: time.Now()}, 0)
		failed := r.applyChanges(ctx, pcs, obs, p.changes)
		for _, err := range failed {
			require.NoError(t, err)
		}
		return r.applyGangStatus(ctx, p.gangStatus, p.changes, failed)
	}
	backend := map[string]string{"backend": "metrics-test"}
	scheduled := func() float64 { return metricstest.Observations(t, "grove_podgang_time_to_scheduled_seconds", backend) }
	ready := func() float64 { return metricstest.Observations(t, "grove_podgang_time_to_ready_seconds", backend) }
	running := builders.Pod("ns", "inf-0-router-0").NodeName("n").Phase(corev1.PodRunning).Ready(true).Obj()

	require.NoError(t, pass()) // creates the PodGang; its pod does not exist yet
	obs.gangs["inf-0"] = current()
	obs.pods["inf-0-router"] = []*corev1.Pod{running}

	refuse = true
	require.Error(t, pass())
	assert.Zero(t, scheduled(), "a refused write records nothing, and nothing is observed")
	assert.Zero(t, ready())

	refuse = false
	require.NoError(t, pass())
	assert.Equal(t, 1.0, scheduled(), "the write that records the first placement observes it")
	assert.Equal(t, 1.0, ready())

	// The pod is lost and placed again: the gang's first wait was observed already.
	obs.gangs["inf-0"] = current()
	obs.pods["inf-0-router"] = []*corev1.Pod{builders.Pod("ns", "inf-0-router-0").Phase(corev1.PodPending).Obj()}
	require.NoError(t, pass())
	obs.gangs["inf-0"] = current()
	obs.pods["inf-0-router"] = []*corev1.Pod{running}
	require.NoError(t, pass())
	require.NotNil(t, current().Status.LastScheduled)
	assert.Equal(t, 1.0, scheduled())
	assert.Equal(t, 1.0, ready())
}

func TestUpdateEndedCountsFromUpdateInProgressTurningTrue(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) metav1.Time { return metav1.NewTime(t0.Add(d)) }
	updating := func(status metav1.ConditionStatus, reason string, since time.Duration) []metav1.Condition {
		return []metav1.Condition{{Type: grovev1alpha1.ConditionUpdateInProgress, Status: status, Reason: reason, LastTransitionTime: at(since)}}
	}
	progressing := func(since time.Duration) []metav1.Condition {
		return updating(metav1.ConditionTrue, grovev1alpha1.ReasonProgressing, since)
	}
	stalled := func(since time.Duration) []metav1.Condition {
		return updating(metav1.ConditionUnknown, grovev1alpha1.ReasonProgressDeadlineExceeded, since)
	}
	done := func(since time.Duration) []metav1.Condition {
		return updating(metav1.ConditionFalse, grovev1alpha1.ReasonNoActiveUpdate, since)
	}
	progress := func(started time.Duration, ended *time.Duration) *grovev1alpha1.PodCliqueSetUpdateProgress {
		p := &grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: at(started)}
		if ended != nil {
			e := at(*ended)
			p.UpdateEndedAt = &e
		}
		return p
	}
	for _, tc := range []struct {
		name     string
		old, new grovev1alpha1.PodCliqueSetStatus
		want     time.Duration
		ended    bool
	}{
		{name: "no update ever", old: grovev1alpha1.PodCliqueSetStatus{}, new: grovev1alpha1.PodCliqueSetStatus{Conditions: done(0)}},
		{name: "still rolling", old: grovev1alpha1.PodCliqueSetStatus{Conditions: progressing(0)}, new: grovev1alpha1.PodCliqueSetStatus{Conditions: progressing(0)}},
		{name: "starts", old: grovev1alpha1.PodCliqueSetStatus{Conditions: done(0)}, new: grovev1alpha1.PodCliqueSetStatus{Conditions: progressing(time.Minute)}},
		{name: "stalls: not ended", old: grovev1alpha1.PodCliqueSetStatus{Conditions: progressing(0)}, new: grovev1alpha1.PodCliqueSetStatus{Conditions: stalled(10 * time.Minute)}},
		{name: "ends", old: grovev1alpha1.PodCliqueSetStatus{Conditions: progressing(0), UpdateProgress: progress(0, nil)},
			new: grovev1alpha1.PodCliqueSetStatus{Conditions: done(12 * time.Minute), UpdateProgress: progress(0, ptrTo(12*time.Minute))}, want: 12 * time.Minute, ended: true},
		{name: "ends after stalling: from when the update began, not the stall", old: grovev1alpha1.PodCliqueSetStatus{Conditions: stalled(10 * time.Minute)},
			new: grovev1alpha1.PodCliqueSetStatus{Conditions: done(time.Hour), UpdateProgress: progress(0, ptrTo(time.Hour))}, want: time.Hour, ended: true},
		{name: "a child rolled alone, after the PodCliqueSet's own update had ended", old: grovev1alpha1.PodCliqueSetStatus{Conditions: progressing(time.Hour)},
			new: grovev1alpha1.PodCliqueSetStatus{Conditions: done(time.Hour + 5*time.Minute), UpdateProgress: progress(0, ptrTo(10*time.Minute))}, want: 5 * time.Minute, ended: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ended := updateEnded(&tc.old, &tc.new)
			assert.Equal(t, tc.ended, ended)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFailureReasonIsTheFailedConditionsInABoundedSet(t *testing.T) {
	for _, tc := range []struct {
		reason, want string
	}{
		{grovev1alpha1.ReasonMaxRestartsExceeded, grovev1alpha1.ReasonMaxRestartsExceeded},
		{grovev1alpha1.ReasonMaxRuntimeExceeded, grovev1alpha1.ReasonMaxRuntimeExceeded},
		{EventPodCliqueFailed, EventPodCliqueFailed},
		{"SomethingNew", EventPodCliqueFailed},
		{"", EventPodCliqueFailed},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			var conds []metav1.Condition
			if tc.reason != "" {
				conds = []metav1.Condition{{Type: grovev1alpha1.ConditionFailed, Status: metav1.ConditionTrue, Reason: tc.reason}}
			}
			assert.Equal(t, tc.want, failureReason(conds))
		})
	}
}

func TestATrainingFailureIsCountedOnceByReasonWhenThePhaseTurnsFailed(t *testing.T) {
	failures := func() float64 {
		return metricstest.Observations(t, "grove_training_failures_total", map[string]string{"reason": grovev1alpha1.ReasonMaxRestartsExceeded})
	}
	before := failures()
	f, _, _ := groupFixture(t, true)

	f.reconcile(t, "tg") // records the failure; the phase waits for every pod to be gone
	assert.Equal(t, before, failures(), "not Failed yet")
	f.reconcile(t, "tg") // nothing is left: Failed
	assert.Equal(t, before+1, failures())
	f.reconcile(t, "tg")
	assert.Equal(t, before+1, failures(), "a Failed workload is counted once")
}

func TestAnUpdateIsObservedOnceWhenItsStatusWriteEndsIt(t *testing.T) {
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	pcs := builders.PodCliqueSet("ns", "inf").Replicas(1).Clique("worker", 1).UpdateStrategy(grovev1alpha1.OnDeleteStrategy).Obj()
	pcs.Status.Conditions = []metav1.Condition{{Type: grovev1alpha1.ConditionUpdateInProgress, Status: metav1.ConditionTrue,
		Reason: grovev1alpha1.ReasonProgressing, LastTransitionTime: metav1.NewTime(t0)}}
	f := newFixture(t, pcs)
	updates := func() float64 {
		return metricstest.Observations(t, "grove_podcliqueset_update_duration_seconds", map[string]string{"strategy": string(grovev1alpha1.OnDeleteStrategy)})
	}
	before := updates()

	f.reconcile(t, "inf") // creates the children; the status waits for a pass that sees them
	f.reconcile(t, "inf") // no child rolls any more: UpdateInProgress turns False
	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, f.c.Get(context.Background(), client.ObjectKeyFromObject(pcs), got))
	c := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionUpdateInProgress)
	require.NotNil(t, c)
	require.Equal(t, grovev1alpha1.ReasonNoActiveUpdate, c.Reason)
	assert.Equal(t, before+1, updates())

	f.reconcile(t, "inf")
	assert.Equal(t, before+1, updates(), "an ended update is observed once")
}
