package slowstart

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubegrove/grove/test/inflight"
)

func TestBudgetBoundsCallsInFlightAcrossRunsSharingIt(t *testing.T) {
	tests := []struct {
		name string
		size int64
		want int32
	}{
		{name: "the zero value holds MaxInFlight", want: MaxInFlight},
		{name: "a set size", size: 5, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Budget{Size: tt.size}
			var calls inflight.Counter
			release := make(chan struct{})
			var wg sync.WaitGroup
			// Twenty Runs of 20 calls: alone, each would put its whole window (InitialBatch and
			// more) in flight, 160 at first.
			for range 20 {
				wg.Go(func() {
					_, err := Run(context.Background(), 20, func(ctx context.Context, _ int) error {
						done, err := b.Acquire(ctx)
						if err != nil {
							return err
						}
						defer done()
						calls.Enter()
						<-release
						calls.Leave()
						return nil
					})
					assert.NoError(t, err)
				})
			}
			require.Eventually(t, func() bool { return calls.Now() == tt.want }, time.Second, time.Millisecond)
			close(release)
			wg.Wait()
			assert.Equal(t, tt.want, calls.Most(), "no call started beyond the budget")
		})
	}
}

func TestBudgetWaitsForAFreeSlotOnlyAsLongAsItsCaller(t *testing.T) {
	b := &Budget{Size: 1}
	release, err := b.Acquire(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = b.Acquire(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "a full budget waits until its caller gives up")

	release()
	release() // a second call gives back nothing more
	again, err := b.Acquire(context.Background())
	require.NoError(t, err, "a released slot is taken again")
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err = b.Acquire(ctx)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "the slot given back twice was given back once")
	again()
}
