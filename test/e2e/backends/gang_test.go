package backendse2e

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

const poolLabel = "grove.test/pool"

func k8s() client.Client { return cluster.Current.Client() }

// pool adds GPU nodes only this test's pods select, so parallel tests never share capacity.
func pool(t *testing.T, ns string, from, n int) {
	t.Helper()
	specs := make([]cluster.NodeSpec, n)
	for i := range specs {
		spec := cluster.DefaultNode(0)
		spec.Name = fmt.Sprintf("%s-node-%d", ns, from+i)
		spec.Labels = map[string]string{corev1.LabelHostname: spec.Name, poolLabel: ns}
		specs[i] = spec
	}
	require.NoError(t, cluster.Current.AddNodes(context.Background(), specs...))
	t.Cleanup(func() {
		for _, s := range specs {
			_ = k8s().Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: s.Name}})
		}
	})
}

// clique is a clique of pods asking for gpus GPUs each, on this test's pool.
func clique(ns, name string, replicas int32, gpus int64, schedulerName string) *grovev1alpha1.PodCliqueTemplateSpec {
	return &grovev1alpha1.PodCliqueTemplateSpec{
		Name: name,
		Spec: grovev1alpha1.PodCliqueSpec{
			RoleName: name, Replicas: replicas,
			PodSpec: corev1.PodSpec{
				SchedulerName: schedulerName,
				NodeSelector:  map[string]string{poolLabel: ns},
				Containers: []corev1.Container{{
					Name: name, Image: "vllm:latest",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU: resource.MustParse("1"), cluster.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI),
					}, Limits: corev1.ResourceList{cluster.ResourceGPU: *resource.NewQuantity(gpus, resource.DecimalSI)}},
				}},
			},
		},
	}
}

func podCliqueSet(ns, name string, cliques ...*grovev1alpha1.PodCliqueTemplateSpec) *grovev1alpha1.PodCliqueSet {
	return &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       grovev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: grovev1alpha1.PodCliqueSetTemplateSpec{Cliques: cliques}},
	}
}

func pods(t *testing.T, ns, pcs string) []corev1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	require.NoError(t, k8s().List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: pcs}))
	return list.Items
}

// waitUngated waits until the PodCliqueSet has n pods and none is gated any more: the gang is
// handed to its scheduler.
func waitUngated(t *testing.T, ns, pcs string, n int) []corev1.Pod {
	t.Helper()
	var got []corev1.Pod
	require.Eventually(t, func() bool {
		got = pods(t, ns, pcs)
		if len(got) != n {
			return false
		}
		for _, p := range got {
			if len(p.Spec.SchedulingGates) > 0 {
				return false
			}
		}
		return true
	}, 60*time.Second, 200*time.Millisecond, "waiting for %d ungated pods of %s/%s", n, ns, pcs)
	return got
}

// bindTimes returns when each bound pod was bound, by name.
func bindTimes(ps []corev1.Pod) map[string]time.Time {
	out := map[string]time.Time{}
	for _, p := range ps {
		if p.Spec.NodeName == "" {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionTrue {
				out[p.Name] = c.LastTransitionTime.Time
			}
		}
	}
	return out
}

// logPlacement logs where and when each pod was bound; bind times come from the PodScheduled
// condition and have a resolution of one second.
func logPlacement(t *testing.T, what string, ps []corev1.Pod, since time.Time) {
	t.Helper()
	times := bindTimes(ps)
	var lines []string
	for _, p := range ps {
		if at, ok := times[p.Name]; ok {
			lines = append(lines, fmt.Sprintf("%s on %s at +%.1fs", p.Name, p.Spec.NodeName, at.Sub(since).Seconds()))
		} else {
			lines = append(lines, p.Name+" unbound")
		}
	}
	sort.Strings(lines)
	t.Logf("%s:\n  %s", what, strings.Join(lines, "\n  "))
}

