package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
)

// Invariant names, as the figures table lists them.
const (
	invPodIndexUnique     = "pod-index-unique"
	invTrainingBounded    = "training-restarts-bounded-and-sticky"
	invTrainingOutcome    = "training-outcome-as-fault-free"
	invReference          = "fault-free-reference-as-computed"
	invTrainJobOutcome    = "trainjob-outcome"
	invTrainJobSticky     = "trainjob-finish-sticky"
	invNoChildAfterFinish = "no-child-created-after-finish"
	invTTLFires           = "ttl-fires"
	invNoOrphans          = "no-orphans-after-delete"
	invLeaderTakeover     = "leader-takeover-within-lease"
	invOneActingLeader    = "one-acting-replica-per-binary"
	invFailsClosed        = "admission-fails-closed"
	invStoredIntact       = "stored-specs-intact"
	invConverged          = "converged-after-faults"
	invQuiet              = "bounded-writes-at-rest"
	invQuietObject        = "bounded-writes-per-object-at-rest"
	invNoPanic            = "no-panic"
	invRoundCompletes     = "round-completes"
)

// maxWritesPerMinuteAtRest bounds each binary's writes (lease renewals excluded) once faults
// stopped and the workload settled; the design's aim is zero.
const maxWritesPerMinuteAtRest = 5.0

// maxWritesPerObjectPerMinuteAtRest bounds the writes to any one object once the workload has
// settled: "a few times a minute" at most, even for a step that keeps failing.
const maxWritesPerObjectPerMinuteAtRest = 3.0

// finish is how a TrainJob finished, as its informer saw it.
type finish struct {
	uid       types.UID
	condition string
	reason    string
	at        time.Time
}

// run is the state one chaos run shares between the workload, the faults and the checks.
type run struct {
	ctx    context.Context
	c      *cluster.Cluster
	k      client.Client
	l      *ledger
	audit  *auditFollower
	mu     sync.Mutex
	ended  map[string]finish // "<ns>/<name>" of TrainJobs that finished
	gone   map[string]bool   // keys ("<kind>/<ns>/<name>") of objects the test deleted
	last   map[types.UID]grovev1alpha1.PodCliqueSetStatus
	scaled int32 // replicas of scaledGroup the workload last asked for
	// revision is the template revision the Coherent workload was last changed to (0: never).
	revision int
	// specWrites is held for writing while the test changes a stored spec itself, and for reading
	// while a fault compares stored specs before and after it: a change the test made is no loss.
	specWrites sync.RWMutex
	// recoveries are background fault recoveries (re-adding a node, making a pod ready again).
	recoveries sync.WaitGroup
	// reference is how the fault-free round ended; every later round must end the same.
	reference roundResult
	// takeovers are the measured leader takeovers, by controller.
	takeovers map[string][]time.Duration
}

func newRun(ctx context.Context, c *cluster.Cluster, l *ledger) *run {
	return &run{
		ctx: ctx, c: c, k: c.Client(), l: l, audit: newAuditFollower(c.AuditLogPath()),
		ended: map[string]finish{}, gone: map[string]bool{}, last: map[types.UID]grovev1alpha1.PodCliqueSetStatus{},
		scaled: 2,
	}
}

// watch follows TrainJobs and pods with informers, which see every change in the API server's
// order: it records each TrainJob's finish (a finish followed at once by a TTL deletion is never
// missed) and checks that it never changes afterwards, and it checks at every pod event that no
// other live pod of the PodClique holds the same index — catching a duplicate the poll would see
// only if it lasted.
func (r *run) watch() error {
	ic, err := cache.New(r.c.RESTConfig(), cache.Options{Scheme: apiserver.Scheme()})
	if err != nil {
		return err
	}
	if err := r.watchPods(ic); err != nil {
		return err
	}
	inf, err := ic.GetInformer(r.ctx, &trainerv1alpha1.TrainJob{})
	if err != nil {
		return err
	}
	observe := func(obj any) {
		tj, ok := obj.(*trainerv1alpha1.TrainJob)
		if !ok {
			return
		}
		got := finishOf(tj)
		key := tj.Namespace + "/" + tj.Name
		r.mu.Lock()
		prev, seen := r.ended[key]
		if got != nil && !seen {
			r.ended[key] = finish{uid: tj.UID, condition: got.Type, reason: got.Reason, at: got.LastTransitionTime.Time}
		}
		r.mu.Unlock()
		if seen && prev.uid == tj.UID {
			r.l.check(invTrainJobSticky, got != nil && got.Type == prev.condition && got.Reason == prev.reason,
				"%s finished %s/%s, now shows %+v", key, prev.condition, prev.reason, got)
		}
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return err
	}
	go func() { _ = ic.Start(r.ctx) }()
	if !ic.WaitForCacheSync(r.ctx) {
		return fmt.Errorf("the TrainJob informer did not sync")
	}
	return nil
}

