// Package podgang is the backend-controller's PodGang reconciler: for the PodGangs of one
// scheduler backend it creates that scheduler's objects, repairs them when someone edits or
// deletes them, and reports SchedulerBackendReady for the PodGang's current generation — the
// acknowledgement the grove-operator waits for before it lifts the pods' gates.
package podgang

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/backend/fieldindex"
	"github.com/kubegrove/grove/controllers/backend/topologybinding"
	"github.com/kubegrove/grove/internal/contract/podgangstatus"
	"github.com/kubegrove/grove/internal/reconcile/conditionlog"
	"github.com/kubegrove/grove/internal/reconcile/eventbatch"
	"github.com/kubegrove/grove/internal/reconcile/requeue"
	"github.com/kubegrove/grove/internal/reconcile/terminating"
)

// Reconciler reconciles the PodGangs of one backend.
type Reconciler struct {
	Client  client.Client
	Backend backends.Syncer
	// Clock times each sync (grove_backend_sync_duration_seconds); nil: the real clock.
	Clock clock.PassiveClock
}

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// ReasonSyncFailed is the reason of SchedulerBackendReady=False.
const ReasonSyncFailed = "SchedulerSyncFailed"

// Owner references that block deletion need update on the owner's finalizers (enforced where
// the OwnerReferencesPermissionEnforcement admission plugin is on).
// +kubebuilder:rbac:groups=scheduler.grove.io,resources=podgangs/finalizers,verbs=update
// +kubebuilder:rbac:groups=scheduler.grove.io,resources=podgangs,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduler.grove.io,resources=podgangs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=workloads;podgroups;compositepodgroups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=scheduling.run.ai,resources=podgroups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=queues,verbs=get;list;watch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get,resourceNames=podgroups.scheduling.volcano.sh

// SetupWithManager registers the reconciler for PodGangs labelled with this backend, and for
// the scheduler objects they own, so an edited or deleted object is put back. For a backend
// with a topology object of its own (backends.TopologySyncer) it also registers the
// topologybinding.Reconciler and resyncs PodGangs when the ClusterTopologyBinding they name changes.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	mine, err := predicate.LabelSelectorPredicate(metav1.LabelSelector{MatchLabels: map[string]string{grovev1alpha1.LabelSchedulerName: string(r.Backend.Name())}})
	if err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("podgang-"+string(r.Backend.Name())).
		// Labels carry backend settings (KAI's queue), so a relabel is a change to sync.
		// Initialized (all pods exist) is when a gang-mode kube-scheduler gang gets its objects.
		For(&schedulerv1alpha1.PodGang{}, builder.WithPredicates(mine, predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{}, initializedChanged()))).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency})
	for _, owned := range r.Backend.OwnedTypes() {
		// Only spec and metadata changes and deletions can be drift; the scheduler's status
		// writes are not, and a creation is this controller's own (at start every PodGang is
		// synced from its own informer anyway): passing them would sync the PodGang again
		// before the cache holds the acknowledgement just written, and write it twice.
		b = b.Owns(owned, builder.WithPredicates(notCreated, predicate.Or[client.Object](specChanged(), predicate.LabelChangedPredicate{})))
	}
	syncer, keepsTopology := r.Backend.(backends.TopologySyncer)
	if keepsTopology {
		// A binding's topology object names appear in the scheduler's objects of its PodGangs.
		b = b.Watches(&grovev1alpha1.ClusterTopologyBinding{}, handler.EnqueueRequestsFromMapFunc(r.podGangsOfBinding),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	if err := b.Complete(requeue.OnTransient(r)); err != nil {
		return err
	}
	if keepsTopology {
		if err := (&topologybinding.Reconciler{Client: r.Client, Backend: string(r.Backend.Name()), Syncer: syncer}).SetupWithManager(mgr); err != nil {
			return err
		}
	}
	managed.add(managedSource{backend: string(r.Backend.Name()), reader: mgr.GetCache(), scheme: mgr.GetScheme(), types: r.Backend.OwnedTypes(), elected: mgr.Elected()})
	return nil
}

// initializedChanged passes a PodGang update that turns its Initialized condition on or off.
func initializedChanged() predicate.Funcs {
	return eventbatch.UpdatesWhere(func(old, new client.Object) bool {
		initialized := func(o client.Object) bool {
			pg, ok := o.(*schedulerv1alpha1.PodGang)
			return ok && meta.IsStatusConditionTrue(pg.Status.Conditions, schedulerv1alpha1.ConditionInitialized)
		}
		return initialized(old) != initialized(new)
	})
}

// notCreated drops creation events.
var notCreated = predicate.Funcs{CreateFunc: func(event.CreateEvent) bool { return false }}

// specChanged passes updates that change an object's spec. The Workload API's kinds keep no
// metadata.generation (kube-apiserver v1.37 never bumps it), so the generation alone would
// hide an edited PodGroup; the spec is compared when the generation says nothing.
func specChanged() predicate.Funcs {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		if e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() {
			return true
		}
		return !equality.Semantic.DeepEqual(specOf(e.ObjectOld), specOf(e.ObjectNew))
	}}
}

