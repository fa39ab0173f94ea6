// Package batch groups a controller's work with its children. Events: bursts of child events
// become one reconcile of the parent, as the Job controller does with pod updates (its
// syncJobBatchPeriod): a clique whose five pods are scheduled and turn Ready within one period is
// reconciled, and its status written, once instead of once per pod transition; only the timing of
// a reconcile changes, nothing is remembered. Writes: many children are created in parallel
// batches that grow while they succeed.
package batch

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Period is how long a parent waits after a child's event before it is reconciled; the events
// that arrive meanwhile join the same reconcile. One second, as the Job controller's.
const Period = time.Second

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

// SkipCreate drops creation events of children. A controller learns nothing from the creation of
// a child it created itself (it looks again after Period instead), and after a restart the
// parent's own creation event reconciles it anyway; what follows — status changes, deletions —
// still comes through.
func SkipCreate() predicate.Predicate {
	return predicate.Funcs{CreateFunc: func(event.CreateEvent) bool { return false }}
}

// SlowStart runs fn for every item in batches of 1, 2, 4, ... and stops at the first batch with
// an error (the ReplicaSet controller's slowStartBatch), so a parent that cannot create its
// children (quota, admission) fails after one request instead of hundreds, while a healthy one is
// limited only by the client's rate. It returns how many calls succeeded.
func SlowStart(ctx context.Context, n int, fn func(ctx context.Context, i int) error) (int, error) {
	done := 0
	for batch := 1; done < n; batch *= 2 {
		if batch > n-done {
			batch = n - done
		}
		var wg sync.WaitGroup
		errs := make(chan error, batch)
		for i := done; i < done+batch; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				if err := fn(ctx, i); err != nil {
					errs <- err
				}
			}(i)
		}
		wg.Wait()
		close(errs)
		failed := 0
		var first error
		for err := range errs {
			failed++
			if first == nil {
				first = err
			}
		}
		done += batch - failed
		if first != nil {
			return done, first
		}
	}
	return done, nil
}

// CacheTimeout bounds WaitForCache: past it, a reconcile goes on (an AlreadyExists on a second
// create is harmless; it only costs a request).
const CacheTimeout = 5 * time.Second

// WaitForCache returns once the cache shows every object just created, or after CacheTimeout. A
// controller that reconciles again before its cache shows what it created would create it again
// (the Cluster API MachineSet controller waits for its new Machines the same way).
func WaitForCache(ctx context.Context, cache client.Reader, created []client.Object) {
	seen := 0 // created[:seen] are in the cache: not looked up again
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, CacheTimeout, true, func(ctx context.Context) (bool, error) {
		for ; seen < len(created); seen++ {
			probe := created[seen].DeepCopyObject().(client.Object)
			if err := cache.Get(ctx, client.ObjectKeyFromObject(created[seen]), probe); err != nil {
				return false, nil
			}
		}
		return true, nil
	})
}
