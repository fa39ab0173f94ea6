package coherent

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// The disaggregated workload of this package, per PodCliqueSet replica: a standalone frontend, a
// prefill scaling group and a decode one, each group replica a leader and two workers. Prefill and
// decode run 2:1; under Coherent each step replaces minAvailable of each (2 prefill replicas and 1
// decode replica), so an update of both takes two steps.
const (
	frontendPods     = 3
	frontendMin      = 1
	prefillReplicas  = 4
	prefillMin       = 2
	decodeReplicas   = 2
	decodeMin        = 1
	workersPerGroup  = 2
	podsPerGroupUnit = 1 + workersPerGroup
	podsPerReplica   = frontendPods + (prefillReplicas+decodeReplicas)*podsPerGroupUnit
)

// readyAfter is how long each pod takes to become Ready once placed: long enough that a step of
// the update is seen in flight (and a test acts in it), short enough for two cores.
const readyAfter = "3s"

// disaggregated is the workload, replicas PodCliqueSet replicas, on namespace ns's own pool
// (withPool sizes it): every pod asks for one CPU.
func disaggregated(ns, name string, replicas int32) *grovev1alpha1.PodCliqueSet {
	onPool := builders.PodSpecEdit(func(ps *corev1.PodSpec) {
		cluster.OnPool(ps, ns)
		for i := range ps.Containers {
			one := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
			ps.Containers[i].Resources = corev1.ResourceRequirements{Requests: one, Limits: one}
		}
	})
	pcs := builders.PodCliqueSet(ns, name).Replicas(replicas).UpdateStrategy(grovev1alpha1.CoherentStrategy).
		Clique("frontend", frontendPods, builders.MinAvailable(frontendMin)).
		Clique("pleader", 1, builders.MinAvailable(1)).
		Clique("pworker", workersPerGroup, builders.MinAvailable(workersPerGroup)).
		Clique("dleader", 1, builders.MinAvailable(1)).
		Clique("dworker", workersPerGroup, builders.MinAvailable(workersPerGroup)).
		ScalingGroup("prefill", prefillReplicas, prefillMin, "pleader", "pworker").
		ScalingGroup("decode", decodeReplicas, decodeMin, "dleader", "dworker").
		EachClique(onPool, builders.Annotate(cluster.AnnotationReadyAfter, readyAfter)).
		Obj()
	pcs.UID = "" // the API server gives it one
	return pcs
}

// withPool gives the test a pool that holds replicas of the disaggregated workload with room for
// exactly one more group replica (podsPerGroupUnit CPUs) and nothing else: a surge or a leak of
// pods beyond that stays Pending. Node counts are 4 or 5 (42+3 CPUs on 5 nodes of 9).
func withPool(t *testing.T, ns string, replicas int) {
	t.Helper()
	cpus := replicas*podsPerReplica + podsPerGroupUnit
	for n := 4; n <= 8; n++ {
		if cpus%n == 0 {
			pool(t, ns, n, int64(cpus/n))
			return
		}
	}
	pool(t, ns, 4, int64((cpus+3)/4))
}

// deploy creates the PodCliqueSet, waits until its every pod is Ready, and returns it as stored
// (defaulted: its budgets are read from it).
func deploy(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, timeout time.Duration) *grovev1alpha1.PodCliqueSet {
	t.Helper()
	require.NoError(t, k8s().Create(context.Background(), pcs), "creating PodCliqueSet %s", pcs.Name)
	stored := get(t, pcs.Namespace, pcs.Name)
	waitAllReady(t, stored, timeout)
	return get(t, pcs.Namespace, pcs.Name)
}

// expectedPods is how many pods the PodCliqueSet has at its desired size.
func expectedPods(pcs *grovev1alpha1.PodCliqueSet) int {
	n := 0
	for _, c := range componentsOf(pcs) {
		n += c.pods(pcs)
	}
	return n
}

// waitAllReady waits until the PodCliqueSet has its every pod, each Ready.
func waitAllReady(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, timeout time.Duration) {
	t.Helper()
	want := expectedPods(pcs)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		ps := podsOf(c, pcs.Namespace, pcs.Name)
		n := 0
		for i := range ps {
			if live(&ps[i]) {
				n++
			}
		}
		assert.Equal(c, want, len(ps), "pods of %s", pcs.Name)
		assert.Equal(c, want, n, "Ready pods of %s", pcs.Name)
	}, timeout, 250*time.Millisecond, "every pod of %s/%s Ready\n%s", pcs.Namespace, pcs.Name, lazy(func() string { return notReady(t, pcs) }))
}

