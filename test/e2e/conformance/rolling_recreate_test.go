package conformance

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// podEvents records, from a watch, which original pods were deleted and which pods were added.
type podEvents struct {
	mu       sync.Mutex
	original map[types.UID]bool
	deleted  int
	added    int
}

func (e *podEvents) observe(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case ev.Type == watch.Added && !e.original[p.UID]:
		e.added++
	case ev.Type == watch.Deleted && e.original[p.UID]:
		e.deleted++
		delete(e.original, p.UID) // count each once
	}
}

func (e *podEvents) counts() (deleted, added int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.deleted, e.added
}

// Test_RU10_RollingUpdateInsufficientResources: with no room for a new pod, a rolling update
// deletes one pod first and goes no further while its replacement cannot be placed; once room
// comes back it completes. Adapted: the test's own nodes (tainted so only it uses them) are
// cordoned, where upstream cordons every worker of its private cluster.
func Test_RU10_RollingUpdateInsufficientResources(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	nodes, err := cluster.Current.AddPool(ctx, ns, 2, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cluster.Current.DeleteNodes(context.Background(), nodes...) })
	pcs := workload(ns, "workload1", full)
	for _, c := range pcs.Spec.Template.Cliques {
		cluster.OnPool(&c.Spec.PodSpec, ns)
	}
	deploy(t, pcs)

	watcher, err := client.NewWithWatch(cluster.Current.RESTConfig(), client.Options{Scheme: k8s().Scheme()})
	require.NoError(t, err)
	list := &corev1.PodList{}
	w, err := cluster.ListAndWatch(ctx, watcher, list, ns)
	require.NoError(t, err)
	defer w.Stop()
	ev := &podEvents{original: map[types.UID]bool{}}
	for _, p := range list.Items {
		ev.original[p.UID] = true
	}
	go func() {
		for e := range w.ResultChan() {
			ev.observe(e)
		}
	}()

	require.NoError(t, cluster.Current.SetUnschedulable(ctx, true, nodes...))
	since := time.Now()
	triggerUpdate(t, pcs, "pc-a")
	require.Eventually(t, func() bool {
		deleted, added := ev.counts()
		return deleted == 1 && added == 1
	}, 2*time.Minute, 200*time.Millisecond, "one original pod deleted and its replacement added")
	assert.Never(t, func() bool {
		deleted, _ := ev.counts()
		return deleted > 1
	}, 10*time.Second, 200*time.Millisecond, "nothing more is deleted while the replacement cannot be placed")

	require.NoError(t, cluster.Current.SetUnschedulable(ctx, false, nodes...))
	require.Eventually(t, func() bool {
		got := get(t, pcs)
		p := got.Status.UpdateProgress
		return got.Status.UpdatedReplicas == 1 && p != nil && p.UpdateEndedAt != nil && !p.UpdateStartedAt.Time.Before(since.Truncate(time.Second))
	}, 5*time.Minute, 200*time.Millisecond, "the update completes once there is room")
}

// Test_RU7_RollingUpdatePCSPodClique: an update of the standalone clique pc-a completes, deleting
// its pods one at a time (upstream: at most one pod between its DELETED and its replacement's
// ADDED, and one PodCliqueSet replica at a time, which one replica makes vacuous). Strengthened:
// sampled from a watch that starts after a list (upstream's synthetic ADDED events hide
// overlaps), the workload never has more than one pod that is not Ready (being deleted, gone, or
// back and not Ready yet) and did have one; the update began after the trigger and ended, with
// both pc-a pods replaced (by UID) onto the new template and exactly 10 pods.
func Test_RU7_RollingUpdatePCSPodClique(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload1", full)
	deploy(t, pcs)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	down := 0
	tr := trackPods(t, ns, func(ps map[string]*corev1.Pod) { down = max(down, 10-readyIn(ps, "", "")) })

	since := time.Now()
	triggers := triggerEach(t, pcs, "pc-a")
	waitUpdated(t, pcs, 1, since, time.Minute)
	assertRolled(t, pcs, 10, before, triggers)
	tr.stop(t)
	assert.Equal(t, 1, down, "one pod of the workload unavailable at a time"+"\n"+tr.history())
}

