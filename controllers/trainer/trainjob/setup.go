package trainjob

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/fieldindex"
	"github.com/kubegrove/grove/internal/reconcile/eventbatch"
	"github.com/kubegrove/grove/internal/reconcile/requeue"
)

// SetupWithManager registers the reconciler: TrainJobs managed by this controller, their
// workloads (whose status counts their pods), and runtimes that appear.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	// grove_trainjobs is counted from the cache this controller watches TrainJobs through, by
	// the leader.
	jobs.set(mgr.GetCache(), mgr.Elected())
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool { return managedByUs(o.(*trainerv1alpha1.TrainJob)) })
	return ctrl.NewControllerManagedBy(mgr).
		Named("trainjob").
		// Our own status writes need no reconcile; spec changes (suspend) and creation do.
		For(&trainerv1alpha1.TrainJob{}, builder.WithPredicates(predicate.Or[client.Object](predicate.And[client.Object](ours, predicate.GenerationChangedPredicate{}), dispatchedFinished))).
		// Its own status as stored (the status server's trainerStatus aside): a status written
		// from a view the cache had not yet updated with an earlier write of ours is seen once the
		// cache catches up, and corrected in a batched reconcile. A reconcile on the stale view
		// may have found nothing to write, and no workload event would follow.
		Watches(&trainerv1alpha1.TrainJob{}, eventbatch.EnqueueAfter(eventbatch.Self, eventbatch.Period, eventbatch.Low),
			builder.WithPredicates(ours, eventbatch.UpdatesWhere(ownStatusChanged))).
		Owns(&grovev1alpha1.PodCliqueSet{}).
		Owns(&jobsetv1alpha2.JobSet{}).
		Owns(&corev1.ConfigMap{}, builder.WithPredicates(deletedOnly())).
		Watches(&trainerv1alpha1.TrainingRuntime{}, handler.EnqueueRequestsFromMapFunc(r.waitingFor(trainerv1alpha1.TrainingRuntimeKind))).
		Watches(&trainerv1alpha1.ClusterTrainingRuntime{}, handler.EnqueueRequestsFromMapFunc(r.waitingFor(trainerv1alpha1.ClusterTrainingRuntimeKind))).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(requeue.OnTransient(r))
}

// ownStatusChanged reports whether a TrainJob's stored status changed in what this controller
// writes: progress reports (status.trainerStatus, the status server's) change nothing it decides.
func ownStatusChanged(old, new client.Object) bool {
	o, ok1 := old.(*trainerv1alpha1.TrainJob)
	n, ok2 := new.(*trainerv1alpha1.TrainJob)
	if !ok1 || !ok2 {
		return false
	}
	os, ns := o.Status, n.Status
	os.TrainerStatus, ns.TrainerStatus = nil, nil
	return !equality.Semantic.DeepEqual(os, ns)
}

// deletedOnly passes deletions: a deleted runtime snapshot or hostfile matters, its creation by
// this controller does not.
func deletedOnly() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// waitingFor maps a runtime to the TrainJobs that name it and have not started.
func (r *Reconciler) waitingFor(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &trainerv1alpha1.TrainJobList{}
		opts := []client.ListOption{client.MatchingFields{fieldindex.RuntimeRef: fieldindex.RuntimeKey(kind, o.GetName())}}
		if o.GetNamespace() != "" {
			opts = append(opts, client.InNamespace(o.GetNamespace()))
		}
		if err := r.Client.List(ctx, list, opts...); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		for _, tj := range list.Items {
			if finished(&tj) == nil && managedByUs(&tj) {
				reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: tj.Namespace, Name: tj.Name}})
			}
		}
		return reqs
	}
}
