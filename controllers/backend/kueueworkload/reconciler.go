// Package kueueworkload is the backend-controller's Kueue reconciler (docs/kueue.md): for each
// queued PodGang of its backend (spec.queueName set) it keeps the prebuilt Kueue Workload that
// Kueue admits the gang with, and reports Kueue's decision in the PodGang's QueueAdmitted
// condition, which the grove-operator reads. It reads no object of the operator but the PodGang,
// the gang's pods only while an admitted Workload shrinks in place (how many Kueue still counts),
// and, under MultiKueue (multikueue.go), the phase of the gang's PodCliqueSet.
package kueueworkload

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/backend/fieldindex"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
	"github.com/kubegrove/grove/internal/contract/podgangstatus"
	"github.com/kubegrove/grove/internal/reconcile/conditionlog"
	"github.com/kubegrove/grove/internal/reconcile/requeue"
)

// Manager is the field manager of the QueueAdmitted condition.
const Manager = podgangstatus.ManagerBackendPrefix + "kueue"

// Reconciler keeps the Workloads of one backend's queued PodGangs.
type Reconciler struct {
	Client client.Client
	// APIReader reads the pods of a gang whose admitted Workload shrinks, uncached (the
	// backend-controller keeps no pod cache for this rare step); nil: Client.
	APIReader client.Reader
	// Clock paces a shrink that waits for pods to end; nil: the real clock.
	Clock clock.PassiveClock
	// Backend is the scheduler backend whose PodGangs this instance serves (their
	// grove.io/scheduler-name label).
	Backend string
	// Recorder emits, on a manager cluster of MultiKueue, an event on a dispatched PodCliqueSet
	// each time one of its gangs is placed on a worker or leaves one; nil: none.
	Recorder events.EventRecorder
}

// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=localqueues,verbs=get;list;watch
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=clusterqueues;resourceflavors,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=workloads/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets/status,verbs=get;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager watches the backend's queued PodGangs, their Workloads (Kueue's decisions are
// status writes) and LocalQueues (a queue created late wakes the gangs that name it).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	queued := predicate.NewPredicateFuncs(func(o client.Object) bool {
		pg, ok := o.(*schedulerv1alpha1.PodGang)
		return ok && pg.QueuedOnItsOwn() && pg.Labels[grovev1alpha1.LabelSchedulerName] == r.Backend
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("kueue-workload-"+r.Backend).
		For(&schedulerv1alpha1.PodGang{}, builder.WithPredicates(queued, predicate.GenerationChangedPredicate{})).
		// The Workload's owner reference is not a controller one (Kueue ignores prebuilt
		// Workloads controlled by another kind).
		Owns(&kueuev1beta2.Workload{}, builder.MatchEveryOwner).
		Watches(&kueuev1beta2.LocalQueue{}, handler.EnqueueRequestsFromMapFunc(r.gangsOfQueue),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		// MultiKueue (multikueue.go): a manager's gang placed on a worker lets its siblings'
		// Workloads be created; a worker's PodCliqueSet copy that ended finishes its Workloads.
		Watches(&kueuev1beta2.Workload{}, handler.EnqueueRequestsFromMapFunc(r.dispatchedSiblings),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetAnnotations()[kueuegang.AnnotationJobOwnerGVK] != "" }))).
		Watches(&kueuev1beta2.Workload{}, handler.EnqueueRequestsFromMapFunc(copiedForGang),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[kueuev1beta2.MultiKueueOriginLabel] != "" }))).
		Watches(&grovev1alpha1.PodCliqueSet{}, handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
			return r.gangsOfPodCliqueSet(ctx, o.GetNamespace(), o.GetName())
		}), builder.WithPredicates(endedCopy)).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(requeue.OnTransient(r))
}

