package coherent

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// follower lists a kind in a namespace and hands every change after that list, in order, to
// observe (under its own goroutine). The watch resumes where it stopped when the API server ends
// it, so the history has no gaps; a history compacted away is reported by stop.
type follower struct {
	w    watch.Interface
	done chan struct{}
	mu   sync.Mutex
	err  error
}

func follow(t *testing.T, ns string, list client.ObjectList, observe func(watch.Event)) *follower {
	t.Helper()
	watcher, err := client.NewWithWatch(cluster.Current.RESTConfig(), client.Options{Scheme: k8s().Scheme()})
	require.NoError(t, err)
	w, err := cluster.ListAndWatch(context.Background(), watcher, list, ns)
	require.NoError(t, err)
	f := &follower{w: w, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				f.mu.Lock()
				if f.err == nil {
					f.err = apierrors.FromObject(ev.Object)
				}
				f.mu.Unlock()
				continue
			}
			observe(ev)
		}
	}()
	t.Cleanup(w.Stop)
	return f
}

// stop ends the watch and returns once every event it delivered was observed.
func (f *follower) stop(t *testing.T) {
	t.Helper()
	f.w.Stop()
	<-f.done
	f.mu.Lock()
	defer f.mu.Unlock()
	require.NoError(t, f.err, "the watch delivered every event")
}

// podTracker follows a namespace's pods. After every event it hands probe the pods there are now
// (by name; a pod replaced under its name is told apart by UID), under the tracker's lock. It
// keeps, for every pod it saw, the position (in event order) at which it was first seen without
// the gang gate and first seen bound to a node, and the gang it was made for: the evidence that a
// gang was released to the scheduler whole.
type podTracker struct {
	mu     sync.Mutex
	seq    int // position of the event being observed; the initial list is position 1
	pods   map[string]*corev1.Pod
	ledger map[types.UID]*podLedger
	trail  []string
	probe  func(pods map[string]*corev1.Pod)
	f      *follower
}

// podLedger is what the tracker recorded of one pod (one UID).
type podLedger struct {
	name string
	// gang is the grove.io/podgang label the pod had when last seen before it was bound; existed
	// marks a pod of the initial list (made before the tracker started).
	gang    string
	existed bool
	// ungated and bound are the positions of the first event showing the pod without the
	// grove.io/podgang-pending-creation gate and bound to a node (0: never seen so).
	ungated, bound int
}

func trackPods(t *testing.T, ns string, probe func(pods map[string]*corev1.Pod)) *podTracker {
	t.Helper()
	tr := &podTracker{pods: map[string]*corev1.Pod{}, ledger: map[types.UID]*podLedger{}, probe: probe, seq: 1}
	list := &corev1.PodList{}
	tr.mu.Lock()
	tr.f = follow(t, ns, list, tr.observe)
	for i := range list.Items {
		p := &list.Items[i]
		tr.pods[p.Name] = p
		tr.record(p, true)
	}
	tr.mu.Unlock()
	return tr
}

// record notes what this event shows of the pod.
func (tr *podTracker) record(p *corev1.Pod, existed bool) {
	l := tr.ledger[p.UID]
	if l == nil {
		l = &podLedger{name: p.Name, gang: p.Labels[grovev1alpha1.LabelPodGang], existed: existed}
		tr.ledger[p.UID] = l
	}
	if g := p.Labels[grovev1alpha1.LabelPodGang]; g != "" && l.bound == 0 {
		l.gang = g // the gang it is placed with: the operator may name it after making the pod
	}
	if l.ungated == 0 && !gated(p) {
		l.ungated = tr.seq
	}
	if l.bound == 0 && p.Spec.NodeName != "" {
		l.bound = tr.seq
	}
}

func gated(p *corev1.Pod) bool {
	return slices.ContainsFunc(p.Spec.SchedulingGates, func(g corev1.PodSchedulingGate) bool {
		return g.Name == grovev1alpha1.SchedulingGatePodGangPendingCreation
	})
}

func (tr *podTracker) observe(ev watch.Event) {
	p, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.seq++
	if len(tr.trail) == maxTrail {
		tr.trail = tr.trail[1:] // the events closest to a failure matter most
	}
	tr.trail = append(tr.trail, fmt.Sprintf("%s %-8s %s uid=%.8s gang=%s hash=%.8s ready=%t deleting=%t gated=%t node=%q",
		time.Now().Format("15:04:05.000"), ev.Type, p.Name, p.UID, p.Labels[grovev1alpha1.LabelPodGang],
		p.Labels[grovev1alpha1.LabelPodTemplateHash], ready(p), !p.DeletionTimestamp.IsZero(), gated(p), p.Spec.NodeName))
	switch ev.Type {
	case watch.Deleted:
		if cur := tr.pods[p.Name]; cur != nil && cur.UID == p.UID {
			delete(tr.pods, p.Name)
		}
	case watch.Added, watch.Modified:
		tr.pods[p.Name] = p
		tr.record(p, false)
	default:
		return
	}
	if tr.probe != nil {
		tr.probe(tr.pods)
	}
}

