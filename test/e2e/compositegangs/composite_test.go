package compositegangse2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends/kube"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

const (
	poolLabel = "grove.test/pool"
	typeLabel = "grove.test/type"
)

func k8s() client.Client { return cluster.Current.Client() }

// pool adds n 8-GPU nodes of one type that only this test's pods select.
func pool(t *testing.T, ns, nodeType string, n int) {
	t.Helper()
	specs := make([]cluster.NodeSpec, n)
	for i := range specs {
		spec := cluster.DefaultNode(0)
		spec.Name = fmt.Sprintf("%s-%s-%d", ns, nodeType, i)
		spec.Labels = map[string]string{corev1.LabelHostname: spec.Name, poolLabel: ns, typeLabel: nodeType}
		specs[i] = spec
	}
	require.NoError(t, cluster.Current.AddNodes(context.Background(), specs...))
	t.Cleanup(func() {
		for _, s := range specs {
			_ = k8s().Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.Name}})
		}
	})
}

func gpus(n int64) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), cluster.ResourceGPU: *resource.NewQuantity(n, resource.DecimalSI)}
}

// onNodes makes a clique's pods ask for n GPUs each on this test's nodes of one type.
func onNodes(ns, nodeType string, n int64) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return builders.Requests(gpus(n), map[string]string{poolLabel: ns, typeLabel: nodeType})
}

func podsOf(t *testing.T, ns, pcs string) []corev1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	require.NoError(t, k8s().List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: pcs}))
	return list.Items
}

// bound lists the pods bound to a node, by name.
func bound(ps []corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, p := range ps {
		if p.Spec.NodeName != "" {
			out[p.Name] = p.Spec.NodeName
		}
	}
	return out
}

// acknowledged waits for the backend-controller's acknowledgement of a PodGang and returns it.
// The backend acknowledges a new gang at once (AwaitingPods) and creates its Workload API
// objects once all its pods exist; acknowledged waits for that second acknowledgement.
func acknowledged(t *testing.T, ns, name string) *schedulerv1alpha1.PodGang {
	t.Helper()
	pg := &schedulerv1alpha1.PodGang{}
	require.Eventually(t, func() bool {
		if k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pg) != nil || !pg.Acknowledged() {
			return false
		}
		ready := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady)
		return ready.Reason != kube.ReasonAwaitingPods
	}, 60*time.Second, 200*time.Millisecond, "PodGang %s/%s acknowledged with its Workload API objects", ns, name)
	return pg
}

// blocker occupies a node's 8 GPUs with a pod kube-scheduler places on its own.
func blocker(t *testing.T, ns, nodeType string) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "blocker", Namespace: ns},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{poolLabel: ns, typeLabel: nodeType},
			Containers:   []corev1.Container{{Name: "c", Image: "busybox", Resources: corev1.ResourceRequirements{Requests: gpus(8), Limits: gpus(8)}}},
		},
	}
	require.NoError(t, k8s().Create(context.Background(), p))
	require.Eventually(t, func() bool {
		return k8s().Get(context.Background(), client.ObjectKeyFromObject(p), p) == nil && p.Spec.NodeName != ""
	}, 30*time.Second, 200*time.Millisecond, "the blocker is bound")
	return p
}

func TestBackendControllerSaysItRunsHierarchicalGangs(t *testing.T) {
	assert.Eventually(t, func() bool { return strings.Contains(backend.Log(), "composite gang mode") }, 30*time.Second, 200*time.Millisecond,
		"the backend-controller logs the mode it chose at start")
}

