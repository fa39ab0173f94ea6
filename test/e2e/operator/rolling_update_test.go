package operatore2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// rolloutRecorder follows every pod of a namespace and checks, after every event, that no
// PodClique has fewer Ready pods than its minAvailable once the rollout started.
type rolloutRecorder struct {
	mu            sync.Mutex
	ready         map[string]bool   // pod → Ready
	clique        map[string]string // pod → PodClique
	image         map[string]string // pod → image
	replica       map[string]string // pod → PodCliqueSet replica
	minAvailable  int
	armed         bool
	violations    []string
	firstDeletion map[string]time.Time // replica → first deletion of a pod
	newImage      string
	deleted       map[string]bool // pod → being deleted or gone
	// replica0AtReplica1Start counts replica 0's new-image pods (all, Ready) when replica 1's
	// first pod was deleted.
	replica0New, replica0NewReady int
}

func (r *rolloutRecorder) observe(ev watch.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.Type == watch.Error {
		r.violations = append(r.violations, fmt.Sprintf("the pod watch has a gap: %v", ev.Object))
		return
	}
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	name := pod.Name
	r.clique[name] = pod.Labels[grovev1alpha1.LabelPodClique]
	r.replica[name] = pod.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex]
	r.image[name] = pod.Spec.Containers[0].Image
	ready := ev.Type != watch.Deleted && pod.DeletionTimestamp.IsZero()
	if ready {
		ready = false
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				ready = true
			}
		}
	}
	r.ready[name] = ready
	r.deleted[name] = ev.Type == watch.Deleted || !pod.DeletionTimestamp.IsZero()
	if r.armed && r.deleted[name] {
		if _, seen := r.firstDeletion[r.replica[name]]; !seen {
			r.firstDeletion[r.replica[name]] = time.Now()
			if r.replica[name] == "1" {
				for p := range r.clique {
					if r.replica[p] == "0" && r.image[p] == r.newImage && !r.deleted[p] {
						r.replica0New++
						if r.ready[p] {
							r.replica0NewReady++
						}
					}
				}
			}
		}
	}
	if !r.armed {
		return
	}
	perClique := map[string]int{}
	for p, c := range r.clique {
		perClique[c] += 0
		if r.ready[p] {
			perClique[c]++
		}
	}
	for c, n := range perClique {
		if n < r.minAvailable {
			r.violations = append(r.violations, c)
		}
	}
}

func TestRollingUpdateReplacesOneReplicaAtATimeAboveMinAvailable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "roll", Namespace: ns},
		Spec: grovev1alpha1.PodCliqueSetSpec{Replicas: 2, Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{clique("router", 3)},
		}},
	}
	pcs.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](2)
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "roll", 6, 2*time.Minute)
	require.Eventually(t, func() bool {
		got := &grovev1alpha1.PodCliqueSet{}
		return k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) == nil && got.Status.AvailableReplicas == 2
	}, time.Minute, 200*time.Millisecond)

	rec := &rolloutRecorder{
		ready: map[string]bool{}, clique: map[string]string{}, image: map[string]string{}, replica: map[string]string{},
		firstDeletion: map[string]time.Time{}, minAvailable: 2, newImage: "busybox:1.37",
		deleted: map[string]bool{},
	}
	watcher, err := client.NewWithWatch(cluster.Current.RESTConfig(), client.Options{Scheme: k8s().Scheme()})
	require.NoError(t, err)
	list := &corev1.PodList{}
	w, err := cluster.ListAndWatch(ctx, watcher, list, ns)
	require.NoError(t, err)
	for i := range list.Items {
		rec.observe(watch.Event{Type: watch.Added, Object: &list.Items[i]})
	}
	defer w.Stop()
	go func() {
		for ev := range w.ResultChan() {
			rec.observe(ev)
		}
	}()
	rec.mu.Lock()
	rec.armed = true
	rec.mu.Unlock()

	update(t, pcs, func() { pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "busybox:1.37" })
	require.Eventually(t, func() bool {
		pods := listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "roll"})
		if len(pods) != 6 {
			return false
		}
		for _, p := range pods {
			if p.Spec.Containers[0].Image != "busybox:1.37" || p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
				return false
			}
		}
		got := &grovev1alpha1.PodCliqueSet{}
		return k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) == nil && got.Status.UpdatedReplicas == 2 &&
			meta.IsStatusConditionFalse(got.Status.Conditions, grovev1alpha1.ConditionUpdateInProgress)
	}, 3*time.Minute, 200*time.Millisecond, "every pod runs the new image")

	rec.mu.Lock()
	defer rec.mu.Unlock()
	assert.Empty(t, rec.violations, "no PodClique dropped below minAvailable Ready pods")
	require.Contains(t, rec.firstDeletion, "1")
	assert.Equal(t, 3, rec.replica0New, "replica 1 starts only after every pod of replica 0 runs the new template")
	assert.GreaterOrEqual(t, rec.replica0NewReady, 2, "... and replica 0 is available on it")

	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got))
	require.NotNil(t, got.Status.UpdateProgress)
	assert.NotNil(t, got.Status.UpdateProgress.UpdateEndedAt)
}

