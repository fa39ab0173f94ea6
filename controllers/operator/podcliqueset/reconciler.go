// Package podcliqueset is the grove-operator's PodCliqueSet reconciler: per replica it keeps the
// headless Service, the standalone PodCliques, the PodCliqueScalingGroups and the PodGangs, and
// it summarises them in the PodCliqueSet's status.
package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
	"github.com/kubegrove/grove/controllers/operator/internal/cachesync"
	"github.com/kubegrove/grove/controllers/operator/internal/resourceclaims"
	"github.com/kubegrove/grove/internal/reconcile/eventbatch"
	"github.com/kubegrove/grove/internal/reconcile/requeue"
)

// Reconciler reconciles PodCliqueSets.
type Reconciler struct {
	Client client.Client
	// APIReader reads what the cache does not hold (external ResourceClaimTemplates); nil
	// means Client.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Backends resolves a PodCliqueSet's scheduler backend.
	Backends *backends.Registry[backends.PodPreparer]
	// TopologyAwareScheduling translates topology constraints into the PodGangs.
	TopologyAwareScheduling bool
	// AutoMNNVL keeps the ComputeDomains of MNNVL groups (network.autoMNNVLEnabled).
	AutoMNNVL bool
	// Clock stamps the PodGangs' condition times; nil means the wall clock.
	Clock clock.PassiveClock
	// ClusterName is this cluster's name among MultiKueue's workers (kueue.multiKueue.clusterName):
	// a PodCliqueSet MultiKueue copied here names it in its Dispatched condition.
	ClusterName string

	// expectations are children created (kind/name) and PodGangs written that the cache does
	// not show yet.
	expectations cachesync.Expectations
}

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// Owner references that block deletion need update on the owner's finalizers (enforced where
// the OwnerReferencesPermissionEnforcement admission plugin is on).
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets/finalizers;podcliques/finalizers;podcliquescalinggroups/finalizers,verbs=update
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=grove.io,resources=podcliques;podcliquescalinggroups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=scheduler.grove.io,resources=podgangs,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=scheduler.grove.io,resources=podgangs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=grove.io,resources=podgangmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch

