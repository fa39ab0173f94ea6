package conformance

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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// podTracker is upstream's updateTracker made exact: it lists a namespace's pods and follows
// them from a watch that starts after that list, so no synthetic ADDED event stands for a pod
// that already existed. After every event it hands the pods there are now (by name; a pod
// replaced under the same name is told apart by UID) to probe, which runs under the tracker's
// lock: what probe records may be read once stop has returned.
type podTracker struct {
	mu    sync.Mutex
	pods  map[string]*corev1.Pod
	gone  []*corev1.Pod // every pod whose deletion the watch delivered
	trail []string      // the last maxTrail events, in order, for a failure's message
	err   error
	probe func(pods map[string]*corev1.Pod)
	w     watch.Interface
	done  chan struct{}
}

func trackPods(t *testing.T, ns string, probe func(pods map[string]*corev1.Pod)) *podTracker {
	t.Helper()
	watcher, err := client.NewWithWatch(cluster.Current.RESTConfig(), client.Options{Scheme: k8s().Scheme()})
	require.NoError(t, err)
	list := &corev1.PodList{}
	w, err := cluster.ListAndWatch(context.Background(), watcher, list, ns)
	require.NoError(t, err)
	tr := &podTracker{pods: map[string]*corev1.Pod{}, probe: probe, w: w, done: make(chan struct{})}
	for i := range list.Items {
		tr.pods[list.Items[i].Name] = &list.Items[i]
	}
	go func() {
		defer close(tr.done)
		for ev := range w.ResultChan() {
			tr.observe(ev)
		}
	}()
	t.Cleanup(w.Stop)
	return tr
}

func (tr *podTracker) observe(ev watch.Event) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if ev.Type == watch.Error {
		if tr.err == nil {
			tr.err = apierrors.FromObject(ev.Object)
		}
		return
	}
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	if len(tr.trail) == maxTrail {
		tr.trail = tr.trail[1:] // the events closest to a failure matter most
	}
	tr.trail = append(tr.trail, fmt.Sprintf("%s %-8s %s uid=%.8s ready=%t deleting=%t node=%q",
		time.Now().Format("15:04:05.000"), ev.Type, p.Name, p.UID, ready(p), !p.DeletionTimestamp.IsZero(), p.Spec.NodeName))
	switch ev.Type {
	case watch.Deleted:
		if cur := tr.pods[p.Name]; cur != nil && cur.UID == p.UID {
			delete(tr.pods, p.Name)
		}
		tr.gone = append(tr.gone, p)
	case watch.Added, watch.Modified:
		tr.pods[p.Name] = p
	default:
		return
	}
	if tr.probe != nil {
		tr.probe(tr.pods)
	}
}

// stop ends the watch and returns once every event it delivered was observed.
func (tr *podTracker) stop(t *testing.T) {
	t.Helper()
	tr.w.Stop()
	<-tr.done
	tr.mu.Lock()
	defer tr.mu.Unlock()
	require.NoError(t, tr.err, "the pod watch delivered every event")
}

// maxTrail bounds the events a failure's message shows.
const maxTrail = 400

// history is the last maxTrail events the watch delivered, one line each, for a failure's message; call it
// once stop has returned.
func (tr *podTracker) history() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return "pod events:\n" + strings.Join(tr.trail, "\n")
}

// deletedWith lists the pods carrying an UPDATE_TRIGGER value of triggers, placed on a node,
// whose deletion the watch delivered: pods made at the new template that were replaced again. A
// pod still gated and never placed is left out: the operator recreates such a pod when the
// backend assigns its scheduling group after it was made, which is no second roll.
func (tr *podTracker) deletedWith(triggers map[string]string) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []string
	for _, p := range tr.gone {
		if v, ok := triggers[p.Spec.Containers[0].Name]; ok && hasTrigger(p, v) && p.Spec.NodeName != "" {
			out = append(out, p.Name)
		}
	}
	return out
}

// live reports a pod that is Ready and not being deleted.
func live(p *corev1.Pod) bool { return p.DeletionTimestamp.IsZero() && ready(p) }

// readyIn counts the live pods whose label key has value (every pod when key is empty).
func readyIn(pods map[string]*corev1.Pod, key, value string) int {
	n := 0
	for _, p := range pods {
		if live(p) && (key == "" || p.Labels[key] == value) {
			n++
		}
	}
	return n
}

// groupsDown counts the replicas below n of scaling group pcsg (upstream's sg-x, full minimums:
// one pc-b and three pc-c pods Ready) that are not available.
func groupsDown(pods map[string]*corev1.Pod, pcsg string, n int) int {
	down := 0
	for j := 0; j < n; j++ {
		b := readyIn(pods, grovev1alpha1.LabelPodClique, grovev1alpha1.ScalingGroupPodCliqueName(pcsg, j, "pc-b"))
		c := readyIn(pods, grovev1alpha1.LabelPodClique, grovev1alpha1.ScalingGroupPodCliqueName(pcsg, j, "pc-c"))
		if b < 1 || c < 3 {
			down++
		}
	}
	return down
}

// replicaDisturbed reports whether PodCliqueSet replica i has, among the pods it had when the
// tracker started (before), one being deleted, gone, or back under its name and not Ready yet:
// upstream's "actively updating" replica, decided by UID.
func replicaDisturbed(pods map[string]*corev1.Pod, before map[string]types.UID, replica map[string]int, i int) bool {
	for name := range before {
		if replica[name] != i {
			continue
		}
		if p := pods[name]; p == nil || !live(p) {
			return true
		}
	}
	return false
}

// replicaOf maps each pod of the PodCliqueSet to its PodCliqueSet replica index.
func replicaOf(t *testing.T, ns, pcs string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, p := range pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs}) {
		var i int
		_, err := fmt.Sscan(p.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex], &i)
		require.NoError(t, err, p.Name)
		out[p.Name] = i
	}
	return out
}

