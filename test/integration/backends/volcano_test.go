package backendsintegration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/backend/podgang"
)

// volcanoQueue creates a cluster-scoped Volcano queue, in the state Volcano's controller reports.
func volcanoQueue(t *testing.T, name string, state volcanov1beta1.QueueState) {
	t.Helper()
	ctx := context.Background()
	q := &volcanov1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: volcanov1beta1.QueueSpec{Weight: 1}}
	require.NoError(t, env.Client.Create(ctx, q))
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), q) })
	q.Status.State = state
	require.NoError(t, env.Client.Status().Update(ctx, q))
}

func volcanoGang(ns, name, queue string) *schedulerv1alpha1.PodGang {
	pg := gang(ns, name, configv1alpha1.SchedulerNameVolcano, nil)
	pg.Spec.TopologyConstraint, pg.Spec.TopologyConstraintGroupConfigs = nil, nil
	pg.Spec.PodGroups[2].TopologyConstraint = nil
	pg.Spec.SchedulerQueueName = queue
	pg.Spec.PodGroups[0].PodResourceRequests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}
	pg.Spec.PodGroups[2].PodResourceRequests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), "nvidia.com/gpu": resource.MustParse("4")}
	return pg
}

func subGroup(name string, size int32) volcanov1beta1.SubGroupPolicySpec {
	return volcanov1beta1.SubGroupPolicySpec{
		Name:           name,
		LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{grovev1alpha1.LabelPodClique: name}},
		MatchLabelKeys: []string{grovev1alpha1.LabelPodClique},
		SubGroupSize:   ptr.To(size),
		MinSubGroups:   ptr.To[int32](1),
	}
}

func TestVolcanoPodGroupWithSubgroupsIsAcceptedByVolcanoSchemaAndRepaired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	volcanoQueue(t, "gpu-"+ns, volcanov1beta1.QueueStateOpen)
	pg := volcanoGang(ns, "vc-0", "gpu-"+ns)
	require.NoError(t, env.Client.Create(ctx, pg))

	cond := backendAcknowledged(t, pg)
	assert.Equal(t, "PodGroupCreated", cond.Reason)

	key := client.ObjectKey{Namespace: ns, Name: "vc-0"}
	got := &volcanov1beta1.PodGroup{}
	require.NoError(t, env.Client.Get(ctx, key, got))
	assert.True(t, metav1.IsControlledBy(got, pg), "owned by the PodGang, so it goes with it")
	// router 1×0.5 + leader 1×nothing + workers 2×2 CPUs; workers 2×4 GPUs.
	want := volcanov1beta1.PodGroupSpec{
		MinMember: 4, Queue: "gpu-" + ns, PriorityClassName: "inference",
		MinResources: &corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4500m"), "nvidia.com/gpu": resource.MustParse("8")},
		SubGroupPolicy: []volcanov1beta1.SubGroupPolicySpec{
			subGroup("vc-0-router", 1), subGroup("vc-0-prefill-0-leader", 1), subGroup("vc-0-prefill-0-worker", 2),
		},
	}
	assert.True(t, equality.Semantic.DeepEqual(want, got.Spec), "the PodGroup round-trips Volcano's schema unchanged (subgroups not pruned)\nwant %+v\ngot  %+v", want, got.Spec)

	got.Spec.MinMember = 1
	got.Spec.SubGroupPolicy = nil
	require.NoError(t, env.Client.Update(ctx, got))
	require.Eventually(t, func() bool {
		now := &volcanov1beta1.PodGroup{}
		return env.Client.Get(ctx, key, now) == nil && equality.Semantic.DeepEqual(want, now.Spec)
	}, timeout, 100*time.Millisecond, "an edited PodGroup is repaired")

	require.NoError(t, env.Client.Delete(ctx, got))
	require.Eventually(t, func() bool {
		now := &volcanov1beta1.PodGroup{}
		return env.Client.Get(ctx, key, now) == nil && now.UID != got.UID
	}, timeout, 100*time.Millisecond, "a deleted PodGroup comes back")
}

func TestVolcanoPodGangInAQueueThatDoesNotExistReportsTheFieldAndRecoversWhenItAppears(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	queue := "late-" + ns
	pg := volcanoGang(ns, "late-0", queue)
	require.NoError(t, env.Client.Create(ctx, pg))

	cond := backendReady(t, pg)
	assert.Equal(t, metav1.ConditionFalse, cond.Status)
	assert.Equal(t, podgang.ReasonSyncFailed, cond.Reason)
	assert.Contains(t, cond.Message, "spec.schedulerQueueName")
	assert.Contains(t, cond.Message, grovev1alpha1.AnnotationVolcanoQueue)
	assert.Contains(t, cond.Message, `Volcano queue "`+queue+`" does not exist`)
	assert.Error(t, env.Client.Get(ctx, client.ObjectKeyFromObject(pg), &volcanov1beta1.PodGroup{}), "no PodGroup for a queue Volcano cannot schedule from")

	volcanoQueue(t, queue, volcanov1beta1.QueueStateOpen)
	require.Eventually(t, func() bool {
		return backendReady(t, pg).Status == metav1.ConditionTrue
	}, timeout, 200*time.Millisecond, "the sync is retried until the queue exists")
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(pg), &volcanov1beta1.PodGroup{}))
}