// SetupWithManager registers the reconciler.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	r.expectations.Clock = r.clock()
	if r.Backends != nil {
		initGangSeries(r.Backends.Enabled())
	}
	b := ctrl.NewControllerManagedBy(mgr)
	if r.AutoMNNVL {
		// A ComputeDomain deleted by hand is made again (its CRD is checked at start).
		b = b.Owns(newComputeDomain(), builder.WithPredicates(resourceclaims.Deleted()))
	}
	return b.
		Named("podcliqueset").
		// Its deletion too: a MultiKueue copy's finalizer (holdCopy) may be released at once.
		For(&grovev1alpha1.PodCliqueSet{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted))).
		// A scaling group's spec, deletion or condition status (a breach, a rolling update's state)
		// changes what this pass decides: taken at once. The rest of its status (counts, progress)
		// only goes into this status: batched.
		Owns(&grovev1alpha1.PodCliqueScalingGroup{}, builder.WithPredicates(eventbatch.SkipCreate(), predicate.Not(groupCountsOnly))).
		Watches(&grovev1alpha1.PodCliqueScalingGroup{}, eventbatch.EnqueueAfter(eventbatch.ControllerOf(grovev1alpha1.GroupVersion.String(), "PodCliqueSet"), eventbatch.Period, eventbatch.Low),
			builder.WithPredicates(groupCountsOnly)).
		Owns(&corev1.Service{}, builder.WithPredicates(eventbatch.SkipCreate())).
		// Under Coherent: a PodGangMap's write seen by the cache lets the next step be decided.
		Owns(&grovev1alpha1.PodGangMap{}).
		Owns(&resourcev1.ResourceClaim{}, builder.WithPredicates(resourceclaims.Deleted())).
		Owns(&autoscalingv2.HorizontalPodAutoscaler{}, builder.WithPredicates(eventbatch.SkipCreate())).
		// The scaling group's PodCliques belong to the PCSG, so their status reaches the PCS here;
		// a clique's status also tells when its pods appear or go (the PodGang's Initialized).
		// A clique's progress (cliqueProgressed) is what a rolling update's next step waits for, and
		// a Coherent step (its gangs' Ready pods): taken promptly; a clique whole again
		// (eventbatch.CliqueWhole), which ends a step, at once.
		Watches(&grovev1alpha1.PodClique{}, eventbatch.EnqueuePromptly(podCliqueSetOf, eventbatch.Period, eventbatch.Low,
			cliqueProgressed, eventbatch.CliqueWhole, r.clock()),
			builder.WithPredicates(eventbatch.SkipCreate())).
		// A pod's PodScheduled condition — the scheduler's reason and message while it cannot place
		// the pod — is what its PodGang's Scheduled condition says, and no PodClique status
		// carries it: its changes come batched like the cliques'.
		Watches(&corev1.Pod{}, eventbatch.EnqueueAfter(podCliqueSetOf, eventbatch.Period, eventbatch.Low),
			builder.WithPredicates(eventbatch.UpdatesWhere(podScheduledChanged))).
		// The status only summarises the PodGangs and PodCliques: their bursts of status changes
		// (acknowledgements, pods turning Ready) are batched into one reconcile. A gang's Ready is
		// this reconciler's own decision from the pods, which a Coherent step reads directly.
		Watches(&schedulerv1alpha1.PodGang{}, eventbatch.EnqueueAfter(eventbatch.ControllerOf(grovev1alpha1.GroupVersion.String(), "PodCliqueSet"), eventbatch.Period, eventbatch.Low),
			builder.WithPredicates(eventbatch.SkipCreate())).
		// Its own status as stored: a status written from a view the cache had not yet updated
		// with an earlier write of ours is seen once the cache catches up, and corrected in a
		// batched reconcile. A reconcile on the stale view meanwhile may have found nothing to
		// write (what it computed matched the stale copy), and no child event would follow.
		Watches(&grovev1alpha1.PodCliqueSet{}, eventbatch.EnqueueAfter(eventbatch.Self, eventbatch.Period, eventbatch.Low),
			builder.WithPredicates(eventbatch.UpdatesWhere(statusChanged))).
		// A binding appearing or changing changes the PodGangs' constraints and the condition.
		Watches(&grovev1alpha1.ClusterTopologyBinding{}, handler.EnqueueRequestsFromMapFunc(r.podCliqueSetsOfBinding)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(requeue.OnTransient(r))
}

// collisionRecheck is how often a PodCliqueSet whose names other owners hold looks again.
const collisionRecheck = 30 * time.Second

func podCliqueSetOf(_ context.Context, obj client.Object) []reconcile.Request {
	pcs := obj.GetLabels()[grovev1alpha1.LabelPartOf]
	if pcs == "" || obj.GetLabels()[grovev1alpha1.LabelManagedBy] != grovev1alpha1.LabelManagedByValue {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: pcs}}}
}

// cliqueProgressed is the prompt progress of a PodClique to its PodCliqueSet: a standalone
// clique's steps are the set's own (eventbatch.CliqueProgressed); a scaling group's clique takes
// its steps from the scaling group, and the set waits on it only for its pod groups' minimum of
// Ready pods (a Coherent step's gangs), a new clique's pods all made (its gang Initialized), its
// finished pods and its breach (eventbatch.CliqueAvailable). A clique whole again is urgent for
// every clique (eventbatch.CliqueWhole).
func cliqueProgressed(old, new client.Object) bool {
	if new.GetLabels()[grovev1alpha1.LabelPodCliqueScalingGroup] != "" {
		return eventbatch.CliqueAvailable(old, new)
	}
	return eventbatch.CliqueProgressed(old, new)
}

// groupCountsOnly passes the updates of a PodCliqueScalingGroup that change nothing this
// reconciler acts on — its status' counts and progress, a condition's reason or message — while
// its spec, labels and annotations (eventbatch.SpecChanged), deletion and the status of each
// condition stay.
var groupCountsOnly = eventbatch.UpdatesWhere(func(old, new client.Object) bool {
	o, ok1 := old.(*grovev1alpha1.PodCliqueScalingGroup)
	n, ok2 := new.(*grovev1alpha1.PodCliqueScalingGroup)
	return ok1 && ok2 && !eventbatch.SpecChanged().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: new}) &&
		o.DeletionTimestamp.Equal(n.DeletionTimestamp) && sameConditionStatuses(o.Status.Conditions, n.Status.Conditions)
})