// watchPods checks pod indices at every pod event against the informer's store. The store may be
// ahead of the event being handled, but it always holds the API server's state at some moment,
// so two live pods of one index in it are a real duplicate; an event whose pod the store already
// shows deleted or replaced is skipped.
func (r *run) watchPods(ic cache.Cache) error {
	inf, err := ic.GetInformer(r.ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	observe := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		clq := ""
		if ok {
			clq = pod.Labels[grovev1alpha1.LabelPodClique]
		}
		if clq == "" || pod.DeletionTimestamp != nil {
			return
		}
		current := &corev1.Pod{}
		if err := ic.Get(r.ctx, client.ObjectKeyFromObject(pod), current); err != nil || current.UID != pod.UID || current.DeletionTimestamp != nil {
			return
		}
		idx := pod.Labels[grovev1alpha1.LabelPodIndex]
		same := &corev1.PodList{}
		if err := ic.List(r.ctx, same, client.InNamespace(pod.Namespace), client.MatchingLabels{grovev1alpha1.LabelPodClique: clq, grovev1alpha1.LabelPodIndex: idx}); err != nil {
			return
		}
		var others []string
		for _, o := range same.Items {
			if o.UID != pod.UID && o.DeletionTimestamp == nil {
				others = append(others, o.Name)
			}
		}
		r.l.check(invPodIndexUnique, len(others) == 0, "%s/%s index %s held by %s and %v", pod.Namespace, clq, idx, pod.Name, others)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	})
	return err
}

// finishOf returns a TrainJob's Complete or Failed condition when it is True.
func finishOf(tj *trainerv1alpha1.TrainJob) *metav1.Condition {
	for _, typ := range []string{trainerv1alpha1.TrainJobComplete, trainerv1alpha1.TrainJobFailed} {
		if c := meta.FindStatusCondition(tj.Status.Conditions, typ); c != nil && c.Status == metav1.ConditionTrue {
			return c
		}
	}
	return nil
}

// recordFinish notes a finish the test read from the object itself (the informer may have missed
// it across an API server restart).
func (r *run) recordFinish(ns, name string, f finish) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.ended[ns+"/"+name]; !seen {
		r.ended[ns+"/"+name] = f
	}
}

func (r *run) finished(ns, name string) (finish, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f, ok := r.ended[ns+"/"+name]
	return f, ok
}

