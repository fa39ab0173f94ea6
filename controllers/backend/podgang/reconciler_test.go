package podgang

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/test/builders"
)

// stubBackend stands in for a scheduler: it records what the reconciler asks of it.
type stubBackend struct {
	backends.Syncer // the methods the reconciler does not call
	syncErr         error
	synced, deleted []string
	// clock is the reconciler's; a sync moves it on by took.
	clock *clocktesting.FakePassiveClock
	took  time.Duration
}

func (b *stubBackend) Name() configv1alpha1.SchedulerName { return configv1alpha1.SchedulerNameKube }

func (b *stubBackend) SyncPodGang(_ context.Context, pg *schedulerv1alpha1.PodGang) (string, string, error) {
	b.synced = append(b.synced, pg.Name)
	if b.clock != nil {
		b.clock.SetTime(b.clock.Now().Add(b.took))
	}
	return "PodGroupCreated", "the scheduler's objects match", b.syncErr
}

// SchedulingGroups assigns each pod group a scheduler group of its own, named sg-<pod group>.
func (b *stubBackend) SchedulingGroups(pg *schedulerv1alpha1.PodGang) []schedulerv1alpha1.SchedulingGroup {
	var out []schedulerv1alpha1.SchedulingGroup
	for _, g := range pg.Spec.PodGroups {
		out = append(out, schedulerv1alpha1.SchedulingGroup{PodGroup: g.Name, Name: "sg-" + g.Name})
	}
	return out
}

func (b *stubBackend) OnPodGangDelete(_ context.Context, pg *schedulerv1alpha1.PodGang) error {
	b.deleted = append(b.deleted, pg.Name)
	return nil
}

// runPass runs one pass for PodGang ns/g over the objects and returns the stored PodGang
// (nil when gone), how many status writes the pass made and its error.
func runPass(t *testing.T, b *stubBackend, objs ...client.Object) (*schedulerv1alpha1.PodGang, int, error) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, schedulerv1alpha1.AddToScheme(scheme))
	require.NoError(t, corev1.AddToScheme(scheme))
	writes := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&schedulerv1alpha1.PodGang{}).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				writes++
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
			SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
				writes++
				return c.SubResource(sub).Apply(ctx, obj, opts...)
			},
		}).Build()
	r := &Reconciler{Client: c, Backend: b}
	if b.clock != nil {
		r.Clock = b.clock
	}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "g"}})
	got := &schedulerv1alpha1.PodGang{}
	if getErr := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "g"}, got); getErr != nil {
		return nil, writes, err
	}
	return got, writes, err
}

func TestBackendAcknowledgesThePodGangsCurrentGeneration(t *testing.T) {
	pg := builders.PodGang("ns", "g").Backend("kube-scheduler").PodGroup("g-a", 2, "g-a-0", "g-a-1").Obj()
	pg.Generation = 3
	b := &stubBackend{}

	got, writes, err := runPass(t, b, pg)

	require.NoError(t, err)
	assert.Equal(t, []string{"g"}, b.synced)
	assert.Equal(t, 1, writes)
	c := meta.FindStatusCondition(got.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Equal(t, "PodGroupCreated", c.Reason)
	assert.Equal(t, int64(3), c.ObservedGeneration, "the acknowledgement names the generation it covers")
	assert.Equal(t, []schedulerv1alpha1.SchedulingGroup{{PodGroup: "g-a", Name: "sg-g-a"}}, got.Status.SchedulingGroups,
		"the scheduling groups come with the acknowledgement, in the same write")
}

func TestBackendWritesNothingWhenAcknowledgementAndSchedulingGroupsStand(t *testing.T) {
	pg := builders.PodGang("ns", "g").Backend("kube-scheduler").PodGroup("g-a", 2, "g-a-0", "g-a-1").Obj()
	b := &stubBackend{}
	acked, _, err := runPass(t, b, pg)
	require.NoError(t, err)

	_, writes, err := runPass(t, b, acked)

	require.NoError(t, err)
	assert.Zero(t, writes, "quiet at rest")
}

func TestFailedSyncKeepsTheSchedulingGroupsPodsAlreadyCarry(t *testing.T) {
	pg := builders.PodGang("ns", "g").Backend("kube-scheduler").PodGroup("g-a", 2, "g-a-0", "g-a-1").Obj()
	acked, _, err := runPass(t, &stubBackend{}, pg)
	require.NoError(t, err)

	got, _, err := runPass(t, &stubBackend{syncErr: errors.New("conflict")}, acked)

	require.Error(t, err)
	assert.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(got.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady).Status)
	assert.Equal(t, []schedulerv1alpha1.SchedulingGroup{{PodGroup: "g-a", Name: "sg-g-a"}}, got.Status.SchedulingGroups)
}

func TestBackendReportsASyncFailureAndRetries(t *testing.T) {
	pg := builders.PodGang("ns", "g").Backend("kube-scheduler").Obj()
	b := &stubBackend{syncErr: errors.New("PodGroup CRD not installed")}

	got, _, err := runPass(t, b, pg)

	require.Error(t, err, "returned, so the pass is retried with backoff")
	c := meta.FindStatusCondition(got.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady)
	require.NotNil(t, c)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, ReasonSyncFailed, c.Reason)
	assert.Contains(t, c.Message, "PodGroup CRD not installed")
}