// Reconcile keeps one PodGang's Workload and reports Kueue's decision on it.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pg := &schedulerv1alpha1.PodGang{}
	if err := r.Client.Get(ctx, req.NamespacedName, pg); err != nil {
		// A deleted gang's Workload goes with it (owner reference).
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	// A gang admitted through its PodCliqueSet's owner has no Workload: Kueue holds the owner's.
	if !pg.DeletionTimestamp.IsZero() || !pg.QueuedOnItsOwn() || pg.Labels[grovev1alpha1.LabelSchedulerName] != r.Backend {
		return ctrl.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("podGang", klog.KObj(pg), "queue", pg.Spec.QueueName))

	queueExists, tas, err := r.queue(ctx, pg)
	if err != nil {
		return ctrl.Result{}, err
	}
	switch pg.MultiKueueRoleOf() {
	case schedulerv1alpha1.MultiKueueManager:
		return ctrl.Result{}, r.reconcileDispatched(ctx, pg, queueExists, tas)
	case schedulerv1alpha1.MultiKueueWorker:
		return ctrl.Result{}, r.reconcileCopied(ctx, pg, queueExists)
	}
	wl, again, syncErr := r.syncWorkload(ctx, pg, tas)
	cond := kueuegang.Admission(pg, wl, queueExists)
	if syncErr != nil {
		cond.Reason, cond.Message = schedulerv1alpha1.ReasonWorkloadSyncFailed, syncErr.Error()
	} else if note := topologyNote(pg, wl, queueExists, tas); note != "" {
		cond.Message += "; " + note
		if cond.Status == metav1.ConditionTrue {
			cond.Reason = schedulerv1alpha1.ReasonQueueAdmittedWithoutTopology
		}
	}
	if err := r.report(ctx, pg, cond); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: again}, syncErr
}

// endedCopy passes a worker's PodCliqueSet copy whose phase changed: once it has ended, its gangs'
// Workloads are finished.
var endedCopy = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return copyOf(e.Object) },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, oldOK := e.ObjectOld.(*grovev1alpha1.PodCliqueSet)
		pcs, ok := e.ObjectNew.(*grovev1alpha1.PodCliqueSet)
		return ok && oldOK && grovev1alpha1.MultiKueueCopy(pcs) && old.Status.Phase != pcs.Status.Phase
	},
}

func copyOf(o client.Object) bool {
	pcs, ok := o.(*grovev1alpha1.PodCliqueSet)
	return ok && grovev1alpha1.MultiKueueCopy(pcs)
}

// reconcileDispatched keeps a manager cluster's gang Workload and reports its admission and
// placement (multikueue.go).
func (r *Reconciler) reconcileDispatched(ctx context.Context, pg *schedulerv1alpha1.PodGang, queueExists, tas bool) error {
	priority, err := r.priority(ctx, pg)
	if err != nil {
		return err
	}
	wl, waitsFor, syncErr := r.syncDispatched(ctx, pg, kueuegang.Workload(pg, priority, tas))
	if apierrors.IsConflict(syncErr) {
		// Kueue wrote the Workload meanwhile (its eviction, its admission): looked at again.
		return syncErr
	}
	cond := kueuegang.Admission(pg, wl, queueExists)
	switch {
	case syncErr != nil:
		cond.Reason, cond.Message = schedulerv1alpha1.ReasonWorkloadSyncFailed, syncErr.Error()
	case waitsFor != "":
		cond.Message = fmt.Sprintf("waiting for gang %s to be placed on a worker cluster before the gang's Workload is queued in LocalQueue %s", waitsFor, pg.Spec.QueueName)
	}
	placement := dispatched(pg, wl, waitsFor)
	before := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionDispatched)
	if before != nil {
		before = before.DeepCopy()
	}
	if err := r.report(ctx, pg, cond, placement); err != nil {
		return err
	}
	r.tellMoves(pg, before, placement)
	if err := r.reportOffWorker(ctx, pg, placement); err != nil {
		return err
	}
	return syncErr
}

// reconcileCopied adopts a worker cluster's gang Workload, MultiKueue's copy, and reports Kueue's
// decision on it (multikueue.go).
func (r *Reconciler) reconcileCopied(ctx context.Context, pg *schedulerv1alpha1.PodGang, queueExists bool) error {
	wl, syncErr := r.syncCopied(ctx, pg)
	cond := kueuegang.Admission(pg, wl, queueExists)
	switch {
	case syncErr != nil:
		cond.Reason, cond.Message = schedulerv1alpha1.ReasonWorkloadSyncFailed, syncErr.Error()
	case wl == nil:
		cond = copiedWorkloadPending(pg)
	default:
		// The copy carries the topology requests the manager's queue gave it.
		if note := copiedTopologyNote(pg, wl); note != "" {
			cond.Message += "; " + note
			if cond.Status == metav1.ConditionTrue {
				cond.Reason = schedulerv1alpha1.ReasonQueueAdmittedWithoutTopology
			}
		}
	}
	if err := r.report(ctx, pg, cond); err != nil {
		return err
	}
	return syncErr
}

// shrinkWaitMin and shrinkWaitMax bound how long a Workload shrinking in place waits before it
// looks again for the pods it waits to end.
const (
	shrinkWaitMin = 2 * time.Second
	shrinkWaitMax = time.Minute
)

