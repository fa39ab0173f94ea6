package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// The rollout family (issue 36 deliverable 7, issue 38 item 2): one template change rolled
// through the same disaggregated workload by a Coherent update, by RollingRecreate and by
// LeaderWorkerSet's rolling update (with a Deployment for the frontend), each with the same
// budget per component, timed from the change until every pod runs the new template and is
// Ready, with the lowest Ready capacity each component reached meanwhile.

const (
	// labelRolloutComponent names, on every pod of the workload, the component it belongs to.
	labelRolloutComponent = "bench.grove.io/component"
	// rolloutEnv is the environment variable the change adds to every container: its value is
	// the pod's revision ("" before the change).
	rolloutEnv = "BENCH_ROLLOUT"
	// lwsGroupIndex is the label LeaderWorkerSet puts on every pod of a group with its index.
	lwsGroupIndex = "leaderworkerset.sigs.k8s.io/group-index"
	// rolloutBudget is every component's maxUnavailable, in every contender.
	rolloutBudget = 1
)

// rolloutShape is the workload: a frontend of Frontend pods, and Prefill and Decode groups of a
// leader and Workers workers each.
type rolloutShape struct {
	Frontend, Prefill, Decode, Workers int
}

// rolloutComponent is one component of the workload: Units units (pods of the frontend, groups
// of prefill and decode) of UnitPods pods each, MaxUnavailable of which may be unavailable.
type rolloutComponent struct {
	Name                            string
	Units, UnitPods, MaxUnavailable int
}

// floor is the fewest available units the budget allows.
func (c rolloutComponent) floor() int { return c.Units - c.MaxUnavailable }

// components are the shape's components with at least one unit (a shape of groups only has no
// frontend and no decode).
func (s rolloutShape) components() []rolloutComponent {
	group := 1 + s.Workers
	all := []rolloutComponent{
		{Name: "frontend", Units: s.Frontend, UnitPods: 1, MaxUnavailable: rolloutBudget},
		{Name: "prefill", Units: s.Prefill, UnitPods: group, MaxUnavailable: rolloutBudget},
		{Name: "decode", Units: s.Decode, UnitPods: group, MaxUnavailable: rolloutBudget},
	}
	return slices.DeleteFunc(all, func(c rolloutComponent) bool { return c.Units == 0 })
}

// String names the shape in the report.
func (s rolloutShape) String() string {
	if s.Frontend == 0 && s.Decode == 0 {
		return fmt.Sprintf("%d groups × %d pods", s.Prefill, 1+s.Workers)
	}
	return fmt.Sprintf("frontend %d, prefill %d×%d, decode %d×%d", s.Frontend, s.Prefill, 1+s.Workers, s.Decode, 1+s.Workers)
}

func (s rolloutShape) pods() int {
	n := 0
	for _, c := range s.components() {
		n += c.Units * c.UnitPods
	}
	return n
}

// podState is what the rollout probe keeps of a pod.
type podState struct {
	component string
	// group is the pod's group within its component ("" for the frontend).
	group string
	// ready: the pod is Ready and not being deleted (a terminating pod serves no more).
	ready    bool
	revision string
}

func podStateOf(p *corev1.Pod) podState {
	s := podState{component: p.Labels[labelRolloutComponent], ready: p.DeletionTimestamp == nil}
	for _, key := range []string{grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex, lwsGroupIndex} {
		if g, ok := p.Labels[key]; ok {
			s.group = g
			break
		}
	}
	ready := false
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	s.ready = s.ready && ready
	if len(p.Spec.Containers) > 0 {
		for _, e := range p.Spec.Containers[0].Env {
			if e.Name == rolloutEnv {
				s.revision = e.Value
			}
		}
	}
	return s
}

// readyCapacity is one component's Ready pods and available units.
type readyCapacity struct {
	Pods  int `json:"readyPods"`
	Units int `json:"availableUnits"`
}