// A leader clique (1 pod, on a leader node) and workers (4 pods, minAvailable 3): 4 pods is the
// total minimum, and the workers alone reach it. A flat gang would start the 4 workers without a
// leader (test/e2e/backends TestFlatGangStartsWorkersWhoseLeaderCannotBePlaced); the hierarchical
// gang keeps the leader's minimum and starts nothing until the leader fits too.
func TestGangWhoseLeaderCannotBePlacedIsNotStartedAtAll(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, "leader", 1)
	pool(t, ns, "worker", 2)
	full := blocker(t, ns, "leader")
	pcs := builders.PodCliqueSet(ns, "held").
		Clique("leader", 1, onNodes(ns, "leader", 8)).
		Clique("worker", 4, builders.MinAvailable(3), onNodes(ns, "worker", 4)).Obj()
	require.NoError(t, k8s().Create(ctx, pcs))

	pg := acknowledged(t, ns, "held-0")
	ready := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady)
	assert.Equal(t, kube.ReasonCompositeWorkloadCreated, ready.Reason, ready.Message)
	assert.Equal(t, []schedulerv1alpha1.SchedulingGroup{{PodGroup: "held-0-leader", Name: "held-0-leader"}, {PodGroup: "held-0-worker", Name: "held-0-worker"}},
		pg.Status.SchedulingGroups)
	for _, name := range []string{"held-0-leader", "held-0-worker"} {
		group := &schedulingv1beta1.PodGroup{}
		require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, group))
		assert.Equal(t, ptr.To("held-0"), group.Spec.ParentCompositePodGroupName)
	}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "held-0"}, &schedulingv1alpha3.CompositePodGroup{}))
	require.Eventually(t, func() bool {
		ps := podsOf(t, ns, "held")
		for _, p := range ps {
			if len(p.Spec.SchedulingGates) > 0 || p.Spec.SchedulingGroup == nil || *p.Spec.SchedulingGroup.PodGroupName != p.Labels[grovev1alpha1.LabelPodClique] {
				return false
			}
		}
		return len(ps) == 5
	}, 60*time.Second, 200*time.Millisecond, "all five pods exist, ungated, each in its clique's own PodGroup")

	require.Never(t, func() bool { return len(bound(podsOf(t, ns, "held"))) > 0 }, 10*time.Second, 250*time.Millisecond,
		"no worker starts while the leader's minimum cannot be met")
	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got))
	honoured := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionSchedulingConstraintsHonored)
	require.NotNil(t, honoured)
	assert.Equal(t, metav1.ConditionTrue, honoured.Status, honoured.Message)

	require.NoError(t, k8s().Delete(ctx, full))
	require.Eventually(t, func() bool { return len(bound(podsOf(t, ns, "held"))) == 5 }, 90*time.Second, 250*time.Millisecond,
		"the whole gang starts once the leader fits")
}

func TestGangThatFitsStartsWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, "gpu", 2)
	pcs := builders.PodCliqueSet(ns, "fits").
		Clique("leader", 1, onNodes(ns, "gpu", 4)).
		Clique("worker", 3, onNodes(ns, "gpu", 4)).Obj()
	require.NoError(t, k8s().Create(ctx, pcs))

	require.Eventually(t, func() bool { return len(bound(podsOf(t, ns, "fits"))) == 4 }, 60*time.Second, 250*time.Millisecond,
		"all four pods are bound")
}