// syncWorkload creates the gang's Workload or brings it in line with the gang. It returns the
// Workload as stored, nil while there is none, and when to look again (a Workload shrinking in
// place whose pods are still terminating; 0: on the next event).
func (r *Reconciler) syncWorkload(ctx context.Context, pg *schedulerv1alpha1.PodGang, tas bool) (*kueuev1beta2.Workload, time.Duration, error) {
	priority, err := r.priority(ctx, pg)
	if err != nil {
		return nil, 0, err
	}
	want := kueuegang.Workload(pg, priority, tas)
	have := &kueuev1beta2.Workload{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(want), have); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, 0, err
		}
		if err := r.Client.Create(ctx, want); err != nil {
			return nil, 0, fmt.Errorf("creating Workload %s: %w", want.Name, err)
		}
		log.FromContext(ctx).Info("created the gang's Kueue Workload: its pods wait for Kueue to admit it", "workload", klog.KObj(want), "podSets", len(want.Spec.PodSets),
			"topologyAware", tas)
		return want, 0, nil
	}
	owner := metav1.GetControllerOfNoCopy(have)
	ref := ownerRef(have, pg.Name)
	switch {
	case owner != nil || ref == nil:
		return nil, 0, fmt.Errorf("the Workload %s/%s exists and does not belong to this PodGang: nothing is adopted; delete it or rename the PodCliqueSet", have.Namespace, have.Name)
	case ref.UID != pg.UID:
		// Left by an earlier PodGang of the same name; the garbage collector may not have got to it.
		return nil, 0, r.replace(ctx, have, "it belongs to an earlier PodGang of the same name")
	case kueuegang.Finished(have):
		return nil, 0, r.replace(ctx, have, "Kueue finished it ("+reasonOf(have, kueuev1beta2.WorkloadFinished)+"), so it would never be admitted again")
	case !kueuegang.PodSetsMatch(have.Spec.PodSets, want.Spec.PodSets):
		if kueuegang.QuotaReserved(have) && kueuegang.SameSize(have.Spec.PodSets, want.Spec.PodSets) {
			// Only the topology requests differ (the queue's flavors gained or lost a topology,
			// or the pack constraint changed): an admitted gang keeps its placement, and the new
			// requests apply when it next waits for admission.
			log.FromContext(ctx).V(1).Info("the admitted Workload keeps its topology requests until the gang waits again", "workload", klog.KObj(have), "topologyAware", tas)
			break
		}
		if kueuegang.QuotaReserved(have) {
			if target, ok := kueuegang.ShrunkInPlace(have.Spec.PodSets, want.Spec.PodSets, nil); ok {
				again, err := r.shrink(ctx, pg, have, want, target)
				if refusedSmallerCount(err) {
					// Kueue allows a smaller count only with its ElasticJobsViaWorkloadSlices
					// feature gate (docs/kueue.md, Setup).
					return nil, 0, r.replace(ctx, have, "the gang shrank while admitted and Kueue refused a smaller count (its ElasticJobsViaWorkloadSlices feature gate is off), so Kueue stops the gang's pods and admits it anew")
				}
				if err != nil {
					return nil, 0, err
				}
				if err := r.syncQueueAndPriority(ctx, have, want); err != nil {
					return nil, 0, err
				}
				return have, again, nil
			}
			// Kueue refuses to change the podSets of a Workload holding quota but their counts:
			// a gang that grew or changed its pods is admitted again at its new size, as Kueue
			// does for a resized job.
			return nil, 0, r.replace(ctx, have, "the gang grew or changed its pods while admitted")
		}
		have.Spec.PodSets = want.Spec.PodSets
		if err := r.Client.Update(ctx, have); err != nil {
			return nil, 0, err
		}
		log.FromContext(ctx).Info("updated the waiting Workload to the gang's new size and topology requests", "workload", klog.KObj(have), "topologyAware", tas)
	}
	// A Workload that shrank in place keeps podSets the gang no longer has (at count 0): its queue
	// and priority are kept in line on their own.
	if err := r.syncQueueAndPriority(ctx, have, want); err != nil {
		return nil, 0, err
	}
	return have, 0, nil
}

