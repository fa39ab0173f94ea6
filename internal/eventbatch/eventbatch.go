// Package eventbatch turns bursts of child events into one reconcile of the parent, as the Job
// controller does with pod updates (its syncJobBatchPeriod): a clique whose five pods are
// scheduled and turn Ready within one period is reconciled, and its status written, once instead
// of once per pod transition; only the timing of a reconcile changes, nothing is remembered. Its
// predicates drop the events a controller learns nothing from.
package eventbatch

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Period is how long a parent waits after a child's event before it is reconciled; the events
// that arrive meanwhile join the same reconcile. One second, as the Job controller's.
const Period = time.Second

// Priorities of requests in controller-runtime's priority queue (the default queue): a worker
// takes the highest first. Under load every worker is busy, and a pass that only writes a status
// summary would delay a pass that creates what a gang is waiting for.
const (
	// Normal is the priority of work on the path to running pods: a clique's creation, its
	// PodGang's acknowledgement, a parent becoming ready.
	Normal = 0
	// Low is the priority of passes that summarise children into status, and of child events,
	// which mostly do.
	Low = handler.LowPriority
)

// EnqueueAfter maps every event's object to requests like handler.EnqueueRequestsFromMapFunc, but
// adds them to the queue after period, at priority. A request already waiting keeps its earlier
// time and the higher priority, so a burst costs one reconcile at most period after its first
// event.
func EnqueueAfter(fn handler.MapFunc, period time.Duration, priority int) handler.EventHandler {
	add := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
		for _, req := range fn(ctx, obj) {
			if ok {
				pq.AddWithOpts(priorityqueue.AddOpts{After: period, Priority: ptr.To(priority)}, req)
			} else {
				q.AddAfter(req, period)
			}
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, e.Object, q)
		},
	}
}

// StatusPass is the result of a pass that created or deleted children: they are not in its view
// yet, so it writes no status; the next pass, after Period and behind passes that create, writes
// it once with them.
func StatusPass() reconcile.Result {
	return reconcile.Result{RequeueAfter: Period, Priority: ptr.To(Low)}
}

// ControllerOf maps an object to a request for its controlling owner of the given kind (in the
// object's namespace); objects controlled by anything else map to nothing.
func ControllerOf(apiVersion, kind string) handler.MapFunc {
	return func(_ context.Context, obj client.Object) []reconcile.Request {
		for _, ref := range obj.GetOwnerReferences() {
			if ref.Controller != nil && *ref.Controller && ref.Kind == kind && ref.APIVersion == apiVersion {
				return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: ref.Name}}}
			}
		}
		return nil
	}
}

// SkipCreate drops creation events of children. A controller learns nothing from the creation of
// a child it created itself (it looks again after Period instead), and after a restart the
// parent's own creation event reconciles it anyway; what follows — status changes, deletions —
// still comes through. A child already being deleted when first seen (after a restart) does come
// through: its parent may be gone, and this event is then all that brings the child's cleanup
// back (Kueue's finalizer on the pods of a deleted PodClique, which otherwise holds the gang's
// quota forever; found by the Kueue crash test).
func SkipCreate() predicate.Predicate {
	return predicate.Funcs{CreateFunc: func(e event.CreateEvent) bool {
		return e.Object != nil && !e.Object.GetDeletionTimestamp().IsZero()
	}}
}

// Self maps an object to a request for itself.
func Self(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(obj)}}
}

// SpecChanged passes creations, deletions and updates of an object's spec, labels or
// annotations, not of its status alone. For a controller that alone writes the object's status:
// its own write teaches it nothing, and the reconcile it would start at once, outside the batch
// period, writes again for the pod events that arrived meanwhile (measured in make bench S2: a
// second status write 0.3 s after the first for one clique in four).
func SpecChanged() predicate.Predicate {
	return predicate.Or(predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{})
}

// UpdatesWhere passes only the updates changed reports, never a creation, deletion or generic
// event: for a second watch of a controller's own kind whose first watch handles those (e.g. its
// own stored status changing).
func UpdatesWhere(changed func(old, new client.Object) bool) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc:  func(e event.UpdateEvent) bool { return changed(e.ObjectOld, e.ObjectNew) },
	}
}
