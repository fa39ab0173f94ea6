package backendsintegration

import (
	"context"
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
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/backend/podgang"
	"github.com/kubegrove/grove/internal/contract/podgangstatus"
)

const timeout = 30 * time.Second

// gang is a PodGang of a replica with a standalone router and one scaling-group replica of a
// leader and two workers packed into one rack.
func gang(ns, name string, backend configv1alpha1.SchedulerName, labels map[string]string) *schedulerv1alpha1.PodGang {
	l := map[string]string{grovev1alpha1.LabelSchedulerName: string(backend)}
	for k, v := range labels {
		l[k] = v
	}
	return &schedulerv1alpha1.PodGang{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: l,
			Annotations: map[string]string{schedulerv1alpha1.AnnotationTopologyName: "grove-topology"}},
		Spec: schedulerv1alpha1.PodGangSpec{
			PodGroups: []schedulerv1alpha1.PodGroup{
				{Name: name + "-router", MinReplicas: 1, PodReferences: []schedulerv1alpha1.NamespacedName{}},
				{Name: name + "-prefill-0-leader", MinReplicas: 1, PodReferences: []schedulerv1alpha1.NamespacedName{}},
				{Name: name + "-prefill-0-worker", MinReplicas: 2, PodReferences: []schedulerv1alpha1.NamespacedName{},
					TopologyConstraint: &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{Preferred: ptr.To("kubernetes.io/hostname")}}},
			},
			TopologyConstraint: &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{Required: ptr.To("example.com/block")}},
			TopologyConstraintGroupConfigs: []schedulerv1alpha1.TopologyConstraintGroupConfig{{
				Name: name + "-prefill-0", PodGroupNames: []string{name + "-prefill-0-leader", name + "-prefill-0-worker"},
				TopologyConstraint: &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{Required: ptr.To("example.com/rack")}},
			}},
			PriorityClassName: "inference",
		},
	}
}

// backendCondition is the PodGang's SchedulerBackendReady as stored, nil until the backend wrote
// it for the PodGang's current generation.
func backendCondition(pg *schedulerv1alpha1.PodGang) *metav1.Condition {
	got := &schedulerv1alpha1.PodGang{}
	if env.Client.Get(context.Background(), client.ObjectKeyFromObject(pg), got) != nil {
		return nil
	}
	cond := meta.FindStatusCondition(got.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady)
	if cond == nil || cond.ObservedGeneration != got.Generation {
		return nil
	}
	return cond
}

func backendReady(t *testing.T, pg *schedulerv1alpha1.PodGang) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	require.Eventually(t, func() bool {
		cond = backendCondition(pg)
		return cond != nil
	}, timeout, 100*time.Millisecond, "PodGang %s never acknowledged", pg.Name)
	return cond
}

// backendAcknowledged waits until the backend reports the PodGang synced. A sync may first fail
// on what the backend-controller's cache has not seen yet (a Volcano queue the test created just
// before), reported and retried: only the outcome is this helper's to wait for.
func backendAcknowledged(t *testing.T, pg *schedulerv1alpha1.PodGang) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	if !assert.Eventually(t, func() bool {
		cond = backendCondition(pg)
		return cond != nil && cond.Status == metav1.ConditionTrue
	}, timeout, 100*time.Millisecond, "PodGang %s never synced", pg.Name) {
		t.Fatalf("last SchedulerBackendReady of PodGang %s: %+v", pg.Name, cond)
	}
	return cond
}