// syncQueueAndPriority gives the Workload the gang's queue and priority when they changed.
func (r *Reconciler) syncQueueAndPriority(ctx context.Context, have, want *kueuev1beta2.Workload) error {
	if have.Spec.QueueName == want.Spec.QueueName && reflect.DeepEqual(have.Spec.PriorityClassRef, want.Spec.PriorityClassRef) &&
		ptr.Deref(have.Spec.Priority, 0) == ptr.Deref(want.Spec.Priority, 0) {
		return nil
	}
	have.Spec.QueueName, have.Spec.PriorityClassRef, have.Spec.Priority = want.Spec.QueueName, want.Spec.PriorityClassRef, want.Spec.Priority
	if err := r.Client.Update(ctx, have); err != nil {
		return err
	}
	log.FromContext(ctx).Info("updated the Workload's queue and priority", "workload", klog.KObj(have))
	return nil
}

// shrink brings an admitted Workload down to its smaller gang in place (kueuegang.ShrunkInPlace): the
// gang keeps its admission and its remaining pods run on, and Kueue releases the quota of the pods
// that left — a Coherent step's new gang needs it. A pod group's count goes down only as its pods
// are gone (Kueue counts a terminating pod until it ends): until then it looks again.
// target is the shrink once no pod is left to wait for.
func (r *Reconciler) shrink(ctx context.Context, pg *schedulerv1alpha1.PodGang, have, want *kueuev1beta2.Workload, target []kueuev1beta2.PodSet) (time.Duration, error) {
	if counts(target) == counts(have.Spec.PodSets) {
		return 0, nil
	}
	reader := r.APIReader
	if reader == nil {
		reader = r.Client
	}
	pods := &corev1.PodList{}
	if err := reader.List(ctx, pods, client.InNamespace(pg.Namespace), client.MatchingLabels{kueuegang.LabelPodGroupName: pg.Name}); err != nil {
		return 0, fmt.Errorf("listing the pods of gang %s: %w", pg.Name, err)
	}
	shrunk, _ := kueuegang.ShrunkInPlace(have.Spec.PodSets, want.Spec.PodSets, kueuegang.Leaving(pg, pods.Items))
	again := time.Duration(0)
	if counts(shrunk) != counts(target) {
		again = r.shrinkWait(pods.Items)
	}
	if counts(shrunk) == counts(have.Spec.PodSets) {
		// Nothing to write yet; whether Kueue takes a smaller count at all is known now, not
		// once the pods have gone (a pod stuck terminating would hold the quota for ever).
		probe := have.DeepCopy()
		probe.Spec.PodSets = target
		if err := r.Client.Update(ctx, probe, client.DryRunAll); err != nil {
			return 0, err
		}
		log.FromContext(ctx).V(1).Info("the admitted Workload waits for the pods that left the gang to end before it shrinks", "workload", klog.KObj(have), "again", again)
		return again, nil
	}
	before := counts(have.Spec.PodSets)
	have.Spec.PodSets = shrunk
	if err := r.Client.Update(ctx, have); err != nil {
		return 0, err
	}
	log.FromContext(ctx).Info("shrank the admitted Workload in place: the gang keeps its admission, Kueue releases the quota of the pods that left",
		"workload", klog.KObj(have), "from", before, "to", counts(shrunk))
	return again, nil
}

// shrinkWait is when a shrink waiting for pods to end looks again (the backend-controller does
// not watch pods): 2 s, and as long again as the oldest deletion has taken so far, up to a minute
// (a pod stuck terminating is not listed every 2 s for ever).
func (r *Reconciler) shrinkWait(pods []corev1.Pod) time.Duration {
	now := r.clock().Now()
	wait := shrinkWaitMin
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			wait = max(wait, now.Sub(p.DeletionTimestamp.Time))
		}
	}
	return min(wait, shrinkWaitMax)
}

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// refusedSmallerCount reports whether Kueue's webhook refused a Workload's smaller podSet count
// (a denial, 403, naming spec.podSets; or 422 from a Kueue that reports it as invalid).
func refusedSmallerCount(err error) bool {
	return (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) && strings.Contains(err.Error(), "spec.podSets")
}

// counts renders podSets' counts in order, for comparison and logs.
func counts(podSets []kueuev1beta2.PodSet) string {
	var b strings.Builder
	for i, ps := range podSets {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%d", ps.Name, ps.Count)
	}
	return b.String()
}

// replace deletes a Workload that cannot serve the gang (only that object: its UID is the
// precondition); its deletion brings the gang back here, which creates the new one.
func (r *Reconciler) replace(ctx context.Context, wl *kueuev1beta2.Workload, why string) error {
	err := r.Client.Delete(ctx, wl, client.Preconditions{UID: ptr.To(wl.UID)})
	if client.IgnoreNotFound(err) != nil {
		return err
	}
	log.FromContext(ctx).Info("deleted the gang's Workload to create it anew: "+why, "workload", klog.KObj(wl))
	return nil
}