// capacity counts, per component, the Ready pods and the available units: a Ready pod of a
// component of single-pod units; a group of a component of groups with all its pods Ready at one
// revision (a new leader beside its old workers, about to be replaced, is no serving group).
func capacity(pods []podState, comps []rolloutComponent) map[string]readyCapacity {
	out := map[string]readyCapacity{}
	unitPods := map[string]int{}
	for _, c := range comps {
		out[c.Name] = readyCapacity{}
		unitPods[c.Name] = c.UnitPods
	}
	type groupRevision struct{ component, group, revision string }
	ready := map[groupRevision]int{}
	for _, p := range pods {
		size, ok := unitPods[p.component]
		if !ok || !p.ready {
			continue
		}
		c := out[p.component]
		c.Pods++
		if size <= 1 {
			c.Units++
		} else {
			ready[groupRevision{p.component, p.group, p.revision}]++
		}
		out[p.component] = c
	}
	for key, n := range ready {
		if n >= unitPods[key.component] {
			c := out[key.component]
			c.Units++
			out[key.component] = c
		}
	}
	return out
}

// rolledOut reports whether the pods are want pods, each Ready at revision, and nothing else.
func rolledOut(pods []podState, want int, revision string) bool {
	if len(pods) != want {
		return false
	}
	for _, p := range pods {
		if !p.ready || p.revision != revision {
			return false
		}
	}
	return true
}

// lowestOf is the lower of two sets of capacities, component by component (a component missing
// from one counts as the other's).
func lowestOf(a, b map[string]readyCapacity) map[string]readyCapacity {
	out := map[string]readyCapacity{}
	for name, c := range a {
		out[name] = c
	}
	for name, c := range b {
		if o, ok := out[name]; ok {
			c = readyCapacity{Pods: min(o.Pods, c.Pods), Units: min(o.Units, c.Units)}
		}
		out[name] = c
	}
	return out
}

// belowBudget counts the components whose lowest available units fell under their floor.
func belowBudget(lowest map[string]readyCapacity, comps []rolloutComponent) int {
	n := 0
	for _, c := range comps {
		if lowest[c.Name].Units < c.floor() {
			n++
		}
	}
	return n
}

// rolloutProbe follows the pods of one namespace from an informer of its own, and once armed
// evaluates every component's capacity at each pod event: every state the watch delivers, not a
// sample.
type rolloutProbe struct {
	mu       sync.Mutex
	comps    []rolloutComponent
	want     int
	pods     map[types.UID]podState
	revision string
	armed    bool
	lowest   map[string]readyCapacity
	events   int
	doneAt   time.Time
	stop     context.CancelFunc
}

func startRolloutProbe(ctx context.Context, cs kubernetes.Interface, ns string, comps []rolloutComponent, want int) (*rolloutProbe, error) {
	ctx, cancel := context.WithCancel(ctx)
	p := &rolloutProbe{comps: comps, want: want, pods: map[types.UID]podState{}, stop: cancel}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.observe(obj, false) },
		UpdateFunc: func(_, obj any) { p.observe(obj, false) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			p.observe(obj, true)
		},
	}); err != nil {
		cancel()
		return nil, err
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		return nil, fmt.Errorf("%s: pod informer did not sync", ns)
	}
	return p, nil
}

func (p *rolloutProbe) observe(obj any, deleted bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if deleted {
		delete(p.pods, pod.UID)
	} else {
		p.pods[pod.UID] = podStateOf(pod)
	}
	if !p.armed || !p.doneAt.IsZero() {
		return
	}
	p.events++
	p.lower()
	if rolledOut(p.list(), p.want, p.revision) {
		p.doneAt = now
	}
}

func (p *rolloutProbe) list() []podState {
	out := make([]podState, 0, len(p.pods))
	for _, s := range p.pods {
		out = append(out, s)
	}
	return out
}

