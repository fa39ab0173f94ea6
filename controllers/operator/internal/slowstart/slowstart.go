// Package slowstart runs many writes of one reconcile in parallel, in a window that grows while
// they succeed and stops at the first failure, as the ReplicaSet controller creates its pods.
package slowstart

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// InitialBatch is how many calls Run starts at once. The ReplicaSet controller starts with
// 1, which costs a clique of four pods three sequential round trips; under load, when a round trip
// takes 100 ms and every worker is busy, that latency is what a scale-out waits for. Most cliques
// have fewer than eight pods: they are created in one round trip, and a parent that cannot create
// children still fails after a few requests, not hundreds.
const InitialBatch = 8

// MaxInFlight bounds the window. The operator's client sends at most its QPS (100 by default) a
// second: more in flight only means the API server answers slower than that and queues them, and
// priority and fairness refuses a client's requests with 429 once its queues are full (measured
// in make bench: 84 of a 1000-pod clique's creates, each retried by client-go). Pod creates are
// held lower still, across all PodCliques, by a shared Budget; this bounds the other writes.
const MaxInFlight = 100

// Run runs fn for every item, InitialBatch at a time at first and one more at a time for every
// call that succeeds (up to MaxInFlight) — so the number in flight doubles with each round of
// successes, as in the ReplicaSet controller's slowStartBatch — and starts no more after the
// first error, so a parent that cannot create its children (quota, admission) fails after a few
// requests instead of hundreds. Unlike batches, a window does not wait for a round's slowest call
// before starting the next ones: a hundred creates under load are not held up by the slowest of
// each batch. It returns how many calls succeeded and the first error.
func Run(ctx context.Context, n int, fn func(ctx context.Context, i int) error) (int, error) {
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		done     int
		first    error
		inFlight int
	)
	window := InitialBatch
	freed := sync.NewCond(&mu)
	mu.Lock()
	for next := 0; next < n; next++ {
		for inFlight >= window && first == nil {
			freed.Wait()
		}
		if first != nil {
			break
		}
		inFlight++
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			err := fn(ctx, i)
			mu.Lock()
			defer mu.Unlock()
			inFlight--
			if err != nil && first == nil {
				first = err
			} else if err == nil {
				done++
				if window++; window == MaxInFlight+1 {
					window = MaxInFlight
					log.FromContext(ctx).V(1).Info("slow start at its limit of calls in flight", "limit", MaxInFlight, "calls", n)
				} else if window > MaxInFlight {
					window = MaxInFlight
				}
			}
			freed.Signal()
		}(next)
	}
	mu.Unlock()
	wg.Wait()
	return done, first
}