// deleteByTest deletes an object and remembers that the test, not a fault, removed it.
func (r *run) deleteByTest(obj client.Object) {
	kind := fmt.Sprintf("%T", obj)
	r.mu.Lock()
	r.gone[kind+"/"+obj.GetNamespace()+"/"+obj.GetName()] = true
	r.mu.Unlock()
	r.retry("deleting "+obj.GetName(), func() error {
		return client.IgnoreNotFound(r.k.Delete(r.ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	})
}

// waitFor calls cond at once, then every interval, until it holds, timeout passes or the run
// ends, and reports whether it held: the tier's one polling idiom. A miss is a violation the
// caller records with what it last saw, not a test failure.
func (r *run) waitFor(interval, timeout time.Duration, cond func() bool) bool {
	return wait.PollUntilContextTimeout(r.ctx, interval, timeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	}) == nil
}

// retry runs op until it succeeds (faults make the API server or admission briefly unavailable);
// one that still fails after three minutes is a violation.
func (r *run) retry(what string, op func() error) {
	var err error
	if !r.waitFor(time.Second, 3*time.Minute, func() bool { err = op(); return err == nil }) {
		r.l.violate(invRoundCompletes, "%s: %v", what, err)
	}
}

// poll checks the continuous invariants once: no two live pods of a PodClique share an index,
// and every Training PodCliqueSet's restart count stays within its budget, never goes down and a
// terminal phase never changes.
func (r *run) poll() {
	pods := &corev1.PodList{}
	if err := r.k.List(r.ctx, pods); err != nil {
		return // the API server is restarting
	}
	byClique := map[string]map[string]string{}
	for _, p := range pods.Items {
		clq := p.Labels[grovev1alpha1.LabelPodClique]
		if clq == "" || p.DeletionTimestamp != nil {
			continue
		}
		key := p.Namespace + "/" + clq
		if byClique[key] == nil {
			byClique[key] = map[string]string{}
		}
		idx := p.Labels[grovev1alpha1.LabelPodIndex]
		if other, dup := byClique[key][idx]; dup {
			r.l.violate(invPodIndexUnique, "%s index %s held by %s and %s", key, idx, other, p.Name)
		}
		byClique[key][idx] = p.Name
	}
	for key := range byClique {
		r.l.check(invPodIndexUnique, true, "%s", key)
	}

	sets := &grovev1alpha1.PodCliqueSetList{}
	if err := r.k.List(r.ctx, sets); err != nil {
		return
	}
	for _, pcs := range sets.Items {
		if pcs.Spec.WorkloadType != grovev1alpha1.WorkloadTypeTraining {
			continue
		}
		max := int32(0)
		if pcs.Spec.TrainingSpec != nil && pcs.Spec.TrainingSpec.MaxRestarts != nil {
			max = *pcs.Spec.TrainingSpec.MaxRestarts
		}
		now := pcs.Status
		r.mu.Lock()
		prev, seen := r.last[pcs.UID]
		r.last[pcs.UID] = *now.DeepCopy()
		r.mu.Unlock()
		ok := now.RestartCount <= max
		why := fmt.Sprintf("restartCount %d > maxRestarts %d", now.RestartCount, max)
		if seen && now.RestartCount < prev.RestartCount {
			ok, why = false, fmt.Sprintf("restartCount went down %d → %d", prev.RestartCount, now.RestartCount)
		}
		if seen && isTerminal(prev.Phase) && now.Phase != prev.Phase {
			ok, why = false, fmt.Sprintf("terminal phase %s became %s", prev.Phase, now.Phase)
		}
		r.l.check(invTrainingBounded, ok, "%s/%s: %s", pcs.Namespace, pcs.Name, why)
	}
}

func isTerminal(p grovev1alpha1.PodCliqueSetPhase) bool {
	return p == grovev1alpha1.PodCliqueSetPhaseSucceeded || p == grovev1alpha1.PodCliqueSetPhaseFailed
}

// pollUntil runs poll every 2 s until stop is closed.
func (r *run) pollUntil(stop <-chan struct{}) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			r.poll()
		}
	}
}

