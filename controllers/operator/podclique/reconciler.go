// Package podclique is the grove-operator's PodClique reconciler: it keeps one pod per index,
// gated until the pod's PodGang is ready for scheduling and its parent cliques are up, and
// reports the clique's counts.
package podclique

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/operator/coherent"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
	"github.com/kubegrove/grove/controllers/operator/internal/cachesync"
	"github.com/kubegrove/grove/controllers/operator/internal/resourceclaims"
	"github.com/kubegrove/grove/controllers/operator/internal/slowstart"
	"github.com/kubegrove/grove/controllers/operator/internal/statuspacing"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
	"github.com/kubegrove/grove/internal/reconcile/eventbatch"
	"github.com/kubegrove/grove/internal/reconcile/requeue"
	"github.com/kubegrove/grove/internal/reconcile/terminating"
)

// Reconciler reconciles PodCliques.
type Reconciler struct {
	Client client.Client
	// APIReader reads what the cache does not hold (external ResourceClaimTemplates); nil
	// means Client.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Backends prepares pods for their scheduler backend.
	Backends *backends.Registry[backends.PodPreparer]
	// StartupWaitImage is the image of the init container that holds a pod of a gang until its
	// parent cliques are up (OperatorConfiguration.startupOrdering.waitImage); empty means
	// the default.
	StartupWaitImage string

	// Clock tells the time of update progress and PodGang waits; nil means the wall clock.
	Clock clock.PassiveClock

	// pending are pods created and status writes made that the cache does not show yet.
	pending cachesync.Expectations
	holder  statuspacing.Holder
	creates slowstart.Budget // pod creates in flight across all PodCliques (podCreatesInFlight)
}

// podCreatesInFlight is how many pod creates the grove-operator keeps in flight across all its
// PodCliques. One clique's slow start stops at slowstart.MaxInFlight, but a hundred new cliques
// are reconciled twenty at a time, each with its own window of 8 and more: in make bench's
// scale-out of a scaling group from 100 to 200 replicas, up to 160 creates in flight made the
// API server answer every pod write in 0.5–1 s; kwok, playing the kubelets 20 pods at a time,
// then reported pods Running at some 20 a second while the scheduler bound 100, and the last pod
// ran 6–8 s after its binding. The scheduler and the kubelets share the API server with the
// creates; a budget about the size of their own parallelism keeps its answers fast for all three.
// A lone clique of 1000 pods is held at 32 instead of 100 and was no slower (make bench's 1000 × 1).
const podCreatesInFlight = 32

// +kubebuilder:rbac:groups=grove.io,resources=podcliques,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliques/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=scheduler.grove.io,resources=podgangs,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podgangmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// SetupWithManager registers the reconciler; it reads through the operator's indexes
// (fieldindex.Setup).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	r.pending.Clock, r.holder.Clock = r.clock(), r.clock()
	r.creates.Size = podCreatesInFlight
	return ctrl.NewControllerManagedBy(mgr).
		Named("podclique").
		For(&grovev1alpha1.PodClique{}, builder.WithPredicates(eventbatch.SpecChanged())).
		// Pod transitions come in bursts (a gang is scheduled and turns Ready together): one
		// reconcile per batch period writes the status once for all of them. A pod turning Ready
		// or going away (or held by Kueue's finalizer, which a pass must release before it can
		// go) is what a rolling update's step waits for: its burst is taken promptly; the last of
		// the clique's pods turning Ready (cliqueAllReady), at once.
		Watches(&corev1.Pod{}, eventbatch.EnqueuePromptly(eventbatch.ControllerOf(grovev1alpha1.GroupVersion.String(), "PodClique"), eventbatch.Period, eventbatch.Low,
			podProgressed, cliqueAllReady(r.Client), r.clock()),
			builder.WithPredicates(eventbatch.SkipCreate())).
		// A PodGang becoming ready lifts the gates of its cliques' pods.
		Watches(&schedulerv1alpha1.PodGang{}, handler.EnqueueRequestsFromMapFunc(r.cliquesOfPodGang),
			builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, conditionsChanged{}))).
		// Under Coherent, the replica's PodGangMap says which PodGangs the pods join.
		Watches(&grovev1alpha1.PodGangMap{}, r.mapChanges()).
		// A parent clique becoming ready lets its dependents start.
		Watches(&grovev1alpha1.PodClique{}, eventbatch.EnqueueAfter(r.dependents, eventbatch.Period, eventbatch.Normal)).
		Owns(&resourcev1.ResourceClaim{}, builder.WithPredicates(resourceclaims.Deleted())).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(requeue.OnTransient(r))
}