// Test_RU8_RollingUpdatePCSGPodClique: an update of pc-b, a clique of scaling group sg-x,
// completes, replacing one sg-x replica at a time (upstream: at most one group replica between
// the deletion and the re-creation of its pods, globally; one PodCliqueSet replica at a time,
// vacuous). Strengthened as RU-7: from the watch, never more than one sg-x replica is
// unavailable (its pc-b or a pc-c pod not Ready) and one was; pc-a never loses a pod; both pc-b
// pods are replaced onto the new template and exactly 10 pods remain.
func Test_RU8_RollingUpdatePCSGPodClique(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload1", full)
	deploy(t, pcs)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	groups, pcA := 0, 0
	tr := trackPods(t, ns, func(ps map[string]*corev1.Pod) {
		groups = max(groups, groupsDown(ps, "workload1-0-sg-x", 2))
		pcA = max(pcA, 2-readyIn(ps, grovev1alpha1.LabelPodClique, "workload1-0-pc-a"))
	})

	since := time.Now()
	triggers := triggerEach(t, pcs, "pc-b")
	waitUpdated(t, pcs, 1, since, time.Minute)
	assertRolled(t, pcs, 10, before, triggers)
	tr.stop(t)
	assert.Equal(t, 1, groups, "one sg-x replica unavailable at a time"+"\n"+tr.history())
	assert.Zero(t, pcA, "pc-a keeps both pods Ready")
}

// Test_RU9_RollingUpdateAllPodCliques: pc-a, pc-b and pc-c are changed in three patches and the
// update completes with at most one pod of each PodClique and one replica of each scaling group
// down at a time; pc-a and sg-x may roll together (upstream). Strengthened as RU-7: from the
// watch, pc-a never has more than one pod and sg-x more than one replica unavailable, each did,
// and all 10 pods are replaced onto their clique's new template. Adapted: a scaling group
// replaces whole group replicas (upstream deletes a group replica's PodCliques too), so the
// members' pods are held to the group's budget, not one pod at a time, where upstream's
// per-PodClique check passes only because its synthetic ADDED events make it vacuous.
func Test_RU9_RollingUpdateAllPodCliques(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload1", full)
	deploy(t, pcs)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	groups, pcA, together := 0, 0, false
	tr := trackPods(t, ns, func(ps map[string]*corev1.Pod) {
		g, a := groupsDown(ps, "workload1-0-sg-x", 2), 2-readyIn(ps, grovev1alpha1.LabelPodClique, "workload1-0-pc-a")
		groups, pcA, together = max(groups, g), max(pcA, a), together || (g > 0 && a > 0)
	})

	since := time.Now()
	triggers := triggerEach(t, pcs, "pc-a", "pc-b", "pc-c")
	waitUpdated(t, pcs, 1, since, 4*time.Minute)
	assertRolled(t, pcs, 10, before, triggers)
	tr.stop(t)
	if !assert.Equal(t, 1, pcA, "one pc-a pod unavailable at a time") || !assert.Equal(t, 1, groups, "one sg-x replica unavailable at a time") {
		t.Log(tr.history())
	}
	t.Logf("pc-a and sg-x rolled at the same time: %t", together)
}