func TestGangThatDoesNotFitStaysWhollyPendingUntilNodesAreAdded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, 0, 2)
	// Three trainer pods of 8 GPUs each need three 8-GPU nodes; two are there. Placed one by one,
	// two pods would hold both nodes while the third waits.
	pcs := podCliqueSet(ns, "train", clique(ns, "trainer", 3, 8, ""))
	start := time.Now()
	require.NoError(t, k8s().Create(ctx, pcs))

	ungated := waitUngated(t, ns, "train", 3)
	for _, p := range ungated {
		require.NotNil(t, p.Spec.SchedulingGroup, "pod %s names its gang's PodGroup", p.Name)
		assert.Equal(t, "train-0", *p.Spec.SchedulingGroup.PodGroupName)
	}
	// The gang's Workload API objects come once all its pods exist: kube-scheduler then places
	// the gang at once instead of re-checking it at each pod's arrival.
	group := &schedulingv1beta1.PodGroup{}
	require.Eventually(t, func() bool {
		return k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "train-0"}, group) == nil
	}, 30*time.Second, 100*time.Millisecond, "the backend-controller creates the gang's PodGroup once its pods exist")
	require.NotNil(t, group.Spec.SchedulingPolicy.Gang)
	assert.Equal(t, int32(3), group.Spec.SchedulingPolicy.Gang.MinCount)
	workload := &schedulingv1beta1.Workload{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "train-0"}, workload))
	for _, p := range ungated {
		assert.False(t, workload.CreationTimestamp.Before(&p.CreationTimestamp), "the Workload is created after pod %s", p.Name)
	}

	require.Never(t, func() bool { return len(bindTimes(pods(t, ns, "train"))) > 0 }, 10*time.Second, 250*time.Millisecond,
		"no pod of a gang that does not fit is bound")
	logPlacement(t, "with two nodes, 10s after the gates were lifted", pods(t, ns, "train"), start.Truncate(time.Second))

	added := time.Now()
	pool(t, ns, 2, 1)
	var placed []corev1.Pod
	require.Eventually(t, func() bool {
		placed = pods(t, ns, "train")
		return len(bindTimes(placed)) == 3
	}, 60*time.Second, 200*time.Millisecond, "the gang is placed once a third node exists")
	logPlacement(t, fmt.Sprintf("after the third node was added at +%.1fs", added.Sub(start).Seconds()), placed, start.Truncate(time.Second))
	nodes := map[string]bool{}
	for _, p := range placed {
		assert.False(t, bindTimes([]corev1.Pod{p})[p.Name].Before(added), "pod %s was bound before the gang fitted", p.Name)
		nodes[p.Spec.NodeName] = true
	}
	assert.Len(t, nodes, 3, "one 8-GPU pod per node")
}

func TestCoschedulingGangThatDoesNotFitStaysWhollyPendingUntilNodesAreAdded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, 0, 2)
	pcs := podCliqueSet(ns, "cos", clique(ns, "trainer", 3, 8, "scheduler-plugins-scheduler"))
	start := time.Now()
	require.NoError(t, k8s().Create(ctx, pcs))

	for _, p := range waitUngated(t, ns, "cos", 3) {
		assert.Equal(t, "cos-0", p.Labels["scheduling.x-k8s.io/pod-group"])
	}
	group := &schedv1alpha1.PodGroup{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "cos-0"}, group))
	assert.Equal(t, int32(3), group.Spec.MinMember)
	assert.True(t, resource.MustParse("24").Equal(group.Spec.MinResources[cluster.ResourceGPU]), "%v", group.Spec.MinResources)

	require.Never(t, func() bool { return len(bindTimes(pods(t, ns, "cos"))) > 0 }, 10*time.Second, 250*time.Millisecond,
		"coscheduling binds no pod of a gang that does not fit")
	logPlacement(t, "coscheduling, two nodes, 10s after the gates were lifted", pods(t, ns, "cos"), start.Truncate(time.Second))

	added := time.Now()
	pool(t, ns, 2, 1)
	var placed []corev1.Pod
	require.Eventually(t, func() bool {
		placed = pods(t, ns, "cos")
		return len(bindTimes(placed)) == 3
	}, 90*time.Second, 200*time.Millisecond, "the gang is placed once a third node exists")
	logPlacement(t, fmt.Sprintf("coscheduling, after the third node was added at +%.1fs", added.Sub(start).Seconds()), placed, start.Truncate(time.Second))
	nodes := map[string]bool{}
	for _, p := range placed {
		nodes[p.Spec.NodeName] = true
	}
	assert.Len(t, nodes, 3, "one 8-GPU pod per node")
}

func TestGangThatFitsIsPlacedWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, 0, 2)
	// Workers start after their leader: with gang scheduling the gang is ungated and placed whole
	// (gating the workers until the leader is Ready would keep the gang incomplete forever), and
	// the workers are held at start instead (docs/startup-ordering.md).
	pcs := podCliqueSet(ns, "serve", clique(ns, "leader", 1, 4, ""), clique(ns, "worker", 3, 4, ""))
	pcs.Spec.Template.StartupType = ptr.To(grovev1alpha1.CliqueStartupTypeInOrder)
	start := time.Now()
	require.NoError(t, k8s().Create(ctx, pcs))
	var placed []corev1.Pod
	require.Eventually(t, func() bool {
		placed = pods(t, ns, "serve")
		return len(placed) == 4 && len(bindTimes(placed)) == 4
	}, 60*time.Second, 200*time.Millisecond, "all four pods are bound")
	logPlacement(t, "a gang of 4×4 GPUs on two 8-GPU nodes", placed, start.Truncate(time.Second))

	pg := &schedulerv1alpha1.PodGang{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "serve-0"}, pg))
	cond := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady)
	require.NotNil(t, cond)
	assert.Equal(t, "WorkloadCreated", cond.Reason)
	assert.Equal(t, pg.Generation, cond.ObservedGeneration)
	group := &schedulingv1beta1.PodGroup{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "serve-0"}, group))
	assert.Equal(t, int32(4), group.Spec.SchedulingPolicy.Gang.MinCount)
	assert.True(t, metav1.IsControlledBy(group, pg))

	require.Eventually(t, func() bool {
		placed = pods(t, ns, "serve")
		return len(placed) == 4 && len(readyTimes(placed)) == 4
	}, 60*time.Second, 200*time.Millisecond, "all four pods start")
	ready := readyTimes(placed)
	for _, p := range placed {
		if p.Labels[grovev1alpha1.LabelPodClique] == "serve-0-worker" {
			assert.Equal(t, grovev1alpha1.StartupGateReleased, p.Annotations[grovev1alpha1.AnnotationStartupGate], "%s was held at start, then released", p.Name)
			assert.False(t, ready[p.Name].Before(ready["serve-0-leader-0"]), "%s started no earlier than its leader", p.Name)
		}
	}
	got := &grovev1alpha1.PodCliqueSet{}
	require.Eventually(t, func() bool {
		require.NoError(t, k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got))
		c := meta.FindStatusCondition(got.Status.Conditions, "SchedulingConstraintsHonored")
		return c != nil && c.ObservedGeneration == got.Generation
	}, 30*time.Second, 200*time.Millisecond, "the PodCliqueSet reports what its backend honours")
	c := meta.FindStatusCondition(got.Status.Conditions, "SchedulingConstraintsHonored")
	assert.NotContains(t, c.Message, "startup ordering", "startup order is kept under gang scheduling")
}

// readyTimes lists when each Ready pod became Ready, by name.
func readyTimes(ps []corev1.Pod) map[string]time.Time {
	out := map[string]time.Time{}
	for _, p := range ps {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				out[p.Name] = c.LastTransitionTime.Time
			}
		}
	}
	return out
}