// Scaling a scaling group out adds PodGangs of their own, each a hierarchical gang placed on its
// own: the base gang is never disturbed, and a scaled gang that does not fit waits whole.
func TestScaleOutAddsGangsScheduledOnTheirOwn(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, "gpu", 2)
	pcs := builders.PodCliqueSet(ns, "sg").
		Clique("prefill", 1, onNodes(ns, "gpu", 4)).
		Clique("decode", 1, onNodes(ns, "gpu", 4)).
		ScalingGroup("pair", 1, 1, "prefill", "decode").Obj()
	require.NoError(t, k8s().Create(ctx, pcs))
	require.Eventually(t, func() bool { return len(bound(podsOf(t, ns, "sg"))) == 2 }, 60*time.Second, 250*time.Millisecond, "the base gang runs")
	base := bound(podsOf(t, ns, "sg"))

	pcsg := &grovev1alpha1.PodCliqueScalingGroup{}
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error { // the operator writes its status meanwhile
		if err := k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "sg-0-pair"}, pcsg); err != nil {
			return err
		}
		pcsg.Spec.Replicas = 3
		return k8s().Update(ctx, pcsg)
	}))

	// Two more pairs of 4-GPU pods: 16 GPUs more where 8 are free. One pair fits.
	var gangs schedulerv1alpha1.PodGangList
	require.Eventually(t, func() bool {
		require.NoError(t, k8s().List(ctx, &gangs, client.InNamespace(ns)))
		return len(gangs.Items) == 3 && len(podsOf(t, ns, "sg")) == 6
	}, 60*time.Second, 250*time.Millisecond, "two scaled PodGangs and their pods exist")
	for _, pg := range gangs.Items {
		if pg.Name == "sg-0" {
			continue
		}
		acknowledged(t, ns, pg.Name)
		require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: pg.Name}, &schedulingv1alpha3.CompositePodGroup{}),
			"scaled PodGang %s is a composite gang of its own", pg.Name)
	}
	gangOf := func(p corev1.Pod) string { return p.Labels[grovev1alpha1.LabelPodGang] }
	require.Eventually(t, func() bool { return len(bound(podsOf(t, ns, "sg"))) == 4 }, 60*time.Second, 250*time.Millisecond, "one scaled pair is placed")
	require.Never(t, func() bool {
		perGang := map[string]int{}
		ps := podsOf(t, ns, "sg")
		for _, p := range ps {
			if p.Spec.NodeName != "" {
				perGang[gangOf(p)]++
			}
		}
		for _, n := range perGang {
			if n != 2 {
				return true // a gang placed in part
			}
		}
		return len(perGang) != 2 || perGang["sg-0"] != 2
	}, 10*time.Second, 250*time.Millisecond, "each gang is placed whole or not at all, the base gang among the placed")
	now := bound(podsOf(t, ns, "sg"))
	for name, node := range base {
		assert.Equal(t, node, now[name], "base pod %s stays where it was", name)
	}
}

func TestBackendControllerRepairsDeletedAndEditedGroups(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, "gpu", 1)
	pcs := builders.PodCliqueSet(ns, "fix").
		Clique("leader", 1, onNodes(ns, "gpu", 1)).
		Clique("worker", 2, onNodes(ns, "gpu", 1)).Obj()
	require.NoError(t, k8s().Create(ctx, pcs))
	acknowledged(t, ns, "fix-0")
	require.Eventually(t, func() bool { return len(bound(podsOf(t, ns, "fix"))) == 3 }, 60*time.Second, 250*time.Millisecond, "the gang runs")

	root := &schedulingv1alpha3.CompositePodGroup{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "fix-0"}, root))
	require.NoError(t, k8s().Delete(ctx, root))
	require.Eventually(t, func() bool {
		again := &schedulingv1alpha3.CompositePodGroup{}
		return k8s().Get(ctx, client.ObjectKeyFromObject(root), again) == nil && again.UID != root.UID && again.DeletionTimestamp.IsZero()
	}, 60*time.Second, 250*time.Millisecond, "the deleted CompositePodGroup is recreated")

	worker := &schedulingv1beta1.PodGroup{}
	key := client.ObjectKey{Namespace: ns, Name: "fix-0-worker"}
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error { // kube-scheduler writes its status meanwhile
		if err := k8s().Get(ctx, key, worker); err != nil {
			return err
		}
		require.Equal(t, int32(2), worker.Spec.SchedulingPolicy.Gang.MinCount)
		worker.Spec.SchedulingPolicy.Gang.MinCount = 1
		return k8s().Update(ctx, worker)
	}))
	require.Eventually(t, func() bool {
		return k8s().Get(ctx, key, worker) == nil && worker.Spec.SchedulingPolicy.Gang.MinCount == 2
	}, 60*time.Second, 250*time.Millisecond, "the edited minimum is put back")
	assert.Len(t, bound(podsOf(t, ns, "fix")), 3, "repairs leave running pods alone")
	assert.False(t, strings.Contains(backend.LogTail(200), "panic"))
}