// Test_RU11_RollingUpdateWithPCSScaleOut: the PodCliqueSet is scaled from 2 to 3 replicas while an
// update of pc-a rolls; upstream asserts the update ends with 3 updated replicas and exactly 30
// pods, none Pending. Strengthened: all 30 Ready, every pc-a pod (the new replica's too) on the
// new template, the 4 old ones replaced, and no pod made (and placed) at the new template
// deleted again. Adapted: kwok's pods start at once, so to keep the update going while the scale
// lands they take 1 s to become Ready (upstream slows its deletions with a SIGTERM-ignoring
// patch instead) and the scale waits until the update is reported in progress rather than a
// fixed 100 ms.
func Test_RU11_RollingUpdateWithPCSScaleOut(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload1", full)
	slowStart(pcs)
	deploy(t, pcs)
	scale(t, pcs.DeepCopy(), 2)
	waitReady(t, ns, pcs.Name, 20, 2*time.Minute)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	tr := trackPods(t, ns, nil)

	since := time.Now()
	triggers := triggerEach(t, pcs, "pc-a")
	scaleDuringUpdate(t, pcs, since, 3, pcs.DeepCopy())
	waitUpdated(t, pcs, 3, since, 2*time.Minute)
	assertRolled(t, pcs, 30, before, triggers)
	tr.stop(t)
	assert.Empty(t, tr.deletedWith(triggers), "no pod made at the new template is replaced again\n"+tr.history())
}

// Test_RU12_RollingUpdateWithPCSScaleInDuringUpdate: every clique is changed; once replica 1 is
// the one updating, the PodCliqueSet is scaled from 2 to 1; upstream asserts the update then ends
// with 1 updated replica and exactly 10 pods, none Pending. Strengthened: replica 1 is the only
// one updating and replica 0 had every pod on the new template and Ready by then (replicas go
// one at a time, lowest first), and the 10 pods left are Ready and all replaced onto the new
// template. Adapted: pods take 1 s to become Ready, as in RU-11.
func Test_RU12_RollingUpdateWithPCSScaleInDuringUpdate(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload1", full)
	slowStart(pcs)
	deploy(t, pcs)
	scale(t, pcs.DeepCopy(), 2)
	waitReady(t, ns, pcs.Name, 20, 2*time.Minute)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})

	since := time.Now()
	triggers := triggerEach(t, pcs, "pc-a", "pc-b", "pc-c")
	var updating []grovev1alpha1.PodCliqueSetReplicaUpdateProgress
	require.Eventually(t, func() bool {
		got := get(t, pcs)
		if !inProgress(got, since) {
			return false
		}
		updating = got.Status.UpdateProgress.CurrentlyUpdating
		return len(updating) > 0 && updating[0].ReplicaIndex == 1
	}, time.Minute, 50*time.Millisecond, "replica 1 is updating")
	replica0 := pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name, grovev1alpha1.LabelPodCliqueSetReplicaIndex: "0"})
	scale(t, pcs.DeepCopy(), 1)
	require.True(t, inProgress(get(t, pcs), since), "the scale landed during the update")
	assert.Len(t, updating, 1, "one replica updating at a time")
	assert.Len(t, replica0, 10)
	for i := range replica0 {
		p := &replica0[i]
		assert.True(t, ready(p) && hasTrigger(p, triggers[p.Spec.Containers[0].Name]), "%s of replica 0 is Ready on the new template before replica 1 updates", p.Name)
	}

	waitUpdated(t, pcs, 1, since, 2*time.Minute)
	assertRolled(t, pcs, 10, before, triggers)
}