func (r *Reconciler) cliquesOfPodGang(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetLabels()[grovev1alpha1.LabelEpoch] != "" {
		// A Coherent gang: a standalone clique's pods join several, and an entry's pods wait for
		// the gangs of the entries it depends on.
		return r.cliquesOfCoherentGang(ctx, obj)
	}
	// Its own cliques, and those of the scaled gangs it is the base of (they wait for it).
	return r.cliquesUnder(ctx, obj.GetNamespace(), []string{obj.GetName()}, func(*grovev1alpha1.PodClique) bool { return true })
}

// cliquesOfReplica maps an object of a PodCliqueSet replica (its PodGangMap created or deleted, a
// Coherent PodGang while the map is not cached) to the replica's PodCliques.
func (r *Reconciler) cliquesOfReplica(ctx context.Context, obj client.Object) []reconcile.Request {
	pcs, replica := obj.GetLabels()[grovev1alpha1.LabelPartOf], obj.GetLabels()[grovev1alpha1.LabelPodCliqueSetReplicaIndex]
	if pcs == "" || replica == "" {
		return nil
	}
	list := &grovev1alpha1.PodCliqueList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingLabels{
		grovev1alpha1.LabelPartOf: pcs, grovev1alpha1.LabelPodCliqueSetReplicaIndex: replica}, client.UnsafeDisableDeepCopy); err != nil { // only names are read
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
	}
	return reqs
}

// dependents maps a PodClique to the cliques that start after it.
func (r *Reconciler) dependents(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &grovev1alpha1.PodCliqueList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{fieldindex.StartsAfter: obj.GetName()},
		client.UnsafeDisableDeepCopy); err != nil { // only names are read
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}})
	}
	return reqs
}

// pass is one reconcile of a PodClique: what it observed, and what its steps did.
type pass struct {
	pclq *grovev1alpha1.PodClique
	// all are the clique's pods, active those not being deleted; stale are the pods of an
	// earlier PodClique of the same name not being deleted yet, leaving its pods being deleted.
	all, active, stale, leaving []*corev1.Pod
	// unseen are pods this process created that the cache does not show yet: neither created
	// again nor left out of a status.
	unseen sets.Set[string]
	// held are the names of pods the clique does not control (an earlier incarnation's, being
	// deleted or about to be): a create under such a name is refused until the pod is gone, whose
	// deletion wakes the clique. Measured in make bench: a 1000-pod training restart sent 600-700
	// creates refused so, and each refused name then waited out CacheTimeout as if in flight (a
	// Training clique now creates nothing while many old pods remain, see holdsBackCreates).
	held sets.Set[string]
	// hash is the pod template hash of the clique's current spec.
	hash string
	// changedPods is set when pods were created or deleted, or the view lacks this process's
	// last write: the status waits for the next pass, which sees them.
	changedPods bool
	// awaitsQueue is set when Kueue has not admitted the clique's gang, or evicted it.
	awaitsQueue bool
	// replacing is set when a Training clique's earlier incarnation still has more pods than the
	// clique may go without: it creates none of its own meanwhile (see holdsBackCreates).
	replacing bool
	// shares are the PodGangs the clique's pods join, by index (one for the whole clique, but
	// under Coherent); sharesKnown is false while a Coherent clique's PodGangMap does not exist.
	shares      []coherent.Share
	sharesKnown bool
	requeue     time.Duration
	errs        []error
}

// releases splits the pods whose Kueue finalizer a pass may release into those released at its
// start (see releasedFirst; the pods of an earlier PodClique of this name being deleted count in
// no status of this one) and those released after its status.
func (p *pass) releases() (first, afterStatus []*corev1.Pod) {
	first = slices.Clone(p.leaving)
	for _, pod := range p.all {
		if releasedFirst(pod) {
			first = append(first, pod)
		} else {
			afterStatus = append(afterStatus, pod)
		}
	}
	return first, append(afterStatus, p.stale...)
}

