// Package batch coalesces bursts of child events into one reconcile of the parent, as the Job
// controller does with pod updates (its syncJobBatchPeriod): a clique whose five pods are
// scheduled and turn Ready within one period is reconciled, and its status written, once instead
// of once per pod transition. Only the timing of a reconcile changes; nothing is remembered.
package batch

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Period is how long a parent waits after a child's event before it is reconciled; the events
// that arrive meanwhile join the same reconcile.
const Period = 500 * time.Millisecond

// EnqueueAfter maps every event's object to requests like handler.EnqueueRequestsFromMapFunc, but
// adds them to the queue after period. A request already waiting keeps its earlier time, so a burst
// costs one reconcile at most period after its first event.
func EnqueueAfter(fn handler.MapFunc, period time.Duration) handler.EventHandler {
	add := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range fn(ctx, obj) {
			q.AddAfter(req, period)
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