// lower takes the capacity now into the lowest seen.
func (p *rolloutProbe) lower() { p.lowest = lowestOf(p.lowest, capacity(p.list(), p.comps)) }

// arm starts the lowest capacities from now, and the wait for every pod at revision (a round of
// the update).
func (p *rolloutProbe) arm(revision string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.revision, p.lowest, p.events, p.doneAt = true, revision, map[string]readyCapacity{}, 0, time.Time{}
	p.lower()
}

// waitRolledOut waits until every pod is Ready at revision (the probe's revision once armed, ""
// before) and returns when the probe saw it.
func (p *rolloutProbe) waitRolledOut(ctx context.Context, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		p.mu.Lock()
		done, at := rolledOut(p.list(), p.want, p.revision), p.doneAt
		n, ready, current := len(p.pods), 0, 0
		for _, s := range p.pods {
			if s.ready {
				ready++
			}
			if s.revision == p.revision {
				current++
			}
		}
		p.mu.Unlock()
		if done {
			if at.IsZero() {
				at = time.Now()
			}
			return at, nil
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("after %s: %d pods (want %d), %d Ready, %d at revision %q", timeout, n, p.want, ready, current, p.revision)
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// whole checks that every unit of every component is available: at rest before the change, it
// proves the probe tells the groups apart (their pods carry a group label).
func (p *rolloutProbe) whole() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	got := capacity(p.list(), p.comps)
	for _, c := range p.comps {
		if got[c.Name].Units != c.Units {
			return fmt.Errorf("at rest, %s has %d of %d units available (%d Ready pods): are its groups labelled?", c.Name, got[c.Name].Units, c.Units, got[c.Name].Pods)
		}
	}
	return nil
}

func (p *rolloutProbe) result() (map[string]readyCapacity, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lowest, p.events
}

// rolloutContender is one way to run the workload and roll the change through it.
type rolloutContender struct {
	name string
	// peer marks LeaderWorkerSet's contender: its figures are reported, not held to the targets
	// (the project cannot change how LeaderWorkerSet keeps its budget).
	peer bool
	// objs are the workload's objects, applied at once.
	objs func(ns string, s rolloutShape) []client.Object
	// change sets the rolloutEnv of every container of every component to revision, one write
	// per object.
	change func(ctx context.Context, c client.Client, ns, revision string, s rolloutShape) error
}

// rolloutPCS is the workload as one PodCliqueSet under strategy: every component's budget
// maxUnavailable rolloutBudget, each group replica available once its every pod is Ready
// (member cliques' minAvailable is their size).
func rolloutPCS(ns string, s rolloutShape, strategy grovev1alpha1.UpdateStrategyType) *grovev1alpha1.PodCliqueSet {
	budget := func() *grovev1alpha1.RollingUpdateConfiguration {
		return &grovev1alpha1.RollingUpdateConfiguration{MaxUnavailable: ptr.To[int32](rolloutBudget)}
	}
	member := func(name, component string, pods int) *grovev1alpha1.PodCliqueTemplateSpec {
		c := longClique(name, pods)
		c.Labels[labelRolloutComponent] = component
		c.Spec.MinAvailable = ptr.To(int32(pods))
		return c
	}
	p := pcs(ns, "disagg")
	p.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: strategy}
	if s.Frontend > 0 {
		frontend := member("frontend", "frontend", s.Frontend)
		frontend.Spec.MinAvailable = ptr.To[int32](1)
		frontend.RollingUpdate = budget()
		p.Spec.Template.Cliques = append(p.Spec.Template.Cliques, frontend)
	}
	for _, g := range []struct {
		name, leader, worker string
		replicas             int
	}{{"prefill", "pleader", "pworker", s.Prefill}, {"decode", "dleader", "dworker", s.Decode}} {
		if g.replicas == 0 {
			continue
		}
		p.Spec.Template.Cliques = append(p.Spec.Template.Cliques, member(g.leader, g.name, 1), member(g.worker, g.name, s.Workers))
		p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs, grovev1alpha1.PodCliqueScalingGroupConfig{
			Name: g.name, CliqueNames: []string{g.leader, g.worker}, Replicas: ptr.To(int32(g.replicas)), MinAvailable: ptr.To[int32](1), RollingUpdate: budget()})
	}
	return p
}

