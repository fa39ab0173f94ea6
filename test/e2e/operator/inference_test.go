package operatore2e

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// readyTimes records when each pod of a namespace was first seen Ready, from a watch.
type readyTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func watchReady(t *testing.T, ns string) *readyTimes {
	t.Helper()
	watcher, err := client.NewWithWatch(cluster.Current.RESTConfig(), client.Options{})
	require.NoError(t, err)
	w, err := cluster.ListAndWatch(context.Background(), watcher, &corev1.PodList{}, ns)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	rt := &readyTimes{at: map[string]time.Time{}}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					rt.mu.Lock()
					if _, seen := rt.at[pod.Name]; !seen {
						rt.at[pod.Name] = time.Now()
					}
					rt.mu.Unlock()
				}
			}
		}
	}()
	return rt
}

func (rt *readyTimes) get(name string) time.Time {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.at[name]
}

func TestInferencePodCliqueSetRunsEveryPodInGangsAndStartupOrder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	ready := watchReady(t, ns)
	pcs := disaggregated(ns, "inf", 2)
	begin := time.Now()
	require.NoError(t, k8s().Create(ctx, pcs))

	// 1 router + 2 scaling-group replicas × (1 leader + 2 workers).
	pods := waitRunning(t, ns, "inf", 7, 2*time.Minute)
	t.Logf("7 pods Running %s after apply", time.Since(begin).Round(time.Millisecond))

	names := make([]string, 0, len(pods))
	for _, p := range pods {
		names = append(names, p.Name)
		assert.Equal(t, p.Name, p.Spec.Hostname)
		assert.Equal(t, "inf-0", p.Spec.Subdomain)
		assert.Empty(t, p.Spec.SchedulingGates, "%s is ungated", p.Name)
		assert.NotEmpty(t, p.Spec.NodeName)
		env := map[string]string{}
		for _, e := range p.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		assert.Equal(t, "inf", env[grovev1alpha1.EnvPCSName])
		assert.Equal(t, "0", env[grovev1alpha1.EnvPCSIndex])
		assert.Equal(t, p.Labels[grovev1alpha1.LabelPodClique], env[grovev1alpha1.EnvPCLQName])
		assert.Equal(t, p.Labels[grovev1alpha1.LabelPodIndex], env[grovev1alpha1.EnvPCLQPodIndex])
		if p.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] != "" {
			assert.Equal(t, "inf-0-prefill", env[grovev1alpha1.EnvPCSGName])
			assert.Equal(t, "3", env[grovev1alpha1.EnvPCSGTemplateNumPods])
		}
	}
	sort.Strings(names)
	assert.Equal(t, []string{
		"inf-0-prefill-0-leader-0", "inf-0-prefill-0-worker-0", "inf-0-prefill-0-worker-1",
		"inf-0-prefill-1-leader-0", "inf-0-prefill-1-worker-0", "inf-0-prefill-1-worker-1",
		"inf-0-router-0",
	}, names)

	// The base gang holds the router and scaling-group replica 0; replica 1 has its own gang.
	gangs := &schedulerv1alpha1.PodGangList{}
	require.NoError(t, k8s().List(ctx, gangs, client.InNamespace(ns)))
	members := map[string][]string{}
	for _, pg := range gangs.Items {
		assert.True(t, meta.IsStatusConditionTrue(pg.Status.Conditions, schedulerv1alpha1.ConditionInitialized), pg.Name)
		assert.True(t, meta.IsStatusConditionTrue(pg.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady), pg.Name)
		assert.Equal(t, "kube-scheduler", pg.Labels[grovev1alpha1.LabelSchedulerName])
		for _, g := range pg.Spec.PodGroups {
			members[pg.Name] = append(members[pg.Name], g.Name)
			assert.Len(t, g.PodReferences, map[bool]int{true: 2, false: 1}[len(g.Name) > 6 && g.Name[len(g.Name)-6:] == "worker"], g.Name)
		}
	}
	assert.ElementsMatch(t, []string{"inf-0-router", "inf-0-prefill-0-leader", "inf-0-prefill-0-worker"}, members["inf-0"])
	assert.ElementsMatch(t, []string{"inf-0-prefill-1-leader", "inf-0-prefill-1-worker"}, members["inf-0-prefill-0"])

	// Workers became Ready only after their own leader.
	for _, j := range []string{"0", "1"} {
		leader := ready.get("inf-0-prefill-" + j + "-leader-0")
		require.False(t, leader.IsZero())
		for _, w := range []string{"0", "1"} {
			worker := ready.get("inf-0-prefill-" + j + "-worker-" + w)
			require.False(t, worker.IsZero())
			assert.True(t, worker.After(leader), "worker %s of group replica %s Ready after its leader", w, j)
		}
	}

	require.Eventually(t, func() bool {
		got := &grovev1alpha1.PodCliqueSet{}
		return k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) == nil && got.Status.AvailableReplicas == 1 &&
			got.Status.Phase == grovev1alpha1.PodCliqueSetPhaseRunning &&
			meta.IsStatusConditionTrue(got.Status.Conditions, grovev1alpha1.ConditionPodGangsSchedulable)
	}, 30*time.Second, 200*time.Millisecond, "PodCliqueSet status shows the available replica")
}