func specOf(obj client.Object) any {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	return u["spec"]
}

// Reconcile syncs the scheduler's objects and acknowledges the PodGang's generation.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	name := string(r.Backend.Name())
	pg := &schedulerv1alpha1.PodGang{}
	if err := r.Client.Get(ctx, req.NamespacedName, pg); err != nil {
		if client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, err
		}
		gone := &schedulerv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}
		return ctrl.Result{}, r.Backend.OnPodGangDelete(ctx, gone)
	}
	if !pg.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, r.Backend.OnPodGangDelete(ctx, pg)
	}
	if pg.Labels[grovev1alpha1.LabelSchedulerName] != name {
		// An owned object's event for a PodGang another backend serves now.
		return ctrl.Result{}, nil
	}
	if terminating.Namespace(ctx, r.Client, pg.Namespace) {
		// The PodGang goes with its namespace, and the API server would refuse every scheduler
		// object created there: nothing to sync, retry or report.
		return ctrl.Result{}, nil
	}
	start := r.clock().Now()
	reason, message, syncErr := r.Backend.SyncPodGang(ctx, pg)
	if terminating.Refused(syncErr) {
		// The namespace began its deletion after the cache last saw it: final, as above.
		log.FromContext(ctx).V(1).Info("the PodGang's namespace is being deleted: its scheduler objects are not created", "backend", name)
		return ctrl.Result{}, nil
	}
	syncSeconds.WithLabelValues(name).Observe(r.clock().Since(start).Seconds())
	cond := metav1.Condition{
		Type: schedulerv1alpha1.ConditionSchedulerBackendReady, Status: metav1.ConditionTrue,
		Reason: reason, Message: message, ObservedGeneration: pg.Generation,
	}
	if syncErr != nil {
		syncErrors.WithLabelValues(name, syncErrorReason(syncErr)).Inc()
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonSyncFailed, syncErr.Error()
	}
	status := pg.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, cond)
	if syncErr == nil {
		// Assigned with the acknowledgement, for the generation it acknowledges; a failed sync
		// keeps the last assignment, which pods already carry.
		status.SchedulingGroups = r.Backend.SchedulingGroups(pg)
	}
	logger := log.FromContext(ctx)
	if !equality.Semantic.DeepEqual(*status, pg.Status) {
		before := pg.Status.Conditions
		// Server-side apply with this backend's own field manager: the operator's conditions are
		// never overwritten, and a stale view is no conflict.
		if err := podgangstatus.ApplyBackend(ctx, r.Client, pg, podgangstatus.ManagerBackendPrefix+name,
			*meta.FindStatusCondition(status.Conditions, cond.Type), status.SchedulingGroups); err != nil {
			return ctrl.Result{}, err
		}
		conditionlog.Transitions(logger, before, pg.Status.Conditions)
		if syncErr == nil {
			logger.V(1).Info("acknowledged the PodGang: the scheduler's objects match its spec", "backend", name, "generation", pg.Generation, "reason", reason)
		}
		// Counted once the write stood: a failed write is retried and counted then.
		if acknowledges(before, cond) {
			acknowledgements.WithLabelValues(name).Inc()
		}
	}
	return ctrl.Result{}, syncErr
}

// podGangsOfBinding maps a ClusterTopologyBinding to this backend's PodGangs naming it: where
// it points the scheduler at another topology object, their scheduler objects change.
func (r *Reconciler) podGangsOfBinding(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &schedulerv1alpha1.PodGangList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{fieldindex.PodGangsOfTopology: obj.GetName()},
		client.MatchingLabels{grovev1alpha1.LabelSchedulerName: string(r.Backend.Name())}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}