// lazy defers a failure message's description to its printing.
type lazy func() string

func (l lazy) String() string { return l() }

// testingT is a *testing.T, or the *assert.CollectT of an EventuallyWithT condition (which runs on
// a goroutine of its own, where a failure must end only the attempt).
type testingT interface {
	require.TestingT
}

func helper(t testingT) {
	if h, ok := t.(interface{ Helper() }); ok {
		h.Helper()
	}
}

func get(t testingT, ns, name string) *grovev1alpha1.PodCliqueSet {
	helper(t)
	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, got))
	return got
}

// podsOf lists the pods of PodCliqueSet pcs.
func podsOf(t testingT, ns, pcs string) []corev1.Pod {
	helper(t)
	list := &corev1.PodList{}
	require.NoError(t, k8s().List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: pcs}))
	return list.Items
}

// notReady describes the PodCliqueSet's pods that are not Ready: where they are and why not.
func notReady(t *testing.T, pcs *grovev1alpha1.PodCliqueSet) string {
	t.Helper()
	var b strings.Builder
	for _, p := range podsOf(t, pcs.Namespace, pcs.Name) {
		if ready(&p) {
			continue
		}
		fmt.Fprintf(&b, "  %s node=%q phase=%s gated=%t", p.Name, p.Spec.NodeName, p.Status.Phase, gated(&p))
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// newRevision is a fresh triggerEnv value.
func newRevision() string { return strconv.FormatInt(time.Now().UnixNano(), 10) }

// changeTemplateTo changes the pod template of each named clique (template names): it sets
// triggerEnv to value (a fresh one from newRevision) in every container, in one update of the
// PodCliqueSet.
func changeTemplateTo(t *testing.T, ns, name, value string, cliques ...string) {
	t.Helper()
	rev := revision{}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got := &grovev1alpha1.PodCliqueSet{}
		if !assert.NoError(c, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, got)) {
			return
		}
		for _, clique := range got.Spec.Template.Cliques {
			if slices.Contains(cliques, clique.Name) {
				builders.Env(triggerEnv, value)(clique)
				rev[clique.Name] = value
			}
		}
		assert.Len(c, rev, len(cliques), "every clique of %v is in the template", cliques)
		assert.NoError(c, k8s().Update(context.Background(), got))
	}, 30*time.Second, 200*time.Millisecond, "changing the templates of %v", cliques)
}

// templateHashes maps each PodClique of the pods to the template hash its pods carry (the last
// seen, when they differ).
func templateHashes(pods []corev1.Pod) map[string]string {
	out := map[string]string{}
	for _, p := range pods {
		out[p.Labels[grovev1alpha1.LabelPodClique]] = p.Labels[grovev1alpha1.LabelPodTemplateHash]
	}
	return out
}

// uidsOf maps pods to their UIDs.
func uidsOf(pods []corev1.Pod) map[string]types.UID {
	out := map[string]types.UID{}
	for _, p := range pods {
		out[p.Name] = p.UID
	}
	return out
}

// updateRun is one Coherent update of a PodCliqueSet followed from its start: its pods (probed
// at every event), PodGangs and status.
type updateRun struct {
	pcs    *grovev1alpha1.PodCliqueSet // as stored before the change
	since  time.Time
	hashes map[string]string // PodClique → template hash before the change
	rev    revision
	inv    *invariants
	pods   *podTracker
	gangs  *gangTracker
	status *statusTracker
}

// startUpdate starts following the PodCliqueSet (stored, every pod Ready), then changes the
// templates of cliques. With ratio the probe also checks the changed components' proportion.
func startUpdate(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, ratio bool, cliques ...string) *updateRun {
	t.Helper()
	before := podsOf(t, pcs.Namespace, pcs.Name)
	u := &updateRun{pcs: pcs, hashes: templateHashes(before), rev: revision{}}
	value := newRevision()
	for _, c := range cliques {
		u.rev[c] = value
	}
	u.inv = newInvariants(pcs, maps(u.rev), keptPods(pcs, before, u.rev), ratio)
	u.gangs = trackGangs(t, pcs.Namespace)
	u.status = trackStatus(t, pcs.Namespace, pcs.Name)
	u.pods = trackPods(t, pcs.Namespace, u.inv.check)
	u.since = time.Now()
	changeTemplateTo(t, pcs.Namespace, pcs.Name, value, cliques...)
	return u
}