// setEnv sets name=value in every container of spec.
func setEnv(spec *corev1.PodSpec, name, value string) {
	for i := range spec.Containers {
		ct := &spec.Containers[i]
		ct.Env = slices.DeleteFunc(ct.Env, func(e corev1.EnvVar) bool { return e.Name == name })
		ct.Env = append(ct.Env, corev1.EnvVar{Name: name, Value: value})
	}
}

// changePCS changes every clique's template of the PodCliqueSet in one update.
func changePCS(ctx context.Context, c client.Client, ns, revision string, _ rolloutShape) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &grovev1alpha1.PodCliqueSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "disagg"}, p); err != nil {
			return err
		}
		for _, cl := range p.Spec.Template.Cliques {
			setEnv(&cl.Spec.PodSpec, rolloutEnv, revision)
		}
		return c.Update(ctx, p)
	})
}

// rolloutLWS is a LeaderWorkerSet of groups groups of size pods of component, rolled one group
// at a time (maxUnavailable rolloutBudget, no surge).
func rolloutLWS(ns, component string, groups, size int) *unstructured.Unstructured {
	u := lws(ns, component, groups, size)
	_ = unstructured.SetNestedField(u.Object, component, "spec", "leaderWorkerTemplate", "workerTemplate", "metadata", "labels", labelRolloutComponent)
	_ = unstructured.SetNestedMap(u.Object, map[string]any{
		"type": "RollingUpdate",
		"rollingUpdateConfiguration": map[string]any{
			"maxUnavailable": int64(rolloutBudget), "maxSurge": int64(0),
		},
	}, "spec", "rolloutStrategy")
	return u
}

// rolloutDeployment is the frontend as a Deployment of pods pods, rolled one pod at a time.
func rolloutDeployment(ns string, pods int) *appsv1.Deployment {
	labels := map[string]string{labelRolloutComponent: "frontend"}
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelRolloutComponent: "frontend"}}, Spec: podSpec("frontend")}
	longRunning(&template.ObjectMeta)
	budget := intstr.FromInt32(rolloutBudget)
	none := intstr.FromInt32(0)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "frontend"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(pods)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: template,
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxUnavailable: &budget, MaxSurge: &none}},
		},
	}
}

// changeLWSContender changes the Deployment's and the LeaderWorkerSets' templates, one update
// each, all at once.
func changeLWSContender(ctx context.Context, c client.Client, ns, revision string, s rolloutShape) error {
	var writes []func() error
	if s.Frontend > 0 {
		writes = append(writes, func() error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				d := &appsv1.Deployment{}
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "frontend"}, d); err != nil {
					return err
				}
				setEnv(&d.Spec.Template.Spec, rolloutEnv, revision)
				return c.Update(ctx, d)
			})
		})
	}
	for _, comp := range s.components() {
		if comp.Name == "frontend" {
			continue
		}
		name := comp.Name
		writes = append(writes, func() error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				u := &unstructured.Unstructured{}
				u.SetAPIVersion("leaderworkerset.x-k8s.io/v1")
				u.SetKind("LeaderWorkerSet")
				if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
					return err
				}
				containers, _, err := unstructured.NestedSlice(u.Object, "spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers")
				if err != nil {
					return err
				}
				for i := range containers {
					ct, _ := containers[i].(map[string]any)
					env, _ := ct["env"].([]any)
					env = slices.DeleteFunc(env, func(e any) bool { m, _ := e.(map[string]any); return m["name"] == rolloutEnv })
					ct["env"] = append(env, map[string]any{"name": rolloutEnv, "value": revision})
				}
				if err := unstructured.SetNestedSlice(u.Object, containers, "spec", "leaderWorkerTemplate", "workerTemplate", "spec", "containers"); err != nil {
					return err
				}
				return c.Update(ctx, u)
			})
		})
	}
	return parallel(len(writes), len(writes), func(i int) error { return writes[i]() })
}