// Test_RU16_RollingUpdateWithPCSGScaleInDuringUpdate: with two PodCliqueSet replicas whose sg-x
// was scaled to 3, every clique is changed and sg-x is scaled back to 2 in both replicas during
// the update; upstream asserts the update ends with 2 updated replicas and exactly 20 pods, none
// Pending. Strengthened: all 20 Ready and replaced onto the new template, sg-x's replica 2 gone
// from both. Adapted: pods take 1 s to become Ready and the scale waits for the update, as in
// RU-11.
func Test_RU16_RollingUpdateWithPCSGScaleInDuringUpdate(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload1", full)
	slowStart(pcs)
	deploy(t, pcs)
	scale(t, pcs.DeepCopy(), 2)
	waitReady(t, ns, pcs.Name, 20, 2*time.Minute)
	sg0, sg1 := pcsgRef(ns, "workload1-0-sg-x"), pcsgRef(ns, "workload1-1-sg-x")
	scale(t, sg0, 3)
	scale(t, sg1, 3)
	waitReady(t, ns, pcs.Name, 28, 2*time.Minute)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})

	since := time.Now()
	triggers := triggerEach(t, pcs, "pc-a", "pc-b", "pc-c")
	scaleDuringUpdate(t, pcs, since, 2, pcsgRef(ns, sg0.Name), pcsgRef(ns, sg1.Name))
	waitUpdated(t, pcs, 2, since, 2*time.Minute)
	assertRolled(t, pcs, 20, before, triggers)
	for _, g := range []string{sg0.Name, sg1.Name} {
		for _, c := range []string{"pc-b", "pc-c"} {
			assert.Empty(t, pods(t, ns, map[string]string{grovev1alpha1.LabelPodClique: grovev1alpha1.ScalingGroupPodCliqueName(g, 2, c)}))
		}
	}
}

// onePCSReplicaAtATime is a probe of upstream's verifySinglePCSReplicaUpdatedFirst: it records in
// most how many of the 2 PodCliqueSet replicas had, at once, a pod of before (by name) being
// deleted, gone or back and not Ready.
func onePCSReplicaAtATime(before map[string]types.UID, replica map[string]int, most *int) func(map[string]*corev1.Pod) {
	return func(ps map[string]*corev1.Pod) {
		n := 0
		for i := 0; i < 2; i++ {
			if replicaDisturbed(ps, before, replica, i) {
				n++
			}
		}
		*most = max(*most, n)
	}
}

// Test_RU19_RollingUpdateWithPodCliqueScaleOutBeforeUpdate: with two PodCliqueSet replicas, pc-a
// is scaled from 2 to 4 in both and 100 ms later every clique is changed; upstream asserts the
// update ends with 2 updated replicas and exactly 24 pods. Strengthened: all 24 Ready and on the
// new template, no pod made at it (and placed) deleted again, and (upstream's replica-order
// check, which its one-replica cases make vacuous) one PodCliqueSet replica disturbed at a time.
func Test_RU19_RollingUpdateWithPodCliqueScaleOutBeforeUpdate(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload1", full)
	deploy(t, pcs)
	scale(t, pcs.DeepCopy(), 2)
	waitReady(t, ns, pcs.Name, 20, 2*time.Minute)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	replicas := 0
	tr := trackPods(t, ns, onePCSReplicaAtATime(before, replicaOf(t, ns, pcs.Name), &replicas))

	scale(t, pclqRef(ns, "workload1-0-pc-a"), 4)
	scale(t, pclqRef(ns, "workload1-1-pc-a"), 4)
	time.Sleep(100 * time.Millisecond)
	since := time.Now()
	triggers := triggerEach(t, pcs, "pc-a", "pc-b", "pc-c")
	waitUpdated(t, pcs, 2, since, 4*time.Minute)
	assertRolled(t, pcs, 24, before, triggers)
	tr.stop(t)
	assert.Empty(t, tr.deletedWith(triggers), "no pod made at the new template is replaced again\n"+tr.history())
	assert.Equal(t, 1, replicas, "one PodCliqueSet replica updating at a time"+"\n"+tr.history())
}

// rollingWorkload is workload1 with two PodCliqueSet replicas Ready, pods that take a second to
// start (so that a scale lands during the update), under the coscheduling scheduler. Adapted
// (RU-18, RU-20): under kube-scheduler 1.37's gang mode, a clique scaled during an update left
// replica 0's new pods unplaced — ungated, in their pod group, never bound — until the scheduler's
// periodic retry of unschedulable pods (5 minutes), past upstream's 4-minute wait.
func rollingWorkload(t *testing.T) *grovev1alpha1.PodCliqueSet {
	t.Helper()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload1", full)
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = coscheduler
	}
	slowStart(pcs)
	deploy(t, pcs)
	scale(t, pcs.DeepCopy(), 2)
	waitReady(t, ns, pcs.Name, 20, 2*time.Minute)
	return pcs
}