// Reconcile observes the clique's pods once, deletes surplus, failed, outdated and stale pods,
// creates missing indices, lifts gates that may be lifted, and writes status if it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p, err := r.observe(ctx, req)
	if p == nil || err != nil {
		return ctrl.Result{}, err
	}
	first, _ := p.releases()
	if err := r.releaseKueueFinalizers(ctx, first); err != nil {
		p.errs = append(p.errs, err)
	}
	r.deleteUnwantedPods(ctx, p)
	r.syncResourceClaims(ctx, p) // before the pods that reference them
	if wait, err := r.createAndUngate(ctx, p); wait != nil || err != nil {
		return ptr.Deref(wait, ctrl.Result{}), err
	}
	return r.finish(ctx, req, p)
}

// observe reads the clique and its pods from the cache; nil when there is nothing to do.
func (r *Reconciler) observe(ctx context.Context, req ctrl.Request) (*pass, error) {
	pclq := &grovev1alpha1.PodClique{}
	if err := r.Client.Get(ctx, req.NamespacedName, pclq); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		return nil, r.releaseOrphans(ctx, req)
	}
	if !pclq.DeletionTimestamp.IsZero() {
		// The garbage collector removes the pods; what Kueue's finalizer would hold is released.
		return nil, r.releaseOrphans(ctx, req)
	}
	// Not copied: a pass reads the cache's pods and writes only copies of them (each patch starts
	// from a DeepCopy). Copying a clique's pods on every pass was nearly a quarter of what the
	// operator allocated while make bench filled its cluster to 20,000 pods.
	podList := &corev1.PodList{}
	if err := r.Client.List(ctx, podList, client.InNamespace(pclq.Namespace), client.MatchingFields{fieldindex.PodsOfClique: pclq.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	p := &pass{pclq: pclq, hash: PodTemplateHash(pclq), held: sets.New[string]()}
	seen := sets.New[string]()
	for i := range podList.Items {
		pod := &podList.Items[i]
		if !metav1.IsControlledBy(pod, pclq) {
			p.held.Insert(pod.Name)
			switch {
			case !ofEarlierIncarnation(pod, pclq):
			case pod.DeletionTimestamp.IsZero():
				p.stale = append(p.stale, pod)
			default:
				p.leaving = append(p.leaving, pod)
			}
			continue
		}
		p.all = append(p.all, pod)
		seen.Insert(pod.Name)
		if pod.DeletionTimestamp.IsZero() {
			p.active = append(p.active, pod)
		}
	}
	p.replacing = holdsBackCreates(pclq, len(p.stale)+len(p.leaving))
	p.unseen = r.pending.Unseen(pclq.UID, seen)
	p.changedPods = p.unseen.Len() > 0 || r.pending.WriteUnseen(req.NamespacedName, pclq.ResourceVersion)
	var err error
	if p.shares, p.sharesKnown, err = r.shares(ctx, pclq); err != nil {
		return nil, err
	}
	return p, nil
}

// releaseOrphans releases Kueue's finalizer from the deleted pods of a PodClique that is gone or
// going: nobody else would (see releaseKueueFinalizers), and until they are gone their gang's
// Workload keeps its quota.
func (r *Reconciler) releaseOrphans(ctx context.Context, req ctrl.Request) error {
	podList := &corev1.PodList{}
	if err := r.Client.List(ctx, podList, client.InNamespace(req.Namespace), client.MatchingFields{fieldindex.PodsOfClique: req.Name},
		client.UnsafeDisableDeepCopy); err != nil { // read; patches start from copies
		return err
	}
	pods := make([]*corev1.Pod, 0, len(podList.Items))
	for i := range podList.Items {
		if !podList.Items[i].DeletionTimestamp.IsZero() {
			pods = append(pods, &podList.Items[i])
		}
	}
	return r.releaseKueueFinalizers(ctx, pods)
}

// deleteUnwantedPods deletes surplus and (inference) failed pods, outdated ones in a rolling
// update, and those of an earlier incarnation. A training restart deletes and recreates the
// PodClique; its old pods hold the names the new ones need. The garbage collector normally
// removes them, but may take any time to (it misses deletions for minutes after a restart of its
// own while the API server flaps), and the restart would wait on it: they are deleted here, as
// the garbage collector would.
func (r *Reconciler) deleteUnwantedPods(ctx context.Context, p *pass) {
	training := isTraining(p.pclq)
	victims := r.podsToDelete(p.active, int(p.pclq.Spec.Replicas), training)
	switch {
	case training || p.pclq.Spec.UpdateStrategy == grovev1alpha1.OnDeleteStrategy:
	case p.pclq.Spec.UpdateStrategy == grovev1alpha1.CoherentStrategy:
		if err := r.adopt(ctx, p); err != nil {
			p.errs = append(p.errs, err)
		}
		victims = append(victims, coherentVictims(p.active, victims, p.shares, p.hash)...)
	default:
		victims = append(victims, rollingVictims(p.pclq, p.active, victims, p.hash)...)
	}
	// A pod this reconciler deleted whose deletion the cache does not show yet is not deleted
	// again; it counts as a change of the pass all the same (its status waits for it).
	planned := len(victims) + len(p.stale)
	doomed := slices.DeleteFunc(append(slices.Clone(p.stale), victims...), func(pod *corev1.Pod) bool {
		return r.pending.DeleteUnseen(client.ObjectKeyFromObject(pod), pod.ResourceVersion)
	})
	if skipped := planned - len(doomed); skipped > 0 {
		log.FromContext(ctx).V(1).Info("pods deleted by an earlier pass, their deletion not in the cache yet: not deleted again", "count", skipped)
	}
	if err := r.deletePods(ctx, p.pclq, doomed, p.hash); err != nil {
		p.errs = append(p.errs, err)
	}
	p.changedPods = p.changedPods || planned > 0
}

// createAndUngate creates the missing indices once the PodGang allows (gated or not, see
// docs/podgang-contract.md) and lifts the gates of pods that may now be scheduled. A result
// means the pass ends there: a new clique waits for its PodGang before its first status.
func (r *Reconciler) createAndUngate(ctx context.Context, p *pass) (*ctrl.Result, error) {
	pclq := p.pclq
	backend := r.Backends.ForPodScheduler(pclq.Spec.PodSpec.SchedulerName)
	if backend == nil {
		err := r.Backends.NotEnabledError(pclq.Spec.PodSpec.SchedulerName)
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, "PodCreateFailed", "Create", "%v", err)
		p.errs = append(p.errs, err)
		return nil, nil
	}
	if !p.sharesKnown {
		log.FromContext(ctx).V(1).Info("waiting for the replica's PodGangMap before creating pods")
		return nil, nil
	}
	var waitAll *ctrl.Result
	for _, share := range p.shares {
		wait, err := r.createAndUngateShare(ctx, p, backend, share)
		if err != nil {
			return nil, err
		}
		if wait == nil {
			waitAll = nil
			continue
		}
		if waitAll == nil || wait.RequeueAfter < waitAll.RequeueAfter {
			waitAll = wait
		}
	}
	if len(p.shares) > 0 && waitAll != nil {
		return waitAll, nil
	}
	return nil, nil
}