func (b *bench) rolloutContenders() []rolloutContender {
	ours := func(strategy grovev1alpha1.UpdateStrategyType) rolloutContender {
		return rolloutContender{name: string(strategy), change: changePCS, objs: func(ns string, s rolloutShape) []client.Object {
			return []client.Object{rolloutPCS(ns, s, strategy)}
		}}
	}
	return []rolloutContender{
		ours(grovev1alpha1.RollingRecreateStrategy),
		ours(grovev1alpha1.CoherentStrategy),
		{name: lwsRolloutName, peer: true, change: changeLWSContender, objs: func(ns string, s rolloutShape) []client.Object {
			var out []client.Object
			for _, comp := range s.components() {
				if comp.Name == "frontend" {
					out = append(out, rolloutDeployment(ns, comp.Units))
				} else {
					out = append(out, rolloutLWS(ns, comp.Name, comp.Units, comp.UnitPods))
				}
			}
			return out
		}},
	}
}

const lwsRolloutName = "LeaderWorkerSet + Deployment"

// Rollout is one contender's rolling updates of the workload.
type Rollout struct {
	// Shape names the workload.
	Shape     string `json:"shape"`
	Contender string `json:"contender"`
	Pods      int    `json:"pods"`
	// Peer marks LeaderWorkerSet's contender: reported, not held to the targets.
	Peer bool `json:"peer,omitempty"`
	// Seconds is the median round's.
	Seconds float64 `json:"seconds"`
	// Ratio is Seconds to RollingRecreate's, PeerRatio to LeaderWorkerSet's.
	Ratio     float64 `json:"ratioToRollingRecreate"`
	PeerRatio float64 `json:"ratioToPeer,omitempty"`
	// WritesPerPod are every controller's writes in the namespace (the bench's own excluded)
	// from each change until its rollout ended, summed over rounds, per pod and round.
	WritesPerPod float64      `json:"writesPerPod"`
	WritesBy     []writeCount `json:"writesBy,omitempty"`
	// Components are the lowest capacities of all rounds.
	Components []RolloutComponent `json:"components"`
	// BelowBudget counts the components whose available units fell under their floor in some
	// round.
	BelowBudget int            `json:"componentsBelowBudget"`
	Rounds      []RolloutRound `json:"rounds"`
	// Steps is where the last round's steps spent their time (from the audit log).
	Steps *StepPhases `json:"steps,omitempty"`
}

// RolloutRound is one template change rolled through the workload: from the change's first write
// until every pod runs the new template and is Ready, and no pod of the old one is left.
type RolloutRound struct {
	Seconds float64 `json:"seconds"`
	// Lowest is each component's lowest capacity during the round.
	Lowest map[string]readyCapacity `json:"lowest"`
	// Events is how many pod events the probe evaluated.
	Events int `json:"podEvents"`
}

// RolloutComponent is one component's lowest Ready capacity during an update, against its
// budget's floor (units − maxUnavailable).
type RolloutComponent struct {
	Name            string `json:"name"`
	Units           int    `json:"units"`
	PodsPerUnit     int    `json:"podsPerUnit"`
	MaxUnavailable  int    `json:"maxUnavailable"`
	Floor           int    `json:"floorUnits"`
	LowestReadyPods int    `json:"lowestReadyPods"`
	LowestAvailable int    `json:"lowestAvailableUnits"`
}