// sameConditionStatuses reports whether two lists have the same conditions with the same status
// (their reasons, messages and times aside).
func sameConditionStatuses(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for _, c := range a {
		if d := meta.FindStatusCondition(b, c.Type); d == nil || d.Status != c.Status {
			return false
		}
	}
	return true
}

// statusChanged reports whether a PodCliqueSet's stored status changed.
func statusChanged(old, new client.Object) bool {
	o, ok1 := old.(*grovev1alpha1.PodCliqueSet)
	n, ok2 := new.(*grovev1alpha1.PodCliqueSet)
	return ok1 && ok2 && !equality.Semantic.DeepEqual(o.Status, n.Status)
}

// Reconcile observes the PodCliqueSet's children once, decides the whole pass (decide: gang
// termination, training restarts and failure, every replica's children, the rollout's turn,
// what no replica wants), records a decision that needs it in one status write, acts on the plan,
// and writes the status last.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pcs := &grovev1alpha1.PodCliqueSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, pcs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if held, err := r.holdCopy(ctx, pcs); held || err != nil {
		return ctrl.Result{}, err
	}
	if !pcs.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // children go with their owner references
	}
	if r.expectations.WriteUnseen(req.NamespacedName, pcs.ResourceVersion) {
		// A decision recorded in status (a restart, scaled counts to restore) is not in this view
		// yet: acting on it would recreate children without it. Its own status event brings the pass.
		return eventbatch.StatusPass(), nil
	}
	obs, err := r.observe(ctx, pcs)
	if err != nil {
		return ctrl.Result{}, err
	}
	if grovev1alpha1.DispatchedByMultiKueue(pcs) {
		// MultiKueue runs it on a worker and copies the status back: only the gangs are kept
		// here, for the backend-controller's Workloads, which MultiKueue dispatches.
		return ctrl.Result{}, r.keepDispatchedGangs(ctx, pcs, obs)
	}
	if r.mapsUnseen(obs) {
		// A PodGangMap this reconciler wrote is not in the cache yet: a step decided from the
		// older view would be taken twice. Its own event brings the pass.
		return eventbatch.StatusPass(), nil
	}
	p := decide(input{pcs: pcs, obs: obs, now: r.clock().Now()})
	obs.wantGangs = p.wantGangs
	errs, err := r.act(ctx, pcs, obs, &p)
	switch {
	case err != nil: // the decision was not recorded: nothing was acted on
		return ctrl.Result{}, err
	case p.settled:
		return ctrl.Result{RequeueAfter: p.requeue}, errors.Join(errs...)
	case p.endPass:
		// A restart was recorded and acted on: the next pass, once the deletions are observed,
		// recreates the replica. (A result beside an error is ignored by controller-runtime.)
		if len(errs) > 0 {
			return ctrl.Result{}, errors.Join(errs...)
		}
		return eventbatch.StatusPass(), nil
	}
	// Children created here are not in this pass's view: the next pass, after the batch period,
	// writes the status once with them.
	if obs.created.Load()+int32(obs.unseen.Len()) > 0 && len(errs) == 0 {
		return eventbatch.StatusPass(), nil
	}
	if err := r.updateStatus(ctx, pcs, obs, newRollout(pcs), p.coherent, errs); err != nil {
		errs = append(errs, err)
	}
	// The status may just now record a Training workload's start: look again when maxRuntime
	// runs out.
	if left := runtimeRemaining(pcs, r.clock().Now()); left > 0 && (p.requeue == 0 || left < p.requeue) {
		p.requeue = left
	}
	return ctrl.Result{RequeueAfter: p.requeue}, errors.Join(errs...)
}