// TestTwoBackendControllersServeOnlyTheirOwnPodGangs runs a kube-scheduler and a KAI workload
// side by side, then kills the KAI backend-controller: kube-scheduler workloads carry on, KAI
// ones wait (their pods stay gated) until it is back. It kills a shared process, so it does not
// run in parallel with other KAI users (there are none).
func TestTwoBackendControllersServeOnlyTheirOwnPodGangs(t *testing.T) {
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, 0, 1)

	require.NoError(t, k8s().Create(ctx, podCliqueSet(ns, "kube-a", clique(ns, "w", 2, 1, ""))))
	kai := podCliqueSet(ns, "kai-a", clique(ns, "w", 2, 1, kaiv2alpha2.SchedulerName))
	kai.Labels = map[string]string{kaiv2alpha2.QueueLabel: "team-a"}
	require.NoError(t, k8s().Create(ctx, kai))

	waitBound(t, ns, "kube-a", 2)
	kaiPods := waitUngated(t, ns, "kai-a", 2)
	for _, p := range kaiPods {
		assert.Equal(t, "kai-a-0", p.Annotations[kaiv2alpha2.PodGroupNameAnnotation])
		assert.Equal(t, "kai-a-0-w", p.Labels[kaiv2alpha2.SubGroupLabel])
		assert.Equal(t, "true", p.Annotations[kaiv2alpha2.SkipPodGrouperAnnotation])
		assert.Nil(t, p.Spec.SchedulingGroup, "KAI pods name no Workload API PodGroup")
	}
	kaiGroup := &kaiv2alpha2.PodGroup{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "kai-a-0"}, kaiGroup))
	assert.Equal(t, "team-a", kaiGroup.Spec.Queue)
	assert.Equal(t, int32(2), *kaiGroup.Spec.MinMember)
	assert.True(t, isNotFound(k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "kai-a-0"}, &schedulingv1beta1.PodGroup{})), "kube-scheduler made no objects for KAI's gang")
	assert.True(t, isNotFound(k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "kube-a-0"}, &kaiv2alpha2.PodGroup{})), "KAI made no objects for kube-scheduler's gang")

	kaiBackend.Kill()
	require.NoError(t, k8s().Create(ctx, podCliqueSet(ns, "kube-b", clique(ns, "w", 2, 1, ""))))
	kaiB := podCliqueSet(ns, "kai-b", clique(ns, "w", 2, 1, kaiv2alpha2.SchedulerName))
	require.NoError(t, k8s().Create(ctx, kaiB))
	waitBound(t, ns, "kube-b", 2)
	require.Eventually(t, func() bool {
		pcs := &grovev1alpha1.PodCliqueSet{}
		if k8s().Get(ctx, client.ObjectKeyFromObject(kaiB), pcs) != nil {
			return false
		}
		c := meta.FindStatusCondition(pcs.Status.Conditions, "PodGangsSchedulable")
		return c != nil && c.Reason == "SchedulerBackendNotReady" && strings.Contains(c.Message, "kai-scheduler")
	}, 30*time.Second, 200*time.Millisecond, "the PodCliqueSet says which backend it waits for")
	for _, p := range pods(t, ns, "kai-b") {
		assert.NotEmpty(t, p.Spec.SchedulingGates, "without its backend a KAI gang stays gated")
	}

	var err error
	kaiBackend, err = startBackend(cluster.Current, "kai-scheduler", "backend-controller-kai", "backend-controller-kai-2")
	require.NoError(t, err)
	waitUngated(t, ns, "kai-b", 2)
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "kai-b-0"}, &kaiv2alpha2.PodGroup{}), "the restarted KAI backend caught up")

	writes, err := cluster.Current.AuditEvents(func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Namespace == ns && ev.ObjectRef.Resource == "podgangs" && ev.ResponseStatus.Code < 300
	})
	require.NoError(t, err)
	for _, ev := range writes {
		backend := map[string]string{kubeBackendUser: "kube", kaiBackendUser: "kai"}[ev.User.Username]
		if backend == "" {
			continue
		}
		assert.True(t, strings.HasPrefix(ev.ObjectRef.Name, backend+"-"), "%s wrote PodGang %s", ev.User.Username, ev.ObjectRef.Name)
	}
}

func waitBound(t *testing.T, ns, pcs string, n int) {
	t.Helper()
	require.Eventually(t, func() bool {
		ps := pods(t, ns, pcs)
		return len(ps) == n && len(bindTimes(ps)) == n
	}, 60*time.Second, 200*time.Millisecond, "waiting for %d bound pods of %s/%s", n, ns, pcs)
}

func isNotFound(err error) bool { return client.IgnoreNotFound(err) == nil && err != nil }

// TestSyncLatencyIsExported reads the kube-scheduler backend's metrics after the other tests:
// every PodGang sync is timed and the Workload API objects it keeps are counted.
func TestSyncLatencyIsExported(t *testing.T) {
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, 0, 1)
	require.NoError(t, k8s().Create(ctx, podCliqueSet(ns, "metered", clique(ns, "w", 2, 1, ""))))
	waitBound(t, ns, "metered", 2)

	resp, err := http.Get(kubeBackend.MetricsURL)
	require.NoError(t, err)
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	sync := families["grove_backend_sync_duration_seconds"]
	require.NotNil(t, sync, "sync latency histogram")
	h := sync.Metric[0].Histogram
	require.Positive(t, h.GetSampleCount())
	var lines []string
	for _, b := range h.Bucket {
		lines = append(lines, fmt.Sprintf("≤%gs: %d", b.GetUpperBound(), b.GetCumulativeCount()))
	}
	t.Logf("kube-scheduler gang backend: %d syncs, mean %.1f ms; cumulative %s", h.GetSampleCount(),
		1000*h.GetSampleSum()/float64(h.GetSampleCount()), strings.Join(lines, ", "))
	managed := map[string]float64{}
	for _, m := range families["grove_backend_objects_managed"].GetMetric() {
		for _, l := range m.Label {
			if l.GetName() == "kind" {
				managed[l.GetValue()] = m.Gauge.GetValue()
			}
		}
	}
	assert.Positive(t, managed["Workload"], "Workloads counted")
	assert.Equal(t, managed["Workload"], managed["PodGroup"], "one PodGroup per Workload")
}