// rollout runs every contender's update of each workload shape and checks the budgets, Coherent's
// time against RollingRecreate's and, on the groups shape (issue 38), each of this project's times
// and writes against LeaderWorkerSet's. Every contender's workload of a shape is made first; then
// the rounds take turns, each round in an order rotated by one (RollingRecreate, Coherent,
// LeaderWorkerSet; then Coherent, LeaderWorkerSet, RollingRecreate; …), so a machine that slows
// down or speeds up over the minutes of a shape weighs on every contender alike.
func (b *bench) rollout(ctx context.Context) error {
	if err := b.ensureLWS(ctx); err != nil {
		return err
	}
	observer, err := kubernetes.NewForConfig(b.c.RESTConfig())
	if err != nil {
		return err
	}
	shapes := []struct {
		key    string
		shape  rolloutShape
		rounds int
		// againstPeer holds this project's contenders to the peer's time and writes (the groups
		// shape, issue 38); otherwise Coherent is held to RollingRecreate's time (issue 36).
		againstPeer bool
	}{
		{"disagg", b.sz.Rollout, max(b.sz.RolloutRounds, 1), false},
		{"groups", b.sz.RolloutGroups, max(b.sz.RolloutGroupRounds, 1), true},
	}
	var namespaces []string
	for _, sh := range shapes {
		if sh.shape.pods() == 0 {
			continue
		}
		runs, err := b.rolloutShapeRuns(ctx, observer, sh.key, sh.shape, sh.rounds)
		if err != nil {
			return err
		}
		for _, r := range runs {
			namespaces = append(namespaces, r.namespace)
			b.r.Rollouts = append(b.r.Rollouts, r.run)
		}
		b.rolloutTargets(b.r.Rollouts[len(b.r.Rollouts)-len(runs):], sh.againstPeer)
	}
	if b.sz.OverlapDeletions {
		for _, ns := range namespaces {
			if err := b.namespaceGone(ctx, ns); err != nil {
				return err
			}
		}
	}
	return nil
}

// rolloutShapeRuns makes every contender's workload of one shape, runs their rounds in turns and
// deletes the namespaces (waiting for each unless deletions overlap).
func (b *bench) rolloutShapeRuns(ctx context.Context, cs kubernetes.Interface, key string, s rolloutShape, rounds int) (_ []*rolloutTrial, err error) {
	var trials []*rolloutTrial
	defer func() {
		for _, t := range trials {
			t.probe.stop()
		}
	}()
	for i, c := range b.rolloutContenders() {
		ns := fmt.Sprintf("rollout-%s-%d", key, i)
		fmt.Printf("rollout: %s: %s: starting (%d pods, %d rounds)\n", s, c.name, s.pods(), rounds)
		t, err := b.startRolloutTrial(ctx, cs, ns, c, s)
		if err != nil {
			return nil, fmt.Errorf("rollout %s, %s: %w", s, c.name, err)
		}
		trials = append(trials, t)
	}
	for round := 1; round <= rounds; round++ {
		for _, k := range turnOrder(len(trials), round) {
			t := trials[k]
			if err := b.rolloutRound(ctx, t, round, rounds); err != nil {
				return nil, fmt.Errorf("rollout %s, %s: round %d: %w", s, t.run.Contender, round, err)
			}
		}
	}
	for _, t := range trials {
		t.finish()
		fmt.Printf("rollout: %s: %s: done (median round %.1fs; %d component(s) below budget; %.2f writes per pod)\n",
			s, t.run.Contender, t.run.Seconds, t.run.BelowBudget, t.run.WritesPerPod)
		if err := b.k8s().Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.namespace}}); err != nil {
			return nil, err
		}
		if !b.sz.OverlapDeletions {
			if err := b.namespaceGone(ctx, t.namespace); err != nil {
				return nil, err
			}
		}
	}
	return trials, nil
}