// observed holds every child of a PodCliqueSet, read once per reconcile from the cache.
type observed struct {
	cliques  map[string]*grovev1alpha1.PodClique
	groups   map[string]*grovev1alpha1.PodCliqueScalingGroup
	gangs    map[string]*schedulerv1alpha1.PodGang
	services map[string]*corev1.Service
	// maps are, under Coherent, the replicas' PodGangMaps.
	maps map[string]*grovev1alpha1.PodGangMap
	pods map[string][]*corev1.Pod // by PodClique; the cache's own, read-only
	// autoscalers are the PodCliqueSet's HorizontalPodAutoscalers.
	autoscalers map[string]*autoscalingv2.HorizontalPodAutoscaler
	// podsLeft counts the pods not being deleted, and terminating holds when each pod being
	// deleted runs out of its grace period: a failing workload is Failed once no pod is left (a
	// pod past its grace period counts as gone — one on an unreachable node may never report).
	podsLeft    int
	terminating []time.Time
	// backend is the name of the scheduler backend the PodGangs are labelled for ("" when it is
	// not enabled: backendErr says so).
	backend    string
	backendErr error
	// staleGangs are the PodGangs whose last write by this reconciler the cache does not show yet.
	staleGangs sets.Set[string]
	// wantGangs are the PodGangs the plan keeps (status reads them).
	wantGangs map[string]bool
	// topology is what the topology constraints resolve to.
	topology *topology
	// collisions are wanted names other owners hold; collided has their kind/name keys.
	collisions []collision
	collided   map[string]bool
	// created counts the children this pass created (from parallel writers).
	created atomic.Int32
	// unseen are children (kind/name) an earlier pass created that the cache does not show yet:
	// not created again, and the status waits for them.
	unseen sets.Set[string]
}

func (r *Reconciler) observe(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet) (*observed, error) {
	sel := []client.ListOption{client.InNamespace(pcs.Namespace), client.MatchingLabels{
		grovev1alpha1.LabelPartOf: pcs.Name, grovev1alpha1.LabelManagedBy: grovev1alpha1.LabelManagedByValue,
	}}
	obs := &observed{
		cliques: map[string]*grovev1alpha1.PodClique{}, groups: map[string]*grovev1alpha1.PodCliqueScalingGroup{},
		gangs: map[string]*schedulerv1alpha1.PodGang{}, services: map[string]*corev1.Service{},
		pods: map[string][]*corev1.Pod{}, wantGangs: map[string]bool{}, collided: map[string]bool{},
		autoscalers: map[string]*autoscalingv2.HorizontalPodAutoscaler{}, maps: map[string]*grovev1alpha1.PodGangMap{},
	}
	cliques := &grovev1alpha1.PodCliqueList{}
	groups := &grovev1alpha1.PodCliqueScalingGroupList{}
	gangs := &schedulerv1alpha1.PodGangList{}
	services := &corev1.ServiceList{}
	hpas := &autoscalingv2.HorizontalPodAutoscalerList{}
	pgms := &grovev1alpha1.PodGangMapList{}
	// The PodCliques and PodGangs are read, not copied: a pass compares each with what it wants and
	// copies only one it writes (children.Updated, podGangs; a status apply works on a copy).
	// Copying all of them made a tenth of the grove-operator's CPU in make bench's rolling update
	// of 200 cliques, and a Coherent update reads its replica's 100 gangs each pass.
	for _, l := range []client.ObjectList{cliques, gangs} {
		if err := r.Client.List(ctx, l, append(sel, client.UnsafeDisableDeepCopy)...); err != nil {
			return nil, err
		}
	}
	for _, l := range []client.ObjectList{groups, services, hpas, pgms} {
		if err := r.Client.List(ctx, l, sel...); err != nil {
			return nil, err
		}
	}
	// Its own pods by index, not every pod of the namespace filtered by label, and not copied:
	// a pass only counts and reads them. Filling make bench's cluster to 20,000 pods, a
	// namespace-wide, copied list here made 43% of everything the operator allocated.
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(pcs.Namespace), client.MatchingFields{fieldindex.PodsOfPodCliqueSet: pcs.Name},
		client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	for i := range cliques.Items {
		obs.cliques[cliques.Items[i].Name] = &cliques.Items[i]
	}
	for i := range groups.Items {
		obs.groups[groups.Items[i].Name] = &groups.Items[i]
	}
	for i := range gangs.Items {
		obs.gangs[gangs.Items[i].Name] = &gangs.Items[i]
	}
	r.markStaleGangs(obs)
	for i := range hpas.Items {
		obs.autoscalers[hpas.Items[i].Name] = &hpas.Items[i]
	}
	for i := range pgms.Items {
		if metav1.IsControlledBy(&pgms.Items[i], pcs) {
			obs.maps[pgms.Items[i].Name] = &pgms.Items[i]
		}
	}
	obs.addPods(pods.Items)
	if backend := r.Backends.ForPodCliqueSet(pcs); backend != nil {
		obs.backend = string(backend.Name())
	} else {
		obs.backendErr = r.Backends.NotEnabledError(backends.SchedulerNameOf(pcs))
	}
	for i := range services.Items {
		obs.services[services.Items[i].Name] = &services.Items[i]
	}
	obs.unseen = r.expectations.Unseen(pcs.UID, obs.children())
	var err error
	if obs.topology, err = r.observeTopology(ctx, pcs); err != nil {
		return nil, err
	}
	return obs, r.findCollisions(ctx, pcs, obs)
}