// widen changes the templates of more cliques mid-update; the probe stops keeping their pods
// before the change is made.
func (u *updateRun) widen(t *testing.T, cliques ...string) {
	t.Helper()
	value := newRevision()
	for _, c := range cliques {
		u.rev[c] = value
		u.inv.widen(u.pcs.Name, c, value)
	}
	changeTemplateTo(t, u.pcs.Namespace, u.pcs.Name, value, cliques...)
}

// waitInFlight waits until the update has a step in flight on some replica (inFlightEpochs set)
// and returns the state that showed it.
func (u *updateRun) waitInFlight(t *testing.T, timeout time.Duration) updateState {
	t.Helper()
	var s updateState
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		s = stateOf(get(c, u.pcs.Namespace, u.pcs.Name))
		assert.False(c, s.ended, "the update has not ended")
		assert.NotEmpty(c, s.inFlight, "currentlyUpdating[0].inFlightEpochs")
	}, timeout, 100*time.Millisecond, "a step of the update in flight; status seen:\n%s", lazy(u.status.describe))
	return s
}

// finish waits until the update ends (updateEndedAt set on an update begun after the change,
// currentlyUpdating empty), stops following, and asserts what must hold of the whole update:
// the probe's invariants at every pod event, every new gang released whole and made once, every
// pod Ready at its clique's newest template, each replica's PodGangMap and PodGangs at one
// revision and named by epoch.
func (u *updateRun) finish(t *testing.T, timeout time.Duration) {
	t.Helper()
	ns, name := u.pcs.Namespace, u.pcs.Name
	var got *grovev1alpha1.PodCliqueSet
	got = get(t, ns, name)
	ok := assert.EventuallyWithT(t, func(c *assert.CollectT) {
		p := &grovev1alpha1.PodCliqueSet{}
		if !assert.NoError(c, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p)) {
			return
		}
		got = p
		up := got.Status.UpdateProgress
		if !assert.NotNil(c, up, "updateProgress") {
			return
		}
		assert.False(c, up.UpdateStartedAt.Time.Before(u.since.Truncate(time.Second)), "the update begun after the change")
		assert.NotNil(c, up.UpdateEndedAt, "updateEndedAt")
		assert.Empty(c, up.CurrentlyUpdating, "currentlyUpdating")
	}, timeout, 250*time.Millisecond, "the update ends")
	u.pods.stop(t)
	u.gangs.stop(t)
	u.status.stop(t)
	if !ok {
		require.FailNow(t, "update", "status: %+v\nstatus seen:\n%s\npods not Ready:\n%s\ngangs made:\n%s\n%s",
			got.Status.UpdateProgress, u.status.describe(), notReady(t, got), u.gangs.describe(), u.pods.history())
	}
	violations, started := u.inv.result()
	assert.Empty(t, violations, "invariants at every pod event\n%s", lazy(u.pods.history))
	assert.Equal(t, sortedInts(started), started, "replicas updated lowest index first")
	released, unjudged := u.pods.gangsReleasedWhole(u.gangs.minimums())
	assert.Empty(t, released, "every gang made by the update released whole\ngangs made:\n%s", lazy(u.gangs.describe))
	assert.NotEmpty(t, u.gangs.minimums(), "the update made new PodGangs")
	assert.Less(t, len(unjudged), len(u.gangs.minimums()), "a new gang's pods were seen placed (gangs none of whose pods was: %v)", unjudged)
	assert.Empty(t, u.gangs.duplicates(), "no PodGang made twice, one Anchor PodGang per epoch")
	u.assertAllAtNewest(t, got)
	assertGangLayout(t, got)
}

// assertAllAtNewest checks the end state: every pod of the PodCliqueSet there and Ready; the pods
// of a changed clique at its newest template (triggerEnv) under a template hash other than
// before, one hash per PodClique; the pods of unchanged components the very pods of before.
func (u *updateRun) assertAllAtNewest(t *testing.T, pcs *grovev1alpha1.PodCliqueSet) {
	t.Helper()
	waitAllReady(t, pcs, time.Minute)
	pods := podsOf(t, pcs.Namespace, pcs.Name)
	comps := componentsOf(pcs)
	hashes := map[string]map[string]bool{}
	for i := range pods {
		p := &pods[i]
		pclq := p.Labels[grovev1alpha1.LabelPodClique]
		if hashes[pclq] == nil {
			hashes[pclq] = map[string]bool{}
		}
		hashes[pclq][p.Labels[grovev1alpha1.LabelPodTemplateHash]] = true
		clique := cliqueOfPodName(comps, pcs.Name, p.Name)
		if _, changed := u.rev[clique]; changed {
			assert.True(t, u.rev.has(clique, p), "pod %s runs %s's newest template", p.Name, clique)
			assert.NotEqual(t, u.hashes[pclq], p.Labels[grovev1alpha1.LabelPodTemplateHash], "pod %s has a new template hash", p.Name)
		}
	}
	for pclq, hs := range hashes {
		assert.Len(t, hs, 1, "the pods of PodClique %s share one template hash: %v", pclq, keys(hs))
	}
	u.inv.mu.Lock()
	keep := u.inv.keep
	u.inv.mu.Unlock()
	now := uidsOf(pods)
	for name, uid := range keep {
		assert.Equal(t, uid, now[name], "pod %s of an unchanged component kept", name)
	}
}