// stop ends the watch once every event it delivered was observed.
func (tr *podTracker) stop(t *testing.T) {
	t.Helper()
	tr.f.stop(t)
}

// maxTrail bounds the events a failure's message shows.
const maxTrail = 400

// history is the last maxTrail pod events, one line each, for a failure's message.
func (tr *podTracker) history() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return "pod events:\n" + strings.Join(tr.trail, "\n")
}

// gangsReleasedWhole checks each gang of need (name → the pods its minimum asks for: the sum of
// its groups' minReplicas) against the pods made for it while the tracker ran: when the first of
// them was bound to a node, at least that many of them had been seen without the
// grove.io/podgang-pending-creation gate (or were made without it). It returns one line per gang
// that a pod of was bound before its minimum was released, and the gangs none of whose pods was
// bound (their pods never scheduled, or made before the tracker: nothing to judge).
func (tr *podTracker) gangsReleasedWhole(need map[string]int) (violations, unjudged []string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for gang, n := range need {
		var members []*podLedger
		for _, l := range tr.ledger {
			if l.gang == gang && !l.existed {
				members = append(members, l)
			}
		}
		first := 0
		for _, l := range members {
			if l.bound != 0 && (first == 0 || l.bound < first) {
				first = l.bound
			}
		}
		if first == 0 {
			unjudged = append(unjudged, gang)
			continue
		}
		released := map[string]bool{}
		for _, l := range members {
			if l.ungated != 0 && l.ungated <= first {
				released[l.name] = true
			}
		}
		if len(released) < n {
			violations = append(violations, fmt.Sprintf("gang %s: its first pod was bound at event %d, when %d of its %d pods had been released (%v)",
				gang, first, len(released), n, keys(released)))
		}
	}
	slices.Sort(violations)
	slices.Sort(unjudged)
	return violations, unjudged
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// gangTracker follows a namespace's PodGangs: which existed before it started, and of every other
// one the UIDs it had (one, unless it was made twice), its labels and its first spec.
type gangTracker struct {
	mu      sync.Mutex
	before  map[string]bool
	made    map[string]*gangRecord
	order   []string // names of made, in order of creation
	f       *follower
	deleted map[string]bool
}

type gangRecord struct {
	uids   []types.UID
	labels map[string]string
	// minimum is the sum of its groups' minReplicas in the first spec seen that asks for pods.
	minimum int
}

func trackGangs(t *testing.T, ns string) *gangTracker {
	t.Helper()
	g := &gangTracker{before: map[string]bool{}, made: map[string]*gangRecord{}, deleted: map[string]bool{}}
	list := &schedulerv1alpha1.PodGangList{}
	g.mu.Lock()
	g.f = follow(t, ns, list, g.observe)
	for _, pg := range list.Items {
		g.before[pg.Name] = true
	}
	g.mu.Unlock()
	return g
}

func (g *gangTracker) observe(ev watch.Event) {
	pg, ok := ev.Object.(*schedulerv1alpha1.PodGang)
	if !ok {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if ev.Type == watch.Deleted {
		g.deleted[pg.Name] = true
		return
	}
	if g.before[pg.Name] {
		return
	}
	r := g.made[pg.Name]
	if r == nil {
		r = &gangRecord{labels: pg.Labels}
		g.made[pg.Name] = r
		g.order = append(g.order, pg.Name)
	}
	if r.minimum == 0 { // the first spec that asks for pods
		for _, grp := range pg.Spec.PodGroups {
			r.minimum += int(grp.MinReplicas)
		}
	}
	if !slices.Contains(r.uids, pg.UID) {
		r.uids = append(r.uids, pg.UID)
	}
}

func (g *gangTracker) stop(t *testing.T) {
	t.Helper()
	g.f.stop(t)
}

// minimums maps every PodGang made while the tracker ran to its minimum.
func (g *gangTracker) minimums() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]int{}
	for name, r := range g.made {
		out[name] = r.minimum
	}
	return out
}

// duplicates lists the PodGangs made more than once (one name, several UIDs) and the epochs with
// more than one Anchor PodGang.
func (g *gangTracker) duplicates() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	anchors := map[string][]string{}
	for _, name := range g.order {
		r := g.made[name]
		if len(r.uids) > 1 {
			out = append(out, fmt.Sprintf("PodGang %s made %d times", name, len(r.uids)))
		}
		if r.labels[grovev1alpha1.LabelPodGangRole] == string(grovev1alpha1.PodGangRoleAnchor) {
			e := r.labels[grovev1alpha1.LabelEpoch]
			anchors[e] = append(anchors[e], name)
		}
	}
	for e, names := range anchors {
		if len(names) > 1 {
			out = append(out, fmt.Sprintf("epoch %s has %d Anchor PodGangs: %v", e, len(names), names))
		}
	}
	slices.Sort(out)
	return out
}