func TestKAIPodGroupWithSubgroupsIsAcceptedByKAISchemaAndRepaired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	pg := gang(ns, "inf-0", configv1alpha1.SchedulerNameKAI, map[string]string{kaiv2alpha2.QueueLabel: "team-a"})
	require.NoError(t, env.Client.Create(ctx, pg))

	cond := backendAcknowledged(t, pg)
	assert.Equal(t, "PodGroupCreated", cond.Reason)

	key := client.ObjectKey{Namespace: ns, Name: "inf-0"}
	got := &kaiv2alpha2.PodGroup{}
	require.NoError(t, env.Client.Get(ctx, key, got))
	assert.True(t, metav1.IsControlledBy(got, pg), "owned by the PodGang, so it goes with it")
	want := kaiv2alpha2.PodGroupSpec{
		MinMember: ptr.To[int32](4), Queue: "team-a", PriorityClassName: "inference",
		TopologyConstraint: &kaiv2alpha2.TopologyConstraint{Topology: "grove-topology", RequiredTopologyLevel: "example.com/block"},
		SubGroups: []kaiv2alpha2.SubGroup{
			{Name: "inf-0-prefill-0", MinSubGroup: ptr.To[int32](2), TopologyConstraint: &kaiv2alpha2.TopologyConstraint{Topology: "grove-topology", RequiredTopologyLevel: "example.com/rack"}},
			{Name: "inf-0-prefill-0-leader", Parent: ptr.To("inf-0-prefill-0"), MinMember: ptr.To[int32](1)},
			{Name: "inf-0-prefill-0-worker", Parent: ptr.To("inf-0-prefill-0"), MinMember: ptr.To[int32](2), TopologyConstraint: &kaiv2alpha2.TopologyConstraint{Topology: "grove-topology", PreferredTopologyLevel: "kubernetes.io/hostname"}},
			{Name: "inf-0-router", MinMember: ptr.To[int32](1)},
		},
	}
	assert.Equal(t, want, got.Spec, "the PodGroup round-trips KAI's schema unchanged")

	// KAI itself moves the group to another queue and marks it unschedulable; someone also
	// breaks the gang by hand.
	got.Spec.Queue = "team-b"
	got.Spec.MarkUnschedulable = ptr.To(true)
	got.Spec.MinMember = ptr.To[int32](1)
	got.Spec.SubGroups = got.Spec.SubGroups[:1]
	require.NoError(t, env.Client.Update(ctx, got))
	repaired := want.DeepCopy()
	repaired.Queue, repaired.MarkUnschedulable = "team-b", ptr.To(true)
	require.Eventually(t, func() bool {
		now := &kaiv2alpha2.PodGroup{}
		return env.Client.Get(ctx, key, now) == nil && assert.ObjectsAreEqual(*repaired, now.Spec)
	}, timeout, 100*time.Millisecond, "the gang is repaired and the fields KAI owns are kept")

	require.NoError(t, env.Client.Delete(ctx, got))
	require.Eventually(t, func() bool {
		now := &kaiv2alpha2.PodGroup{}
		return env.Client.Get(ctx, key, now) == nil && now.UID != got.UID && assert.ObjectsAreEqual(want, now.Spec)
	}, timeout, 100*time.Millisecond, "a deleted PodGroup comes back")
}

func TestKAIPodGangWithoutQueueReportsWhy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	pg := gang(ns, "noqueue-0", configv1alpha1.SchedulerNameKAI, nil)
	require.NoError(t, env.Client.Create(ctx, pg))
	cond := backendReady(t, pg)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, podgang.ReasonSyncFailed, cond.Reason)
	assert.Contains(t, cond.Message, kaiv2alpha2.QueueLabel)

	// Labelling the PodGang (the operator copies the PodCliqueSet's labels) lets it through.
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(pg), pg))
	pg.Labels[kaiv2alpha2.QueueLabel] = "team-a"
	require.NoError(t, env.Client.Update(ctx, pg))
	require.Eventually(t, func() bool {
		return backendReady(t, pg).Status == metav1.ConditionTrue
	}, timeout, 100*time.Millisecond, "a relabelled PodGang is synced again")
}

func TestCoschedulingPodGroupSumsTheGangsRequestsFromThePodGangAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	pg := gang(ns, "cos-0", configv1alpha1.SchedulerNamePlugins, nil)
	pg.Spec.TopologyConstraint, pg.Spec.TopologyConstraintGroupConfigs = nil, nil
	requests := map[string]corev1.ResourceList{
		"cos-0-router":           {corev1.ResourceCPU: resource.MustParse("500m")},
		"cos-0-prefill-0-leader": {corev1.ResourceCPU: resource.MustParse("1"), "nvidia.com/gpu": resource.MustParse("1")},
		"cos-0-prefill-0-worker": {corev1.ResourceCPU: resource.MustParse("2"), "nvidia.com/gpu": resource.MustParse("4")},
	}
	// The operator writes each group's per-pod requests on the PodGang; no PodClique exists here,
	// as none of a scaling group exists yet when its PodGang is created.
	for i := range pg.Spec.PodGroups {
		pg.Spec.PodGroups[i].PodResourceRequests = requests[pg.Spec.PodGroups[i].Name]
	}
	require.NoError(t, env.Client.Create(ctx, pg))
	backendAcknowledged(t, pg)

	got := &schedv1alpha1.PodGroup{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "cos-0"}, got))
	assert.True(t, metav1.IsControlledBy(got, pg))
	assert.Equal(t, int32(4), got.Spec.MinMember)
	assert.Equal(t, ptr.To[int32](90), got.Spec.ScheduleTimeoutSeconds)
	// router 1×0.5 + leader 1×1 + workers 2×2 CPUs; leader 1 + workers 2×4 GPUs.
	assert.True(t, resource.MustParse("5500m").Equal(got.Spec.MinResources[corev1.ResourceCPU]), "cpu %v", got.Spec.MinResources)
	assert.True(t, resource.MustParse("9").Equal(got.Spec.MinResources["nvidia.com/gpu"]), "gpu %v", got.Spec.MinResources)

	got.Spec.MinMember = 1
	require.NoError(t, env.Client.Update(ctx, got))
	require.Eventually(t, func() bool {
		now := &schedv1alpha1.PodGroup{}
		return env.Client.Get(ctx, client.ObjectKeyFromObject(got), now) == nil && now.Spec.MinMember == 4
	}, timeout, 100*time.Millisecond, "an edited PodGroup is repaired")
}