func TestScalingPodCliqueSetScalingGroupAndCliqueKeepsIndicesStable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := disaggregated(ns, "scale", 1)
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "scale", 4, 2*time.Minute)

	// PodCliqueSet replicas 1 → 2 through the scale subresource.
	scale(t, pcs, 2)
	waitRunning(t, ns, "scale", 8, 2*time.Minute)

	// Scaling group of replica 1: 1 → 3 group replicas; the new ones get scaled gangs.
	pcsg := &grovev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "scale-1-prefill"}}
	scale(t, pcsg, 3)
	waitRunning(t, ns, "scale", 14, 2*time.Minute)
	for _, gang := range []string{"scale-1-prefill-0", "scale-1-prefill-1"} {
		require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: gang}, &schedulerv1alpha1.PodGang{}), gang)
	}

	// A standalone clique grows from the template: router 1 → 3 pods, indices 0..2.
	update(t, pcs, func() { pcs.Spec.Template.Cliques[0].Spec.Replicas = 3 })
	waitRunning(t, ns, "scale", 18, 2*time.Minute)
	var routers []string
	for _, p := range listPods(t, ns, map[string]string{grovev1alpha1.LabelPodClique: "scale-0-router"}) {
		routers = append(routers, p.Name)
	}
	sort.Strings(routers)
	assert.Equal(t, []string{"scale-0-router-0", "scale-0-router-1", "scale-0-router-2"}, routers)

	// Scale back in: everything of replica 1 goes, including its scaled gangs.
	scale(t, pcs, 1)
	waitRunning(t, ns, "scale", 6, 2*time.Minute)
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "scale-1-prefill-1"}, &schedulerv1alpha1.PodGang{}))
	}, time.Minute, 200*time.Millisecond)

	// A deleted pod is recreated at the same index.
	victim := builders.Pod(ns, "scale-0-router-1").Obj()
	require.NoError(t, k8s().Delete(ctx, victim))
	require.Eventually(t, func() bool {
		p := &corev1.Pod{}
		return k8s().Get(ctx, client.ObjectKeyFromObject(victim), p) == nil && p.DeletionTimestamp.IsZero() && p.Status.Phase == corev1.PodRunning
	}, time.Minute, 200*time.Millisecond, "the hole at index 1 is refilled")
}

func scale(t *testing.T, obj client.Object, replicas int32) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":`+itoa(replicas)+`}}`))
	// The scale subresource answers with a Scale, so patch a copy to keep obj intact.
	require.NoError(t, k8s().SubResource("scale").Patch(context.Background(), obj.DeepCopyObject().(client.Object), patch))
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// update applies mutate to the latest version of obj, retrying on conflicts with the operator's
// status writes.
func update(t *testing.T, obj client.Object, mutate func()) {
	t.Helper()
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k8s().Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		mutate()
		return k8s().Update(context.Background(), obj)
	}))
}

func TestDeletingThePodCliqueSetCascadesToEveryChild(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := disaggregated(ns, "gone", 2)
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "gone", 7, 2*time.Minute)
	require.NoError(t, k8s().Delete(ctx, pcs))
	require.Eventually(t, func() bool {
		sel := client.MatchingLabels{grovev1alpha1.LabelPartOf: "gone"}
		for _, l := range []client.ObjectList{&corev1.PodList{}, &grovev1alpha1.PodCliqueList{}, &grovev1alpha1.PodCliqueScalingGroupList{}, &schedulerv1alpha1.PodGangList{}, &corev1.ServiceList{}} {
			if err := k8s().List(ctx, l, client.InNamespace(ns), sel); err != nil || meta.LenList(l) > 0 {
				return false
			}
		}
		return true
	}, 2*time.Minute, 500*time.Millisecond, "the garbage collector removes every child")
}

func TestPodsStayGatedWhileTheirSchedulerBackendNeverAcknowledges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := disaggregated(ns, "nobackend", 1)
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = "kai-scheduler" // no backend-controller runs for KAI here
	}
	require.NoError(t, k8s().Create(ctx, pcs))
	var got grovev1alpha1.PodCliqueSet
	require.Eventually(t, func() bool {
		if k8s().Get(ctx, client.ObjectKeyFromObject(pcs), &got) != nil {
			return false
		}
		c := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionPodGangsSchedulable)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == grovev1alpha1.ReasonSchedulerBackendNotReady
	}, time.Minute, 200*time.Millisecond)
	assert.Contains(t, meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionPodGangsSchedulable).Message, `"kai-scheduler" has not acknowledged`)
	// The cliques wait a few seconds for an acknowledgement that would let their pods be born
	// schedulable, then create them gated.
	var pods []corev1.Pod
	require.Eventually(t, func() bool {
		pods = listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "nobackend"})
		return len(pods) == 4
	}, time.Minute, 200*time.Millisecond)
	for _, p := range pods {
		assert.Equal(t, []corev1.PodSchedulingGate{{Name: grovev1alpha1.SchedulingGatePodGangPendingCreation}}, p.Spec.SchedulingGates, p.Name)
	}
}