// made lists the PodGangs made while the tracker ran, in order, with their epoch and role labels.
func (g *gangTracker) describe() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var b strings.Builder
	for _, name := range g.order {
		r := g.made[name]
		fmt.Fprintf(&b, "  %s epoch=%s role=%s minimum=%d deleted=%t\n", name, r.labels[grovev1alpha1.LabelEpoch],
			r.labels[grovev1alpha1.LabelPodGangRole], r.minimum, g.deleted[name])
	}
	return b.String()
}

// statusTracker follows a PodCliqueSet's update status and keeps every distinct state of it, in
// order: the replica updated first in currentlyUpdating, its inFlightEpochs and message, and the
// inScope lists.
type statusTracker struct {
	mu     sync.Mutex
	name   string
	states []updateState
	f      *follower
}

// updateState is what a status write showed of a Coherent update.
type updateState struct {
	at         time.Time
	replica    int32 // -1: no replica being updated
	inFlight   []string
	message    string
	standalone []string
	groups     []string
	ended      bool
}

func (s updateState) String() string {
	return fmt.Sprintf("%s replica=%d inFlight=%v message=%q inScope=%v/%v ended=%t",
		s.at.Format("15:04:05.000"), s.replica, s.inFlight, s.message, s.standalone, s.groups, s.ended)
}

func stateOf(pcs *grovev1alpha1.PodCliqueSet) updateState {
	s := updateState{at: time.Now(), replica: -1}
	up := pcs.Status.UpdateProgress
	if up == nil {
		return s
	}
	s.standalone, s.groups, s.ended = up.InScopeStandalonePodCliques, up.InScopePodCliqueScalingGroups, up.UpdateEndedAt != nil
	if len(up.CurrentlyUpdating) > 0 {
		r := up.CurrentlyUpdating[0]
		s.replica, s.inFlight = r.ReplicaIndex, r.InFlightEpochs
		if r.Message != nil {
			s.message = *r.Message
		}
	}
	return s
}

func (s updateState) same(o updateState) bool {
	return s.replica == o.replica && slices.Equal(s.inFlight, o.inFlight) && s.message == o.message &&
		slices.Equal(s.standalone, o.standalone) && slices.Equal(s.groups, o.groups) && s.ended == o.ended
}

func trackStatus(t *testing.T, ns, name string) *statusTracker {
	t.Helper()
	st := &statusTracker{name: name}
	list := &grovev1alpha1.PodCliqueSetList{}
	st.mu.Lock()
	st.f = follow(t, ns, list, st.observe)
	for i := range list.Items {
		if list.Items[i].Name == name {
			st.states = append(st.states, stateOf(&list.Items[i]))
		}
	}
	st.mu.Unlock()
	return st
}

func (st *statusTracker) observe(ev watch.Event) {
	pcs, ok := ev.Object.(*grovev1alpha1.PodCliqueSet)
	if !ok || pcs.Name != st.name || ev.Type == watch.Deleted {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	s := stateOf(pcs)
	if n := len(st.states); n == 0 || !st.states[n-1].same(s) {
		st.states = append(st.states, s)
	}
}

func (st *statusTracker) stop(t *testing.T) {
	t.Helper()
	st.f.stop(t)
}

// snapshot returns the states seen so far.
func (st *statusTracker) snapshot() []updateState {
	st.mu.Lock()
	defer st.mu.Unlock()
	return slices.Clone(st.states)
}

// inFlightSteps lists, in order, the distinct non-empty inFlightEpochs the status showed, each
// with the replica it was of.
func (st *statusTracker) inFlightSteps() []updateState {
	var out []updateState
	for _, s := range st.snapshot() {
		if len(s.inFlight) == 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].replica == s.replica && slices.Equal(out[n-1].inFlight, s.inFlight) {
			continue
		}
		out = append(out, s)
	}
	return out
}

func (st *statusTracker) describe() string {
	var b strings.Builder
	for _, s := range st.snapshot() {
		b.WriteString("  " + s.String() + "\n")
	}
	return b.String()
}

// anchorsMade counts, by PodCliqueSet replica, the Anchor PodGangs made while the tracker ran: an
// update's steps each bring one up.
func (g *gangTracker) anchorsMade() map[string]int {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]int{}
	for _, r := range g.made {
		if r.labels[grovev1alpha1.LabelPodGangRole] == string(grovev1alpha1.PodGangRoleAnchor) {
			out[r.labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex]]++
		}
	}
	return out
}