// rolloutTargets fills in one shape's ratios and records its targets.
func (b *bench) rolloutTargets(runs []Rollout, againstPeer bool) {
	var rr, coherent float64
	peer := Rollout{Seconds: math.Inf(1), WritesPerPod: math.Inf(1)}
	for _, r := range runs {
		switch {
		case r.Peer:
			peer.Seconds, peer.WritesPerPod = min(peer.Seconds, r.Seconds), min(peer.WritesPerPod, r.WritesPerPod)
		case r.Contender == string(grovev1alpha1.RollingRecreateStrategy):
			rr = r.Seconds
		case r.Contender == string(grovev1alpha1.CoherentStrategy):
			coherent = r.Seconds
		}
	}
	for i := range runs {
		r := &runs[i]
		if rr > 0 {
			r.Ratio = r.Seconds / rr
		}
		if !math.IsInf(peer.Seconds, 1) && peer.Seconds > 0 {
			r.PeerRatio = r.Seconds / peer.Seconds
		}
		if r.Peer {
			continue
		}
		prefix := fmt.Sprintf("rollout %s %s", r.Shape, r.Contender)
		b.r.target(prefix+": components below budget = 0", float64(r.BelowBudget), 0)
		if againstPeer && math.IsInf(peer.Seconds, 1) {
			b.r.record(Target{Name: prefix + ": LeaderWorkerSet's rollout measured"})
		} else if againstPeer {
			b.r.target(prefix+": time ≤ 1.0× LeaderWorkerSet's", r.PeerRatio, 1.0)
			b.r.target(prefix+": writes per pod ≤ LeaderWorkerSet's", r.WritesPerPod, peer.WritesPerPod)
		}
	}
	if !againstPeer && rr > 0 && coherent > 0 {
		b.r.target(fmt.Sprintf("rollout %s Coherent time ≤ 1.3× RollingRecreate's (median round)", runs[0].Shape), coherent/rr, 1.3)
	}
}

// turnOrder is the order in which n contenders take their turn in a round (from 1): each round
// starts one contender later than the round before.
func turnOrder(n, round int) []int {
	out := make([]int, n)
	for k := range out {
		out[k] = (k + round - 1) % n
	}
	return out
}

// rolloutTrial is one contender's workload of a shape while its rounds run.
type rolloutTrial struct {
	namespace string
	shape     rolloutShape
	change    func(ctx context.Context, c client.Client, ns, revision string, s rolloutShape) error
	probe     *rolloutProbe
	run       Rollout
	lowest    map[string]readyCapacity
	writes    map[writeCount]int
}

// startRolloutTrial applies one contender's workload in a new namespace and waits until every pod
// is Ready.
func (b *bench) startRolloutTrial(ctx context.Context, cs kubernetes.Interface, ns string, c rolloutContender, s rolloutShape) (_ *rolloutTrial, err error) {
	done := b.progress.start(fmt.Sprintf("  rollout: %s: %s made (%d pods)", s, c.name, s.pods()))
	defer func() { done(err) }()
	if _, err := b.namespace(ctx, ns); err != nil {
		return nil, err
	}
	probe, err := startRolloutProbe(ctx, cs, ns, s.components(), s.pods())
	if err != nil {
		return nil, err
	}
	t := &rolloutTrial{namespace: ns, shape: s, change: c.change, probe: probe, lowest: map[string]readyCapacity{}, writes: map[writeCount]int{},
		run: Rollout{Shape: s.String(), Contender: c.name, Pods: s.pods(), Peer: c.peer}}
	list := c.objs(ns, s)
	if err := parallel(len(list), applyParallelism, func(i int) error { return b.k8s().Create(ctx, list[i]) }); err != nil {
		probe.stop()
		return nil, err
	}
	if _, err := probe.waitRolledOut(ctx, 10*time.Minute); err != nil {
		probe.stop()
		return nil, fmt.Errorf("every pod Ready before the change: %w", err)
	}
	// The controllers' last status writes of the creation (a round ends with its own).
	time.Sleep(3 * time.Second)
	return t, nil
}