// assertGangLayout checks each replica's PodGangMap (named <pcs>-<replica>) against its PodGangs
// and pods once an update ended: every entry at one revision; every PodGang an entry stands for
// exists, named by epoch (<pcs>-<r>-<epoch> for an Anchor, <pcs>-<r>-<epoch>-<group>-<j> for a Tail
// or ScaleOut) and labelled with its epoch and role; every pod in one of them.
func assertGangLayout(t *testing.T, pcs *grovev1alpha1.PodCliqueSet) {
	t.Helper()
	ctx := context.Background()
	gangs := &schedulerv1alpha1.PodGangList{}
	require.NoError(t, k8s().List(ctx, gangs, client.InNamespace(pcs.Namespace))) // the namespace holds one PodCliqueSet
	byName := map[string]*schedulerv1alpha1.PodGang{}
	for i := range gangs.Items {
		byName[gangs.Items[i].Name] = &gangs.Items[i]
	}
	named := map[string]bool{}
	for r := range int(pcs.Spec.Replicas) {
		m := &grovev1alpha1.PodGangMap{}
		if !assert.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: pcs.Namespace, Name: grovev1alpha1.PodGangMapName(pcs.Name, r)}, m), "PodGangMap of replica %d", r) {
			continue
		}
		assert.EqualValues(t, r, m.Spec.PodCliqueSetReplicaIndex, "PodGangMap %s's replica", m.Name)
		revisions := map[string]bool{}
		for _, e := range m.Spec.Entries {
			revisions[e.PodCliqueSetGenerationHash] = true
			var want []string
			if e.Role == grovev1alpha1.PodGangRoleAnchor {
				want = append(want, grovev1alpha1.AnchorPodGangName(pcs.Name, r, e.Epoch))
			} else {
				for group, indices := range e.PCSGReplicaIndices {
					for _, j := range indices {
						want = append(want, grovev1alpha1.EntryPodGangName(pcs.Name, r, e.Epoch, group, int(j)))
					}
				}
			}
			for _, g := range want {
				named[g] = true
				pg := byName[g]
				if !assert.NotNil(t, pg, "PodGang %s of entry %s (%s) exists", g, e.Epoch, e.Role) {
					continue
				}
				assert.Equal(t, e.Epoch, pg.Labels[grovev1alpha1.LabelEpoch], "PodGang %s's epoch label", g)
				assert.Equal(t, string(e.Role), pg.Labels[grovev1alpha1.LabelPodGangRole], "PodGang %s's role label", g)
			}
		}
		assert.Len(t, revisions, 1, "PodGangMap %s's entries at one revision once the update ended: %v", m.Name, keys(revisions))
	}
	for _, p := range podsOf(t, pcs.Namespace, pcs.Name) {
		assert.True(t, named[p.Labels[grovev1alpha1.LabelPodGang]], "pod %s's gang %q is one its PodGangMap stands for", p.Name, p.Labels[grovev1alpha1.LabelPodGang])
	}
}

// scaleSubresource sets spec.replicas of obj through its scale subresource, as kubectl scale and
// an autoscaler do.
func scaleSubresource(obj client.Object, replicas int32) error {
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
	// The answer (a Scale, or a refusal) is decoded into the object given: keep obj as it is.
	return k8s().SubResource("scale").Patch(context.Background(), obj.DeepCopyObject().(client.Object), patch)
}

func pcsgRef(ns, name string) *grovev1alpha1.PodCliqueScalingGroup {
	o := &grovev1alpha1.PodCliqueScalingGroup{}
	o.Namespace, o.Name = ns, name
	return o
}

// podMap lists the pods of PodCliqueSet pcs by name.
func podMap(t testingT, ns, pcs string) map[string]*corev1.Pod {
	helper(t)
	out := map[string]*corev1.Pod{}
	for _, p := range podsOf(t, ns, pcs) {
		out[p.Name] = &p
	}
	return out
}