// createAndUngateShare creates the missing pods of one share once its PodGang allows, and lifts
// the gates of its pods that may be scheduled now. Only a share at the clique's revision is
// refilled: under Coherent, the pods of an older share that are gone are the next an update
// replaces. A result means the clique waits for its first status (see firstStatusWait).
func (r *Reconciler) createAndUngateShare(ctx context.Context, p *pass, backend backends.PodPreparer, share coherent.Share) (*ctrl.Result, error) {
	pclq := p.pclq
	pg, err := r.podGangNamed(ctx, pclq.Namespace, share.PodGang)
	if err != nil {
		return nil, err
	}
	p.awaitsQueue = p.awaitsQueue || pg.AwaitsQueue() || slices.ContainsFunc(podsOf(p.all, share), kueuegang.EvictedByKueue)
	s, err := r.schedulable(ctx, pclq, pg, backend.GangScheduling(), share.After)
	if err != nil {
		return nil, err
	}
	var missing []int
	heldBack := 0
	switch {
	case !share.Current:
	case p.replacing:
		log.FromContext(ctx).V(1).Info("pods of the restarted PodClique are still being deleted: none is created while more remain than minAvailable allows",
			"replacedPods", len(p.stale)+len(p.leaving))
	default:
		missing = slices.DeleteFunc(missingIndices(p.all, int(share.From+share.Replicas)), func(i int) bool {
			name := grovev1alpha1.PodHostname(pclq.Name, i)
			switch {
			case i < int(share.From) || p.unseen.Has(name):
				return true
			case p.held.Has(name):
				heldBack++
				return true
			}
			return false
		})
	}
	if heldBack > 0 {
		log.FromContext(ctx).V(1).Info("pods this clique does not control still hold names it needs: those are created once they are gone", "held", heldBack)
	}
	if len(missing) > 0 {
		now := r.clock().Now()
		ok, after := waitForPodGang(pg, now)
		if p.requeue == 0 || (after > 0 && after < p.requeue) {
			p.requeue = after
		}
		if !ok {
			log.FromContext(ctx).V(1).Info("waiting for the PodGang's backend acknowledgement before creating pods",
				"podGang", share.PodGang, "missing", len(missing), "requeueAfter", after)
		}
		if wait, waiting := firstStatusWait(pclq, now, after); !ok && waiting && len(p.errs) == 0 {
			// A new clique's first status comes with its pods: a write less per clique of a
			// scale-out, at the time the API server is busiest.
			return &ctrl.Result{RequeueAfter: wait}, nil
		}
		switch {
		case !ok:
		case terminating.Namespace(ctx, r.Client, pclq.Namespace):
			// The namespace controller is removing the pods; recreating them would only be
			// refused. Nothing was created: the pass goes on to its status, as at rest.
			log.FromContext(ctx).V(1).Info("namespace is being deleted: no pods created", "missing", len(missing))
		default:
			p.changedPods = true
			if err := r.createPods(ctx, pclq, missing, p.hash, backend, s, share.PodGang); err != nil {
				p.errs = append(p.errs, err)
			}
		}
	}
	active := podsOf(p.active, share)
	if err := r.liftGates(ctx, active, s); err != nil {
		p.errs = append(p.errs, err)
	}
	if err := r.releaseStartup(ctx, active, s); err != nil {
		p.errs = append(p.errs, err)
	}
	return nil, nil
}

