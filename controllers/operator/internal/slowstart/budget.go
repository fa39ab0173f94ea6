package slowstart

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"
)

// Budget bounds calls in flight across every caller that shares it, whatever their own Run
// windows: many Runs side by side (a hundred reconciles, each with its own window) put no more
// in flight than one. Waiters are served in arrival order, so a call of a small Run that arrives
// behind a large Run's queue waits for that queue. The zero value holds MaxInFlight; it is safe
// for concurrent use.
type Budget struct {
	// Size is the number of calls in flight; 0 means MaxInFlight. Set before first use.
	Size int64

	once sync.Once
	sem  *semaphore.Weighted
}

// Acquire waits for a slot, or for ctx's end (returning its error, and no slot). release gives
// the slot back; calls after the first do nothing.
func (b *Budget) Acquire(ctx context.Context) (release func(), err error) {
	b.once.Do(func() {
		size := b.Size
		if size <= 0 {
			size = MaxInFlight
		}
		b.sem = semaphore.NewWeighted(size)
	})
	if err := b.sem.Acquire(ctx, 1); err != nil {
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(func() { b.sem.Release(1) }) }, nil
}