// report writes QueueAdmitted (and, on a manager of MultiKueue, Dispatched) when one changed, as
// this controller's own field manager: each write names every condition it owns.
func (r *Reconciler) report(ctx context.Context, pg *schedulerv1alpha1.PodGang, owned ...metav1.Condition) error {
	before := pg.Status.Conditions
	conds := slices.Clone(before)
	changed := false
	for _, cond := range owned {
		changed = meta.SetStatusCondition(&conds, cond) || changed
	}
	if !changed {
		return nil
	}
	part := podgangstatus.Part{}
	for _, cond := range owned {
		part.Conditions = append(part.Conditions, *meta.FindStatusCondition(conds, cond.Type))
	}
	if err := podgangstatus.Apply(ctx, r.Client, pg, Manager, part); err != nil {
		return err
	}
	conditionlog.Transitions(log.FromContext(ctx), before, pg.Status.Conditions)
	return nil
}

// topologyNote says which of the gang's pack constraints Kueue does not honour as written, ""
// when it honours them all (or the gang has none). wl is the gang's Workload as stored: an
// admitted one keeps the topology requests it was admitted with.
func topologyNote(pg *schedulerv1alpha1.PodGang, wl *kueuev1beta2.Workload, queueExists, tas bool) string {
	requests, note := kueuegang.TopologyRequests(pg)
	if len(requests) == 0 || !queueExists {
		return ""
	}
	asked := wl != nil && slices.ContainsFunc(wl.Spec.PodSets, func(ps kueuev1beta2.PodSet) bool { return ps.TopologyRequest != nil })
	switch {
	case asked:
		return note
	case !tas:
		return "its pack constraints are not honoured: no flavor of the queue's ClusterQueue has a topology"
	default:
		return "its pack constraints are not honoured: Kueue admitted it before its queue had a topology; they apply when it next waits for admission"
	}
}

// queue reports whether the gang's LocalQueue exists and whether its ClusterQueue has a flavor
// with a topology (Kueue's topology-aware scheduling): only then do the gang's pack constraints
// become topology requests, which Kueue would otherwise find no flavor for.
func (r *Reconciler) queue(ctx context.Context, pg *schedulerv1alpha1.PodGang) (exists, tas bool, err error) {
	lq := &kueuev1beta2.LocalQueue{}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: pg.Namespace, Name: pg.Spec.QueueName}, lq)
	if apierrors.IsNotFound(err) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	cq := &kueuev1beta2.ClusterQueue{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: string(lq.Spec.ClusterQueue)}, cq); err != nil {
		// A LocalQueue of a missing ClusterQueue: Kueue reports the Workload inadmissible.
		return true, false, client.IgnoreNotFound(err)
	}
	for _, rg := range cq.Spec.ResourceGroups {
		for _, fq := range rg.Flavors {
			rf := &kueuev1beta2.ResourceFlavor{}
			if err := r.Client.Get(ctx, client.ObjectKey{Name: string(fq.Name)}, rf); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return true, false, err
			}
			if rf.Spec.TopologyName != nil {
				return true, true, nil
			}
		}
	}
	return true, false, nil
}

// priority is the value of the gang's PriorityClass; nil when it names none or it is missing
// (Kueue then treats the gang as priority 0, as the pods' own admission would fail anyway).
func (r *Reconciler) priority(ctx context.Context, pg *schedulerv1alpha1.PodGang) (*int32, error) {
	if pg.Spec.PriorityClassName == "" {
		return nil, nil
	}
	pc := &schedulingv1.PriorityClass{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: pg.Spec.PriorityClassName}, pc); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return ptr.To(pc.Value), nil
}

// gangsOfQueue maps a LocalQueue to the backend's gangs that name it.
func (r *Reconciler) gangsOfQueue(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &schedulerv1alpha1.PodGangList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{fieldindex.PodGangsOfQueue: obj.GetName()},
		client.MatchingLabels{grovev1alpha1.LabelSchedulerName: r.Backend}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

func ownerRef(wl *kueuev1beta2.Workload, podGang string) *metav1.OwnerReference {
	for i, ref := range wl.OwnerReferences {
		if ref.Kind == "PodGang" && ref.APIVersion == schedulerv1alpha1.GroupVersion.String() && ref.Name == podGang {
			return &wl.OwnerReferences[i]
		}
	}
	return nil
}

func reasonOf(wl *kueuev1beta2.Workload, t string) string {
	if c := meta.FindStatusCondition(wl.Status.Conditions, t); c != nil {
		return c.Reason
	}
	return ""
}