// finish writes the status, unless pods were created or deleted: they are not in this pass's
// view, and the next pass, after the batch period, writes the status once with them.
func (r *Reconciler) finish(ctx context.Context, req ctrl.Request, p *pass) (ctrl.Result, error) {
	if p.changedPods && len(p.errs) == 0 {
		return eventbatch.StatusPass(), nil
	}
	held, deadline, err := r.updateStatus(ctx, p.pclq, p.active, p.hash, waits{queue: p.awaitsQueue, replacedPods: p.replacing})
	if deadline > 0 && (p.requeue == 0 || deadline < p.requeue) {
		p.requeue = deadline // the update's progress deadline runs out: report it then
	}
	if err != nil {
		p.errs = append(p.errs, err)
	}
	if err == nil && !held {
		// After the status that recorded an eviction: the pods may vanish now.
		_, afterStatus := p.releases()
		if err := r.releaseKueueFinalizers(ctx, afterStatus); err != nil {
			p.errs = append(p.errs, err)
		}
	}
	if len(p.errs) > 0 {
		return ctrl.Result{}, fmt.Errorf("reconciling PodClique %s: %w", req.NamespacedName, errors.Join(p.errs...))
	}
	if held {
		return eventbatch.StatusPass(), nil
	}
	return ctrl.Result{RequeueAfter: p.requeue}, nil
}

// firstStatusWait reports whether a clique that never wrote its status may still wait for its
// pods to write it — within ackGrace of its creation, the time its pods wait for their PodGang —
// and when to look again: when the PodGang says so (after; 0 when its events will come) or at the
// latest when ackGrace ends, to report pods that were not created.
func firstStatusWait(pclq *grovev1alpha1.PodClique, now time.Time, after time.Duration) (time.Duration, bool) {
	left := pclq.CreationTimestamp.Add(ackGrace).Sub(now)
	if pclq.Status.ObservedGeneration != nil || left <= 0 {
		return 0, false
	}
	if after > 0 && after < left {
		return after, true
	}
	return left, true
}

