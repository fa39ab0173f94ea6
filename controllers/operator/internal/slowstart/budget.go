package slowstart

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"
)

// SharedPodCreates is how many pod creates the grove-operator keeps in flight across all its
// PodCliques. One Run stops at MaxInFlight, but a hundred new cliques are reconciled twenty at a
// time, each with its own window: measured in make bench, a scaling group doubled from 100 to
// 200 replicas put about 160 creates in flight, the API server then answered every pod write in
// 0.6–1 s, and kwok — playing the kubelets, twenty pods at a time — reported pods Running at 20 a
// second while the scheduler bound 100: the last pod ran 6 s after its binding. The kubelets and
// the scheduler share the API server with the creates; a budget about the size of their own
// parallelism keeps its answers fast for all three.
const SharedPodCreates = 32

// Budget bounds calls in flight across every caller that shares it, whatever their own windows.
// The zero value holds SharedPodCreates; it is safe for concurrent use.
type Budget struct {
	// Size is the number of calls in flight; 0 means SharedPodCreates. Set before first use.
	Size int64

	once sync.Once
	sem  *semaphore.Weighted
}

// Acquire waits for a slot (or ctx's end, returning its error); release gives the slot back.
func (b *Budget) Acquire(ctx context.Context) (release func(), err error) {
	b.once.Do(func() {
		size := b.Size
		if size <= 0 {
			size = SharedPodCreates
		}
		b.sem = semaphore.NewWeighted(size)
	})
	if err := b.sem.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	return func() { b.sem.Release(1) }, nil
}