// triggerEach changes each clique's template in a patch of its own, as upstream's successive
// triggerPodCliqueUpdate calls do, and returns each clique's UPDATE_TRIGGER value.
func triggerEach(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, cliques ...string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range cliques {
		out[c] = triggerUpdate(t, pcs, c)
	}
	return out
}

// updateDone reports an update recorded as begun no earlier than since (not a stale
// updateEndedAt of an earlier one), with the status describing the current spec, ended with
// every one of the replicas at the new template: upstream's waitForRollingUpdateComplete, exact.
func updateDone(got *grovev1alpha1.PodCliqueSet, replicas int32, since time.Time) bool {
	p := got.Status.UpdateProgress
	return got.Status.ObservedGeneration != nil && *got.Status.ObservedGeneration == got.Generation &&
		got.Status.UpdatedReplicas == replicas && p != nil && p.UpdateEndedAt != nil &&
		!p.UpdateStartedAt.Time.Before(since.Truncate(time.Second))
}

func waitUpdated(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, replicas int32, since time.Time, timeout time.Duration) {
	t.Helper()
	var got *grovev1alpha1.PodCliqueSet
	if !assert.Eventually(t, func() bool {
		got = get(t, pcs)
		return updateDone(got, replicas, since)
	}, timeout, 200*time.Millisecond, "the update begun after %s ends with %d updated replicas", since.Format(time.RFC3339), replicas) {
		require.FailNowf(t, "update", "status: updatedReplicas=%d observedGeneration=%v generation=%d updateProgress=%+v\npods not Ready:\n%s",
			got.Status.UpdatedReplicas, got.Status.ObservedGeneration, got.Generation, got.Status.UpdateProgress, notReady(t, pcs))
	}
}

// notReady describes the PodCliqueSet's pods that are not Ready: where they are and why not.
func notReady(t *testing.T, pcs *grovev1alpha1.PodCliqueSet) string {
	t.Helper()
	var b strings.Builder
	for _, p := range pods(t, pcs.Namespace, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name}) {
		if ready(&p) {
			continue
		}
		fmt.Fprintf(&b, "  %s node=%q phase=%s gates=%d", p.Name, p.Spec.NodeName, p.Status.Phase, len(p.Spec.SchedulingGates))
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// inProgress reports an update begun no earlier than since that has not ended.
func inProgress(got *grovev1alpha1.PodCliqueSet, since time.Time) bool {
	p := got.Status.UpdateProgress
	return p != nil && p.UpdateEndedAt == nil && !p.UpdateStartedAt.Time.Before(since.Truncate(time.Second))
}

// scaleDuringUpdate waits until the PodCliqueSet reports the update begun at since in progress,
// scales each object to replicas, and checks the update had not ended by then.
func scaleDuringUpdate(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, since time.Time, replicas int32, objs ...client.Object) {
	t.Helper()
	require.Eventually(t, func() bool { return inProgress(get(t, pcs), since) }, time.Minute, 50*time.Millisecond, "the update is in progress")
	for _, o := range objs {
		scale(t, o, replicas)
	}
	require.True(t, inProgress(get(t, pcs), since), "the scale landed during the update")
}

// assertRolled waits until the PodCliqueSet has exactly n pods, all Ready, each of a triggered
// clique at its trigger value, and checks that every pod of a triggered clique that existed
// before (by name) was replaced (by UID).
func assertRolled(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, n int, before map[string]types.UID, triggers map[string]string) {
	t.Helper()
	var bad []string
	if !assert.Eventually(t, func() bool {
		bad = nil
		ps := pods(t, pcs.Namespace, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
		for i := range ps {
			p := &ps[i]
			v, triggered := triggers[p.Spec.Containers[0].Name]
			switch {
			case !ready(p):
				bad = append(bad, p.Name+" not Ready")
			case triggered && !hasTrigger(p, v):
				bad = append(bad, p.Name+" on the old template")
			case triggered && before[p.Name] == p.UID:
				bad = append(bad, p.Name+" not replaced")
			}
		}
		if len(ps) != n {
			bad = append(bad, fmt.Sprintf("%d pods, want %d", len(ps), n))
		}
		return len(bad) == 0
	}, 2*time.Minute, 200*time.Millisecond, "%d Ready pods, every triggered clique's replaced onto the new template", n) {
		require.FailNow(t, "rolled", "%v\npods not Ready:\n%s", bad, notReady(t, pcs))
	}
}

// scale merge-patches the spec.replicas of a PodCliqueSet, PodCliqueScalingGroup or PodClique
// (upstream's ScalePCS, ScalePCSGAcrossAllReplicas and scalePodCliqueInPCS).
func scale(t *testing.T, obj client.Object, replicas int32) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
	require.NoError(t, k8s().Patch(context.Background(), obj, patch), "scaling %s to %d", obj.GetName(), replicas)
}

func pclqRef(ns, name string) *grovev1alpha1.PodClique {
	o := &grovev1alpha1.PodClique{}
	o.Namespace, o.Name = ns, name
	return o
}

func pcsgRef(ns, name string) *grovev1alpha1.PodCliqueScalingGroup {
	o := &grovev1alpha1.PodCliqueScalingGroup{}
	o.Namespace, o.Name = ns, name
	return o
}

// slowStart makes every pod of the workload take a second to become Ready (kwok's ready-after
// stage): kwok's pods start in milliseconds, and an update that spans a scale needs pods that take
// a while, as upstream's real containers do.
func slowStart(pcs *grovev1alpha1.PodCliqueSet) {
	for _, c := range pcs.Spec.Template.Cliques {
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[cluster.AnnotationReadyAfter] = "1s"
	}
}