// childKinds are the kinds a workload's children can have; an orphan is any of them left behind.
var childKinds = []schema.GroupVersionKind{
	{Version: "v1", Kind: "Pod"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Secret"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "batch", Version: "v1", Kind: "Job"},
	{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"},
	{Group: "grove.io", Version: "v1alpha1", Kind: "PodCliqueSet"},
	{Group: "grove.io", Version: "v1alpha1", Kind: "PodClique"},
	{Group: "grove.io", Version: "v1alpha1", Kind: "PodCliqueScalingGroup"},
	{Group: "scheduler.grove.io", Version: "v1alpha1", Kind: "PodGang"},
	{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob"},
}

// leftovers lists the objects of a namespace that belong to owner: named after it or labelled
// part of it.
func (r *run) leftovers(ns, owner string) ([]string, error) {
	var out []string
	for _, gvk := range childKinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.k.List(r.ctx, list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		for _, o := range list.Items {
			if o.Name == owner || strings.HasPrefix(o.Name, owner+"-") || o.Labels[grovev1alpha1.LabelPartOf] == owner {
				out = append(out, gvk.Kind+"/"+o.Name)
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// checkNoOrphans waits until nothing of owner is left after its deletion.
func (r *run) checkNoOrphans(ns, owner string, timeout time.Duration) {
	var left []string
	r.waitFor(time.Second, timeout, func() bool {
		var err error
		left, err = r.leftovers(ns, owner)
		return err == nil && len(left) == 0
	})
	r.l.check(invNoOrphans, len(left) == 0, "%s/%s left %v after %s", ns, owner, left, timeout)
}

// stored is what the test stored, to prove faults lose or corrupt nothing.
type stored struct {
	uid  types.UID
	spec string
}

// snapshot returns the specs of every object the test created (PodCliqueSets, TrainJobs,
// TrainingRuntimes) — the objects admission guards and etcd keeps.
func (r *run) snapshot() (map[string]stored, error) {
	out := map[string]stored{}
	add := func(kind string, obj client.Object, spec any) error {
		data, err := json.Marshal(spec)
		if err != nil {
			return err
		}
		out[kind+"/"+obj.GetNamespace()+"/"+obj.GetName()] = stored{uid: obj.GetUID(), spec: string(data)}
		return nil
	}
	sets := &grovev1alpha1.PodCliqueSetList{}
	if err := r.k.List(r.ctx, sets); err != nil {
		return nil, err
	}
	for i := range sets.Items {
		// PodCliqueSets the trainer-controller builds come and go with their TrainJob.
		if metav1.GetControllerOf(&sets.Items[i]) != nil {
			continue
		}
		if err := add("*v1alpha1.PodCliqueSet", &sets.Items[i], sets.Items[i].Spec); err != nil {
			return nil, err
		}
	}
	jobs := &trainerv1alpha1.TrainJobList{}
	if err := r.k.List(r.ctx, jobs); err != nil {
		return nil, err
	}
	for i := range jobs.Items {
		if err := add("*v1alpha1.TrainJob", &jobs.Items[i], jobs.Items[i].Spec); err != nil {
			return nil, err
		}
	}
	rts := &trainerv1alpha1.TrainingRuntimeList{}
	if err := r.k.List(r.ctx, rts); err != nil {
		return nil, err
	}
	for i := range rts.Items {
		if err := add("*v1alpha1.TrainingRuntime", &rts.Items[i], rts.Items[i].Spec); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// compareSnapshots checks that every object of before is still stored with the same spec,
// unless the test deleted it or it is a TrainJob whose TTL removed it after it finished.
func (r *run) compareSnapshots(what string, before, after map[string]stored) {
	for key, b := range before {
		a, ok := after[key]
		switch {
		case !ok:
			parts := strings.SplitN(key, "/", 3)
			r.mu.Lock()
			deleted := r.gone[key] || r.gone["*v1.Namespace//"+parts[1]]
			r.mu.Unlock()
			if !deleted && parts[0] == "*v1alpha1.TrainJob" {
				_, deleted = r.finished(parts[1], parts[2])
			}
			r.l.check(invStoredIntact, deleted, "%s: %s is gone", what, key)
		case a.uid != b.uid:
			r.l.check(invStoredIntact, false, "%s: %s was replaced (uid %s → %s)", what, key, b.uid, a.uid)
		default:
			r.l.check(invStoredIntact, a.spec == b.spec, "%s: %s spec changed\nbefore %s\nafter  %s", what, key, b.spec, a.spec)
		}
	}
}

// snapshotPersistently takes a snapshot, retrying while the API server is unavailable.
func (r *run) snapshotPersistently() map[string]stored {
	var snap map[string]stored
	r.retry("snapshot of stored specs", func() error {
		var err error
		snap, err = r.snapshot()
		return err
	})
	return snap
}

// isNotFound is apierrors.IsNotFound, for brevity in polls.
func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