func TestBackendWritesNothingWhenTheAcknowledgementStands(t *testing.T) {
	pg := builders.PodGang("ns", "g").Backend("kube-scheduler").Obj()
	pg.Status.Conditions = []metav1.Condition{{Type: schedulerv1alpha1.ConditionSchedulerBackendReady, Status: metav1.ConditionTrue,
		Reason: "PodGroupCreated", Message: "the scheduler's objects match", ObservedGeneration: 1, LastTransitionTime: metav1.Now()}}

	_, writes, err := runPass(t, &stubBackend{}, pg)

	require.NoError(t, err)
	assert.Zero(t, writes, "quiet at rest")
}

func TestBackendLeavesAnotherBackendsPodGangAlone(t *testing.T) {
	pg := builders.PodGang("ns", "g").Backend("kai-scheduler").Obj()
	b := &stubBackend{}

	got, writes, err := runPass(t, b, pg)

	require.NoError(t, err)
	assert.Empty(t, b.synced)
	assert.Zero(t, writes)
	assert.Empty(t, got.Status.Conditions)
}

func TestBackendCleansUpAfterADeletedPodGang(t *testing.T) {
	b := &stubBackend{}

	got, _, err := runPass(t, b)

	require.NoError(t, err)
	assert.Nil(t, got)
	assert.Equal(t, []string{"g"}, b.deleted)
}

func TestOwnedObjectEventsPassOnlyForSpecChanges(t *testing.T) {
	group := func(minCount int32, generation int64, condition string) *schedulingv1beta1.PodGroup {
		g := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Generation: generation},
			Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}}}}
		if condition != "" {
			g.Status.Conditions = []metav1.Condition{{Type: condition, Status: metav1.ConditionTrue}}
		}
		return g
	}
	cases := []struct {
		name     string
		old, new *schedulingv1beta1.PodGroup
		want     bool
	}{
		{"an edited spec without a generation bump (the Workload API keeps none)", group(2, 0, ""), group(1, 0, ""), true},
		{"a generation bump", group(2, 1, ""), group(2, 2, ""), true},
		{"the scheduler's status write", group(2, 0, ""), group(2, 0, "PodGroupInitiallyScheduled"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, specChanged().Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}))
		})
	}
}

func TestPodGangEventsPassWhenItsPodsComeToExistOrOneIsLost(t *testing.T) {
	gang := func(initialized metav1.ConditionStatus, backendReady bool) *schedulerv1alpha1.PodGang {
		pg := builders.PodGang("ns", "pg").Obj()
		if initialized != "" {
			meta.SetStatusCondition(&pg.Status.Conditions, metav1.Condition{Type: schedulerv1alpha1.ConditionInitialized, Status: initialized, Reason: "r"})
		}
		if backendReady {
			meta.SetStatusCondition(&pg.Status.Conditions, metav1.Condition{Type: schedulerv1alpha1.ConditionSchedulerBackendReady, Status: metav1.ConditionTrue, Reason: "r"})
		}
		return pg
	}
	cases := []struct {
		name     string
		old, new *schedulerv1alpha1.PodGang
		want     bool
	}{
		{"all pods exist", gang("", true), gang(metav1.ConditionTrue, true), true},
		{"a pod is lost", gang(metav1.ConditionTrue, true), gang(metav1.ConditionFalse, true), true},
		{"its own acknowledgement", gang("", false), gang("", true), false},
		{"still missing pods", gang(metav1.ConditionFalse, false), gang(metav1.ConditionFalse, true), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, initializedChanged().Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}))
		})
	}
}

func TestBackendCreatesNothingInANamespaceBeingDeleted(t *testing.T) {
	deleting := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"kubernetes"}}}
	refused := apierrors.NewForbidden(schema.GroupResource{Group: "scheduling.k8s.io", Resource: "workloads"}, "g",
		errors.New("unable to create new content in namespace ns because it is being terminated"))
	refused.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	tests := []struct {
		name       string
		objs       []client.Object
		syncErr    error
		wantSynced []string
	}{
		{name: "the cache shows the namespace being deleted: no sync at all", objs: []client.Object{deleting}},
		{name: "the API server refuses the scheduler's object: final, not retried", syncErr: fmt.Errorf("creating the Workload: %w", refused), wantSynced: []string{"g"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pg := builders.PodGang("ns", "g").Backend("kube-scheduler").PodGroup("g-a", 2, "g-a-0", "g-a-1").Obj()
			b := &stubBackend{syncErr: tc.syncErr}

			got, writes, err := runPass(t, b, append(tc.objs, pg)...)

			require.NoError(t, err, "no retry: every later create would be refused too")
			assert.Equal(t, tc.wantSynced, b.synced)
			assert.Zero(t, writes, "no condition: the PodGang goes with its namespace")
			assert.Empty(t, got.Status.Conditions)
		})
	}
}