// rolloutRound changes every component's template of a trial's workload and follows the update
// to its end.
func (b *bench) rolloutRound(ctx context.Context, t *rolloutTrial, round, rounds int) (err error) {
	done := b.progress.start(fmt.Sprintf("  rollout: %s: %s round %d of %d", t.shape, t.run.Contender, round, rounds))
	defer func() { done(err) }()
	if err := t.probe.whole(); err != nil {
		return err
	}
	revision := strconv.FormatInt(time.Now().UnixNano(), 10)
	t.probe.arm(revision)
	begin := time.Now()
	if err := t.change(ctx, b.k8s(), t.namespace, revision, t.shape); err != nil {
		return fmt.Errorf("changing the templates: %w", err)
	}
	finished, err := t.probe.waitRolledOut(ctx, 15*time.Minute)
	if err != nil {
		return fmt.Errorf("every pod Ready at the new template: %w", err)
	}
	// The writes that finish the round land in its window (the controllers' last status
	// writes); the next round starts after it.
	time.Sleep(3 * time.Second)
	written, err := eventsBetween(b.c, t.namespace, begin, time.Now())
	if err != nil {
		return err
	}
	by, _ := writeCounts(written)
	steps := stepPhases(written)
	t.run.Steps = &steps
	for _, wc := range by {
		n := wc.Count
		wc.Count = 0
		t.writes[wc] += n
	}
	low, events := t.probe.result()
	t.lowest = lowestOf(t.lowest, low)
	r := RolloutRound{Seconds: finished.Sub(begin).Seconds(), Lowest: low, Events: events}
	t.run.Rounds = append(t.run.Rounds, r)
	fmt.Printf("rollout: %s: round %d of %d: every pod new and Ready %.1fs after the change; lowest available: %s\n",
		t.run.Contender, round, rounds, r.Seconds, lowestSummary(low, t.shape.components()))
	return nil
}

// finish takes a trial's time (the median round's), lowest capacities (the lowest of all rounds)
// and writes per pod.
func (t *rolloutTrial) finish() {
	var times []float64
	for _, r := range t.run.Rounds {
		times = append(times, r.Seconds)
	}
	comps := t.shape.components()
	t.run.Seconds, t.run.BelowBudget = median(times), belowBudget(t.lowest, comps)
	var total int
	t.run.WritesBy, total = counts(t.writes)
	t.run.WritesPerPod = float64(total) / float64(t.shape.pods()*len(t.run.Rounds))
	for _, comp := range comps {
		t.run.Components = append(t.run.Components, RolloutComponent{Name: comp.Name, Units: comp.Units, PodsPerUnit: comp.UnitPods,
			MaxUnavailable: comp.MaxUnavailable, Floor: comp.floor(), LowestReadyPods: t.lowest[comp.Name].Pods, LowestAvailable: t.lowest[comp.Name].Units})
	}
}

// ensureLWS starts LeaderWorkerSet's controller unless it runs already (the peers start it).
func (b *bench) ensureLWS(ctx context.Context) error {
	if b.procs[cluster.LWSUser] != nil {
		return nil
	}
	p, err := b.c.StartLWS(ctx, qps, burst)
	if err != nil {
		return err
	}
	b.procs[cluster.LWSUser] = p
	return nil
}

// lowestSummary is the lowest capacities, per component, against the floors.
func lowestSummary(lowest map[string]readyCapacity, comps []rolloutComponent) string {
	var parts []string
	for _, c := range comps {
		mark := ""
		if lowest[c.Name].Units < c.floor() {
			mark = " BELOW"
		}
		parts = append(parts, fmt.Sprintf("%s %d/%d (floor %d%s; %d pods Ready)", c.Name, lowest[c.Name].Units, c.Units, c.floor(), mark, lowest[c.Name].Pods))
	}
	return strings.Join(parts, ", ")
}