// ofEarlierIncarnation reports a pod controlled by an earlier PodClique of the same name — one
// deleted since, whose pods are garbage whichever clique of that name now exists.
func ofEarlierIncarnation(p *corev1.Pod, pclq *grovev1alpha1.PodClique) bool {
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "PodClique" || ref.Name != pclq.Name || ref.UID == pclq.UID {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == grovev1alpha1.GroupVersion.Group
}

// holdsBackCreates reports whether a clique creates no pod because replaced pods of its earlier
// incarnation remain. A Training restart deletes and recreates the clique; it cannot reach its
// minAvailable before replicas-minAvailable+1 of its pods exist, and each needs the name (and on a
// real node the devices) of an old pod that is still there: while more old pods remain than the
// clique may go without, no create can help it run sooner. Creating each pod as its name freed put
// creates and bindings on the API server while the old pods were still being removed, and slowed
// the removal: in make bench a 1000-pod restart took 30 s against JobSet's 26 s (JobSet too waits
// for the old pods to go), and 20 s once it waited. Below that count, the pods whose names are free
// are created (see pass.held): a pod stuck terminating on a lost node does not hold back a gang
// that can run without it. Inference cliques are recreated pod by pod, as before.
func holdsBackCreates(pclq *grovev1alpha1.PodClique, replaced int) bool {
	return isTraining(pclq) && replaced > int(pclq.Spec.Replicas-minAvailable(pclq))
}

// podsToDelete are pods above the wanted count and, for inference, failed pods (recreated at the
// same index on the next pass). A Training pod that ended keeps its index: one that exited 0 is
// never recreated, and a failure is the PodCliqueSet's to act on (restart or fail the workload).
func (r *Reconciler) podsToDelete(active []*corev1.Pod, replicas int, training bool) []*corev1.Pod {
	out := surplusPods(active, replicas)
	if training {
		return out
	}
	for _, p := range active {
		if i, ok := podIndex(p); ok && i < replicas && p.Status.Phase == corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// deletePods deletes the pods side by side: a slow start guards against creates an admission or
// quota refuses, and would cost a rolling step a round trip for its ninth pod (measured in make
// bench). At most slowstart.MaxInFlight are in flight: the client sends 100 a second, and beyond
// that priority and fairness answers 429. None is started after the first refusal. Deletes do not
// take the creates' shared budget: a rollout deletes a group's pods at once and each step waits
// for them; a fleet-wide burst of deletes has not been measured to crowd out other writes.
func (r *Reconciler) deletePods(ctx context.Context, pclq *grovev1alpha1.PodClique, pods []*corev1.Pod, hash string) error {
	g, refused := errgroup.WithContext(ctx)
	g.SetLimit(slowstart.MaxInFlight)
	for _, p := range pods {
		g.Go(func() error {
			if refused.Err() != nil {
				return ctx.Err() // nil after a refusal (Wait returns it), the cancellation otherwise
			}
			err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID})
			switch {
			case apierrors.IsNotFound(err), apierrors.IsConflict(err):
				// Gone already; a Conflict is the UID precondition failing: another pod holds
				// the name now, and the one meant is gone.
				return nil
			case err != nil:
				if ctx.Err() == nil {
					r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, "PodDeleteFailed", "Delete", "deleting pod %s: %v", p.Name, err)
				}
				return err
			}
			r.pending.ExpectDelete(client.ObjectKeyFromObject(p), p.ResourceVersion)
			log.FromContext(ctx).Info("deleted pod", "pod", klog.KObj(p), "reason", deleteReason(pclq, p, hash))
			podsDeleted.Inc()
			return nil
		})
	}
	return g.Wait()
}

// deleteReason says why the reconciler deletes a pod, for its log line.
func deleteReason(pclq *grovev1alpha1.PodClique, p *corev1.Pod, hash string) string {
	i, _ := podIndex(p)
	switch {
	case !metav1.IsControlledBy(p, pclq):
		return "it belongs to an earlier PodClique of this name"
	case i >= int(pclq.Spec.Replicas):
		return "its index is beyond spec.replicas"
	case p.Status.Phase == corev1.PodFailed:
		return "it failed; it is recreated at its index"
	case p.Labels[grovev1alpha1.LabelPodTemplateHash] != hash:
		return "rolling update: its template is outdated"
	case pclq.Spec.UpdateStrategy == grovev1alpha1.CoherentStrategy:
		return "coherent update: its index moved to another gang"
	}
	return "duplicate index"
}