func TestAChangeDuringARollingUpdateConvergesOnTheNewestTemplate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "twice", Namespace: ns},
		Spec: grovev1alpha1.PodCliqueSetSpec{Replicas: 2, Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{clique("router", 3)},
		}},
	}
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "twice", 6, 2*time.Minute)
	update(t, pcs, func() { pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "busybox:1.37" })
	require.Eventually(t, func() bool { // mid-rollout: the first old pod goes, or a new one is there
		for _, p := range listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "twice"}) {
			if !p.DeletionTimestamp.IsZero() || p.Spec.Containers[0].Image == "busybox:1.37" {
				return true
			}
		}
		return false
	}, time.Minute, 20*time.Millisecond, "the rolling update begins")
	update(t, pcs, func() { pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "busybox:1.38" })
	require.Eventually(t, func() bool {
		pods := listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "twice"})
		if len(pods) != 6 {
			return false
		}
		for _, p := range pods {
			if p.Spec.Containers[0].Image != "busybox:1.38" || p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
				return false
			}
		}
		return true
	}, 3*time.Minute, 200*time.Millisecond, "every pod ends on the newest image")
}

func TestScalingGroupReportsTheRolloutInItsUpdateProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := builders.PodCliqueSet(ns, "sgroll").Clique("leader", 1).Clique("worker", 2).
		ScalingGroup("sg", 2, 1, "leader", "worker").Obj()
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "sgroll", 6, 2*time.Minute)
	key := client.ObjectKey{Namespace: ns, Name: grovev1alpha1.PodCliqueScalingGroupName("sgroll", 0, "sg")}
	group := &grovev1alpha1.PodCliqueScalingGroup{}
	require.Eventually(t, func() bool {
		return k8s().Get(ctx, key, group) == nil && group.Status.CurrentPodCliqueSetGenerationHash != nil
	}, time.Minute, 200*time.Millisecond, "the first revision is realised")
	assert.Nil(t, group.Status.UpdateProgress, "creating the group is no update")
	first := *group.Status.CurrentPodCliqueSetGenerationHash

	update(t, pcs, func() { pcs.Spec.Template.Cliques[1].Spec.PodSpec.Containers[0].Image = "busybox:1.37" })
	require.Eventually(t, func() bool {
		if k8s().Get(ctx, key, group) != nil {
			return false
		}
		p := group.Status.UpdateProgress
		return p != nil && p.UpdateEndedAt != nil && p.PodCliqueSetGenerationHash == group.Spec.PodCliqueSetGenerationHash &&
			ptr.Deref(group.Status.CurrentPodCliqueSetGenerationHash, "") == p.PodCliqueSetGenerationHash
	}, 3*time.Minute, 200*time.Millisecond, "the group's update ends on the new revision")
	p := group.Status.UpdateProgress
	assert.NotEqual(t, first, p.PodCliqueSetGenerationHash)
	assert.Equal(t, int32(4), p.TotalPodCliquesCount, "2 group replicas × 2 cliques")
	assert.Equal(t, int32(4), p.UpdatedPodCliquesCount)
	assert.Nil(t, p.ReadyReplicaIndicesSelectedToUpdate, "nothing is left in progress")
	assert.False(t, p.UpdateEndedAt.Before(&p.UpdateStartedAt))
}

// Upstream #565: replicas patched in quick succession (a PodCliqueSet and its scaling group,
// during a rolling update) end with exactly the children and pods the last values ask for — no
// orphaned PodClique, PodGang or Service, nothing left at an older template.
func TestRapidReplicaPatchesConvergeOnTheLastValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := builders.PodCliqueSet(ns, "rapid").Replicas(2).Clique("router", 1).Clique("leader", 1).Clique("worker", 2).
		ScalingGroup("prefill", 2, 1, "leader", "worker").Obj()
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "rapid", 2*(1+2*3), 2*time.Minute)
	update(t, pcs, func() { pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "busybox:1.38" })
	for _, n := range []int32{4, 1, 3} {
		update(t, pcs, func() { pcs.Spec.Replicas = n })
	}
	for _, n := range []int32{3, 1, 2} {
		for i := range 3 {
			require.NoError(t, client.IgnoreNotFound(k8s().Patch(ctx, &grovev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, Name: grovev1alpha1.PodCliqueScalingGroupName("rapid", i, "prefill")}},
				client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, n)))))
		}
	}
	// 3 replicas: a router and 2 prefill group replicas of a leader and 2 workers each.
	want := 3 * (1 + 2*3)
	require.Eventually(t, func() bool {
		pods := listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "rapid"})
		if len(pods) != want {
			return false
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() ||
				(strings.HasSuffix(p.Labels[grovev1alpha1.LabelPodClique], "-router") && p.Spec.Containers[0].Image != "busybox:1.38") {
				return false
			}
		}
		return true
	}, 3*time.Minute, 200*time.Millisecond, "exactly the pods of 3 replicas with 2 group replicas each, Running")
	cliques := &grovev1alpha1.PodCliqueList{}
	require.NoError(t, k8s().List(ctx, cliques, client.InNamespace(ns)))
	assert.Len(t, cliques.Items, 3*(1+2*2), "a router and 2×(leader, worker) per replica: no orphan")
	gangs := &schedulerv1alpha1.PodGangList{}
	require.NoError(t, k8s().List(ctx, gangs, client.InNamespace(ns)))
	var names []string
	for _, g := range gangs.Items {
		names = append(names, g.Name)
	}
	// minAvailable 1: group replica 0 is in the base gang, replica 1 has a scaled gang.
	assert.ElementsMatch(t, []string{"rapid-0", "rapid-1", "rapid-2", "rapid-0-prefill-0", "rapid-1-prefill-0", "rapid-2-prefill-0"}, names)
	services := &corev1.ServiceList{}
	require.NoError(t, k8s().List(ctx, services, client.InNamespace(ns)))
	assert.Len(t, services.Items, 3, "one headless Service per replica")
	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got))
	assert.Equal(t, int32(3), got.Status.Replicas)
}