// addPods counts the pods being deleted (with when) and those left, and files the others by
// PodClique.
func (obs *observed) addPods(pods []corev1.Pod) {
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil {
			obs.terminating = append(obs.terminating, p.DeletionTimestamp.Time)
			continue
		}
		obs.podsLeft++
		obs.pods[p.Labels[grovev1alpha1.LabelPodClique]] = append(obs.pods[p.Labels[grovev1alpha1.LabelPodClique]], p)
	}
}

// children are the observed children as kind/name keys, as the expectations record them.
func (obs *observed) children() sets.Set[string] {
	seen := sets.New[string]()
	add := func(kind string, names []string) {
		for _, name := range names {
			seen.Insert(kind + "/" + name)
		}
	}
	add("PodClique", slices.Collect(maps.Keys(obs.cliques)))
	add("PodCliqueScalingGroup", slices.Collect(maps.Keys(obs.groups)))
	add("PodGang", slices.Collect(maps.Keys(obs.gangs)))
	add("Service", slices.Collect(maps.Keys(obs.services)))
	add("HorizontalPodAutoscaler", slices.Collect(maps.Keys(obs.autoscalers)))
	add("PodGangMap", slices.Collect(maps.Keys(obs.maps)))
	return seen
}

// mapsUnseen reports whether the cache lacks a PodGangMap write of this reconciler.
func (r *Reconciler) mapsUnseen(obs *observed) bool {
	for _, m := range obs.maps {
		if r.expectations.WriteUnseen(client.ObjectKeyFromObject(m), m.ResourceVersion) {
			return true
		}
	}
	for key := range obs.unseen {
		if strings.HasPrefix(key, "PodGangMap/") {
			return true
		}
	}
	return false
}

// markStaleGangs notes the PodGangs whose last write by this reconciler the cache does not show.
func (r *Reconciler) markStaleGangs(obs *observed) {
	obs.staleGangs = sets.New[string]()
	for name, pg := range obs.gangs {
		if r.expectations.WriteUnseen(client.ObjectKeyFromObject(pg), pg.ResourceVersion) {
			obs.staleGangs.Insert(name)
		}
	}
}

func wantsStandalone(pcs *grovev1alpha1.PodCliqueSet, pclq *grovev1alpha1.PodClique) bool {
	i, _ := grovev1alpha1.ReplicaIndexOf(pclq)
	for _, c := range standaloneCliques(pcs) {
		if grovev1alpha1.PodCliqueName(pcs.Name, i, c.Name) == pclq.Name {
			return true
		}
	}
	return false
}

func wantsGroup(pcs *grovev1alpha1.PodCliqueSet, pcsg *grovev1alpha1.PodCliqueScalingGroup) bool {
	i, _ := grovev1alpha1.ReplicaIndexOf(pcsg)
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, i, g.Name) == pcsg.Name {
			return true
		}
	}
	return false
}

// setOwner makes the PodCliqueSet the controller of a child, so deletion cascades.
func setOwner(pcs *grovev1alpha1.PodCliqueSet, obj client.Object) {
	obj.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(pcs, grovev1alpha1.GroupVersion.WithKind("PodCliqueSet"))})
}

// kindOf names an object's kind for log lines (typed objects read from the cache carry none).
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *grovev1alpha1.PodClique:
		return "PodClique"
	case *grovev1alpha1.PodCliqueScalingGroup:
		return "PodCliqueScalingGroup"
	case *schedulerv1alpha1.PodGang:
		return "PodGang"
	case *grovev1alpha1.PodGangMap:
		return "PodGangMap"
	case *corev1.Service:
		return "Service"
	case *autoscalingv2.HorizontalPodAutoscaler:
		return "HorizontalPodAutoscaler"
	}
	return fmt.Sprintf("%T", obj)
}
