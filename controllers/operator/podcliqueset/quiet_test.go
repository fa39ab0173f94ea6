package podcliqueset

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/test/builders"
)

func TestARecordedErrorKeepsTheTimeItWasFirstObserved(t *testing.T) {
	first := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	now := first.Add(time.Minute)
	quota := step(grovev1alpha1.ErrorCodeSyncReplica, errors.New("exceeded quota"))
	recorded := []grovev1alpha1.LastError{{Code: grovev1alpha1.ErrorCodeSyncReplica, Description: "exceeded quota", ObservedAt: metav1.NewTime(first)}}
	cases := []struct {
		name     string
		recorded []grovev1alpha1.LastError
		errs     []error
		want     []grovev1alpha1.LastError
	}{
		{"a new error is observed now", nil, []error{quota},
			[]grovev1alpha1.LastError{{Code: grovev1alpha1.ErrorCodeSyncReplica, Description: "exceeded quota", ObservedAt: metav1.NewTime(now)}}},
		{"the same error again keeps its first time", recorded, []error{quota}, recorded},
		{"another message of the step is a new error", recorded, []error{step(grovev1alpha1.ErrorCodeSyncReplica, errors.New("forbidden"))},
			[]grovev1alpha1.LastError{{Code: grovev1alpha1.ErrorCodeSyncReplica, Description: "forbidden", ObservedAt: metav1.NewTime(now)}}},
		{"an error of another step is a new error", recorded, []error{errors.New("exceeded quota")},
			[]grovev1alpha1.LastError{{Code: grovev1alpha1.ErrorCodeReconcile, Description: "exceeded quota", ObservedAt: metav1.NewTime(now)}}},
		{"no error clears the list", recorded, nil, nil},
		{"a conflict is no error to record: it only means read again", nil,
			[]error{step(grovev1alpha1.ErrorCodeSyncReplica, apierrors.NewConflict(schema.GroupResource{Resource: "podcliques"}, "p", errors.New("modified")))}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, lastErrors(tc.recorded, tc.errs, now))
		})
	}
}

func TestAStepThatKeepsFailingWritesNoStatusAfterItsFailureIsRecorded(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedulerv1alpha1.AddToScheme(scheme))
	statusWrites := 0
	c := fakeClient(scheme).WithObjects(samplePCS()).WithStatusSubresource(&grovev1alpha1.PodCliqueSet{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				if _, ok := obj.(*grovev1alpha1.PodClique); ok {
					return errors.New("exceeded quota")
				}
				return c.Create(ctx, obj, opts...)
			},
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				statusWrites++
				return c.SubResource(sub).Update(ctx, obj, opts...)
			},
		}).Build()
	registry, err := backends.PodPreparers(configv1alpha1.SchedulerConfiguration{})
	require.NoError(t, err)
	clock := clocktesting.NewFakePassiveClock(time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC))
	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(100), Backends: registry, Clock: clock}
	pcs := samplePCS()
	var firstSeen metav1.Time
	settled := 0
	for pass := range 5 {
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pcs)})
		require.Error(t, err, "pass %d: the step fails and the controller backs off", pass)
		require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(pcs), pcs))
		require.NotEmpty(t, pcs.Status.LastErrors, "the failure is in the status")
		if pass == 0 {
			firstSeen = pcs.Status.LastErrors[0].ObservedAt
		}
		assert.Equal(t, firstSeen, pcs.Status.LastErrors[0].ObservedAt, "pass %d keeps the first-seen time", pass)
		if pass == 1 {
			// The first pass created the PodGangs, the second records them: from here on
			// nothing but the failing step's next attempt happens.
			settled = statusWrites
		}
		clock.SetTime(clock.Now().Add(time.Second))
	}
	assert.Equal(t, settled, statusWrites, "no status write while the same step keeps failing")
}

func TestAGangTheSchedulerCannotPlaceIsNamedInPodGangsSchedulableWithTheSchedulersWords(t *testing.T) {
	gang := func(ack bool, scheduled metav1.ConditionStatus, reason string) *schedulerv1alpha1.PodGang {
		b := builders.PodGang("ns", "inf-0").PodGroup("inf-0-router", 1, "inf-0-router-0")
		if ack {
			b.Acknowledged()
		}
		pg := b.Obj()
		if reason != "" {
			pg.Status.Conditions = append(pg.Status.Conditions, metav1.Condition{Type: schedulerv1alpha1.ConditionScheduled, Status: scheduled,
				Reason: reason, Message: "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."})
		}
		return pg
	}
	cases := []struct {
		name       string
		pg         *schedulerv1alpha1.PodGang
		wantStatus metav1.ConditionStatus
		wantReason string
		mentions   string
	}{
		{"unschedulable: named with the scheduler's message", gang(true, metav1.ConditionFalse, corev1.PodReasonUnschedulable), metav1.ConditionFalse,
			grovev1alpha1.ReasonPodGangUnschedulable, "inf-0: not placed: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu."},
		{"placed", gang(true, metav1.ConditionTrue, schedulerv1alpha1.ReasonPlaced), metav1.ConditionTrue, grovev1alpha1.ReasonAllPodGangsSchedulable, ""},
		{"waiting for the scheduler, who said nothing yet", gang(true, metav1.ConditionFalse, schedulerv1alpha1.ReasonWaitingForPlacement), metav1.ConditionTrue,
			grovev1alpha1.ReasonAllPodGangsSchedulable, ""},
		{"not acknowledged comes first", gang(false, metav1.ConditionFalse, corev1.PodReasonUnschedulable), metav1.ConditionFalse,
			grovev1alpha1.ReasonSchedulerBackendNotReady, "has not acknowledged"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := emptyObserved()
			obs.wantGangs["inf-0"] = true
			obs.gangs["inf-0"] = tc.pg
			_, cond := podGangsSchedulable(samplePCS(), obs)
			assert.Equal(t, tc.wantStatus, cond.Status, cond.Message)
			assert.Equal(t, tc.wantReason, cond.Reason)
			assert.Contains(t, cond.Message, tc.mentions)
		})
	}
}