// rollWhileScalingPCA is RU-18's and RU-20's middle: every clique of both replicas changes and,
// while the update runs, pc-a of both is scaled to replicas; the update ends with both replicas
// updated and pods pods Ready on the new template. It returns the triggers once the tracker stopped.
func rollWhileScalingPCA(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, tr *podTracker, before map[string]types.UID, replicas int32, pods int) map[string]string {
	t.Helper()
	ns := pcs.Namespace
	since := time.Now()
	triggers := triggerEach(t, pcs, "pc-a", "pc-b", "pc-c")
	scaleDuringUpdate(t, pcs, since, replicas, pclqRef(ns, "workload1-0-pc-a"), pclqRef(ns, "workload1-1-pc-a"))
	waitUpdated(t, pcs, 2, since, 4*time.Minute)
	assertRolled(t, pcs, pods, before, triggers)
	tr.stop(t)
	return triggers
}

// Test_RU18_RollingUpdateWithPodCliqueScaleOutDuringUpdate: every clique changes in both
// PodCliqueSet replicas and, while the update runs, pc-a is scaled from 2 to 4 in both; upstream
// asserts the update ends with 2 updated replicas and exactly 24 pods. Strengthened: all 24 Ready
// on the new template, none made at it replaced again, one PodCliqueSet replica at a time.
func Test_RU18_RollingUpdateWithPodCliqueScaleOutDuringUpdate(t *testing.T) {
	t.Parallel()
	pcs := rollingWorkload(t)
	ns := pcs.Namespace
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	replicas := 0
	tr := trackPods(t, ns, onePCSReplicaAtATime(before, replicaOf(t, ns, pcs.Name), &replicas))

	triggers := rollWhileScalingPCA(t, pcs, tr, before, 4, 24)
	assert.Empty(t, tr.deletedWith(triggers), "no pod made at the new template is replaced again\n"+tr.history())
	assert.Equal(t, 1, replicas, "one PodCliqueSet replica updating at a time"+"\n"+tr.history())
}

// Test_RU20_RollingUpdateWithPodCliqueScaleInDuringUpdate: pc-a at 3 in both PodCliqueSet
// replicas (22 pods); every clique changes and, while the update runs, pc-a is scaled back to 2;
// upstream asserts the update ends with 2 updated replicas and exactly 20 pods. Strengthened: all
// 20 Ready on the new template, none made at it replaced again but the two scaled in.
func Test_RU20_RollingUpdateWithPodCliqueScaleInDuringUpdate(t *testing.T) {
	t.Parallel()
	pcs := rollingWorkload(t)
	ns := pcs.Namespace
	scale(t, pclqRef(ns, "workload1-0-pc-a"), 3)
	scale(t, pclqRef(ns, "workload1-1-pc-a"), 3)
	waitReady(t, ns, pcs.Name, 22, 2*time.Minute)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	tr := trackPods(t, ns, func(map[string]*corev1.Pod) {})

	triggers := rollWhileScalingPCA(t, pcs, tr, before, 2, 20)
	scaledIn := []string{grovev1alpha1.PodHostname("workload1-0-pc-a", 2), grovev1alpha1.PodHostname("workload1-1-pc-a", 2)}
	var replaced []string
	for _, name := range tr.deletedWith(triggers) {
		if !slices.Contains(scaledIn, name) {
			replaced = append(replaced, name)
		}
	}
	assert.Empty(t, replaced, "no pod made at the new template is replaced again (the scaled-in pc-a-2 pods aside)\n"+tr.history())
}