// A scaling group's PodCliques come one reconcile after their PodGang, and the backend-controller
// reads none of them: the coscheduling PodGroup counts every member pod and its requests from the
// PodGang alone (podResourceRequests). A leader (2 GPUs) and a scaling group of 2 × 2 workers
// (2 GPUs each) need 10 GPUs: on two 8-GPU nodes the gang is placed whole.
func TestCoschedulingPodGroupCountsScalingGroupMembersThatDoNotExistYet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, 0, 2)
	pcs := podCliqueSet(ns, "grp", clique(ns, "leader", 1, 2, "scheduler-plugins-scheduler"), clique(ns, "worker", 2, 2, "scheduler-plugins-scheduler"))
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "w", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](2)},
	}
	require.NoError(t, k8s().Create(ctx, pcs))

	group := &schedv1alpha1.PodGroup{}
	require.Eventually(t, func() bool {
		return k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "grp-0"}, group) == nil
	}, 30*time.Second, 100*time.Millisecond, "the PodGang's PodGroup")
	assert.Equal(t, int32(5), group.Spec.MinMember, "1 leader + 2 group replicas × 2 workers")
	assert.True(t, resource.MustParse("10").Equal(group.Spec.MinResources[cluster.ResourceGPU]), "every member's GPUs: %v", group.Spec.MinResources)
	assert.True(t, resource.MustParse("5").Equal(group.Spec.MinResources[corev1.ResourceCPU]), "every member's CPUs: %v", group.Spec.MinResources)

	require.Eventually(t, func() bool { return len(bindTimes(pods(t, ns, "grp"))) == 5 }, 90*time.Second, 200*time.Millisecond,
		"the whole gang is placed by the scheduler-plugins scheduler")
}

// A flat gang (no CompositePodGroup served) keeps only the total minimum: a leader (1, on a
// node that is full) and workers (4, minAvailable 3) make 4, which the workers alone reach, so
// kube-scheduler starts the workers without their leader. The PodCliqueSet says so. On a
// cluster serving CompositePodGroup the same gang starts nothing (test/e2e/compositegangs).
func TestFlatGangStartsWorkersWhoseLeaderCannotBePlaced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, 0, 3)
	leaderNode := ns + "-node-0"
	blocker := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "blocker", Namespace: ns},
		Spec: corev1.PodSpec{NodeName: leaderNode, Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{cluster.ResourceGPU: resource.MustParse("8")}, Limits: corev1.ResourceList{cluster.ResourceGPU: resource.MustParse("8")}}}}},
	}
	require.NoError(t, k8s().Create(ctx, blocker))
	leader := clique(ns, "leader", 1, 8, "")
	leader.Spec.PodSpec.NodeSelector = map[string]string{corev1.LabelHostname: leaderNode}
	workers := clique(ns, "worker", 4, 4, "")
	workers.Spec.MinAvailable = ptr.To[int32](3)
	workers.Spec.PodSpec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{leaderNode}}}}},
	}}}
	require.NoError(t, k8s().Create(ctx, podCliqueSet(ns, "flat", leader, workers)))

	require.Eventually(t, func() bool {
		ps := pods(t, ns, "flat")
		bound := bindTimes(ps)
		_, leaderBound := bound["flat-0-leader-0"]
		return len(ps) == 5 && len(bound) == 4 && !leaderBound
	}, 60*time.Second, 250*time.Millisecond, "the four workers start without their leader: the flat gang's minimum is only their total")
	require.Eventually(t, func() bool {
		got := &grovev1alpha1.PodCliqueSet{}
		require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "flat"}, got))
		c := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionSchedulingConstraintsHonored)
		return c != nil && c.Status == metav1.ConditionFalse && strings.Contains(c.Message, "per-clique minimums") && strings.Contains(c.Message, "CompositePodGroup")
	}, 30*time.Second, 250*time.Millisecond, "the PodCliqueSet says per-clique minimums are not kept, and how to keep them")
}