func TestPodGangsOfOtherBackendsAreLeftAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	pg := gang(ns, "kube-0", configv1alpha1.SchedulerNameKube, map[string]string{kaiv2alpha2.QueueLabel: "team-a"})
	require.NoError(t, env.Client.Create(ctx, pg))
	// The KAI and coscheduling PodGangs of the other tests prove the reconcilers run; this one is
	// kube-scheduler's, and no backend running here serves it.
	require.Never(t, func() bool {
		got := &schedulerv1alpha1.PodGang{}
		return env.Client.Get(ctx, client.ObjectKeyFromObject(pg), got) == nil && len(got.Status.Conditions) > 0
	}, 3*time.Second, 200*time.Millisecond)
	kai := &kaiv2alpha2.PodGroupList{}
	require.NoError(t, env.Client.List(ctx, kai, client.InNamespace(ns)))
	cos := &schedv1alpha1.PodGroupList{}
	require.NoError(t, env.Client.List(ctx, cos, client.InNamespace(ns)))
	assert.Empty(t, kai.Items)
	assert.Empty(t, cos.Items)
}

// The operator and a backend-controller each write their own PodGang condition by server-side
// apply, with a field manager of their own: the API server merges them by type, whatever order
// they come in and however stale either view is.
func TestOperatorAndBackendConditionsAreAppliedByTheirOwnFieldManagers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	pg := gang(ns, "ssa-0", configv1alpha1.SchedulerNamePlugins, nil)
	pg.Spec.TopologyConstraint, pg.Spec.TopologyConstraintGroupConfigs = nil, nil
	require.NoError(t, env.Client.Create(ctx, pg))
	initialized := func(status metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: schedulerv1alpha1.ConditionInitialized, Status: status, Reason: schedulerv1alpha1.ReasonReady,
			ObservedGeneration: pg.Generation, LastTransitionTime: metav1.Now()}
	}
	stale := pg.DeepCopy() // the operator's view never shows the backend's write
	require.NoError(t, podgangstatus.Apply(ctx, env.Client, stale.DeepCopy(), podgangstatus.ManagerOperator,
		podgangstatus.Part{Phase: schedulerv1alpha1.PodGangPhasePending, Conditions: []metav1.Condition{initialized(metav1.ConditionTrue)}}))
	backendAcknowledged(t, pg)
	require.NoError(t, podgangstatus.Apply(ctx, env.Client, stale.DeepCopy(), podgangstatus.ManagerOperator,
		podgangstatus.Part{Phase: schedulerv1alpha1.PodGangPhasePending, Conditions: []metav1.Condition{initialized(metav1.ConditionFalse)}}))

	got := &schedulerv1alpha1.PodGang{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(pg), got))
	assert.Equal(t, metav1.ConditionFalse, meta.FindStatusCondition(got.Status.Conditions, schedulerv1alpha1.ConditionInitialized).Status)
	assert.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady), "the operator's apply keeps the backend's condition")
	managers := map[string]bool{}
	for _, f := range got.ManagedFields {
		if f.Subresource == "status" && f.Operation == metav1.ManagedFieldsOperationApply {
			managers[f.Manager] = true
		}
	}
	assert.Equal(t, map[string]bool{podgangstatus.ManagerOperator: true, podgangstatus.ManagerBackendPrefix + "scheduler-plugins": true}, managers)
}