// createPods creates the pods of the missing indices; a pod that may be scheduled at once is born
// without the gate, saving the write that would lift it. Each create takes a slot of the budget
// every PodClique shares (podCreatesInFlight), so a hundred cliques created at once do not slow
// the API server's answers to the scheduler and the kubelets.
func (r *Reconciler) createPods(ctx context.Context, pclq *grovev1alpha1.PodClique, indices []int, hash string, backend backends.PodPreparer, s schedulable, podGang string) error {
	pods := make([]client.Object, len(indices))
	for i, index := range indices {
		pod := buildPod(pclq, index, hash, backend, s.pg, podGang)
		if s.atStart {
			addStartupWait(pod, cmp.Or(r.StartupWaitImage, configv1alpha1.DefaultStartupWaitImage), s.parents)
		}
		if s.pod(pod.Name) {
			pod.Spec.SchedulingGates = withoutGate(pod.Spec.SchedulingGates)
		}
		pods[i] = pod
	}
	// The next pass must not create these again before the cache shows them: measured in make
	// bench, a 999-pod clique that did not remember them sent 395 creates more.
	var mu sync.Mutex
	var sent []string
	done := r.holder.Creating()
	created, err := slowstart.Run(ctx, len(pods), func(ctx context.Context, i int) error {
		release, err := r.creates.Acquire(ctx)
		if err != nil {
			return err
		}
		err = r.Client.Create(ctx, pods[i])
		release()
		if err == nil || apierrors.IsAlreadyExists(err) { // AlreadyExists: the cache was behind
			mu.Lock()
			sent = append(sent, pods[i].GetName())
			mu.Unlock()
			return nil
		}
		return err
	})
	done()
	r.pending.Expect(pclq.UID, sent...)
	podsCreated.Add(float64(created))
	gated := 0
	for _, p := range pods {
		if hasGate(p.(*corev1.Pod)) {
			gated++
		}
	}
	log.FromContext(ctx).Info("created pods", "count", created, "of", len(pods), "gated", gated, "podGang", podGang,
		"backendAcknowledged", s.pg.Acknowledged(), "parentsUp", s.parents, "kueueQueue", queueOf(s.pg))
	if terminating.Refused(err) {
		// Final, as for the ReplicaSet controller: no retry, and no event (it would be refused too).
		log.FromContext(ctx).V(1).Info("namespace is being deleted: pod creation stopped", "created", created)
		return nil
	}
	if err != nil {
		r.Recorder.Eventf(pclq, nil, corev1.EventTypeWarning, "PodCreateFailed", "Create", "created %d of %d pods: %v", created, len(indices), err)
		return err
	}
	return nil
}

// conditionsChanged passes PodGang updates that change what a PodClique pass reads of a gang's
// status: the backend's acknowledgement, Kueue's admission, the scheduling groups assigned to the
// pod groups, and a base gang's placement.
type conditionsChanged struct{ predicate.Funcs }

func (conditionsChanged) Update(e event.UpdateEvent) bool {
	oldPG, ok1 := e.ObjectOld.(*schedulerv1alpha1.PodGang)
	newPG, ok2 := e.ObjectNew.(*schedulerv1alpha1.PodGang)
	if !ok1 || !ok2 {
		return true
	}
	o := meta.FindStatusCondition(oldPG.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady)
	n := meta.FindStatusCondition(newPG.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady)
	if (o == nil) != (n == nil) || (o != nil && (o.Status != n.Status || o.ObservedGeneration != n.ObservedGeneration)) {
		return true
	}
	if oldPG.AwaitsQueue() != newPG.AwaitsQueue() || !equality.Semantic.DeepEqual(oldPG.Status.SchedulingGroups, newPG.Status.SchedulingGroups) {
		return true
	}
	// A base gang turning Scheduled lets its scaled gangs' pods go.
	return meta.IsStatusConditionTrue(oldPG.Status.Conditions, schedulerv1alpha1.ConditionScheduled) !=
		meta.IsStatusConditionTrue(newPG.Status.Conditions, schedulerv1alpha1.ConditionScheduled)
}

func isTraining(pclq *grovev1alpha1.PodClique) bool {
	return pclq.Spec.Training()
}

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get

// syncResourceClaims keeps the clique's own claims of resourceSharing: one per AllReplicas entry,
// one per pod index per PerReplica entry (an index scaled away loses its claims), owned by the
// PodClique so they go with it.
func (r *Reconciler) syncResourceClaims(ctx context.Context, p *pass) {
	pclq := p.pclq
	k := resourceclaims.Keeper{Client: r.Client, Reader: r.APIReader, Recorder: r.Recorder}
	if err := k.Keep(ctx, pclq, grovev1alpha1.GroupVersion.WithKind("PodClique"), pclq.Labels[grovev1alpha1.LabelPartOf],
		pclq.Spec.ResourceSharing, int(pclq.Spec.Replicas), pclq.Spec.ResourceClaimTemplates); err != nil {
		p.errs = append(p.errs, err)
	}
}
