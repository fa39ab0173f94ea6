package slowstart

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBudgetBoundsCallsInFlightAcrossRunsSharingIt(t *testing.T) {
	tests := []struct {
		name string
		size int64
		want int32
	}{
		{name: "the zero value holds SharedPodCreates", want: SharedPodCreates},
		{name: "a set size", size: 5, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Budget{Size: tt.size}
			var inFlight, peak atomic.Int32
			release := make(chan struct{})
			var wg sync.WaitGroup
			// Ten Runs of 20 calls: alone, each would put its whole window (InitialBatch and more) in flight.
			for range 10 {
				wg.Go(func() {
					_, err := Run(context.Background(), 20, func(ctx context.Context, _ int) error {
						done, err := b.Acquire(ctx)
						if err != nil {
							return err
						}
						defer done()
						n := inFlight.Add(1)
						for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
						}
						<-release
						inFlight.Add(-1)
						return nil
					})
					assert.NoError(t, err)
				})
			}
			require.Eventually(t, func() bool { return inFlight.Load() == tt.want }, time.Second, time.Millisecond)
			time.Sleep(50 * time.Millisecond)
			assert.Equal(t, tt.want, inFlight.Load(), "no call starts beyond the budget while all are in flight")
			close(release)
			wg.Wait()
			assert.Equal(t, tt.want, peak.Load())
		})
	}
}

func TestBudgetAcquireEndsWithTheContext(t *testing.T) {
	b := &Budget{Size: 1}
	done, err := b.Acquire(context.Background())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = b.Acquire(ctx)
	assert.ErrorIs(t, err, context.Canceled, "a full budget waits only as long as its caller")
	done()
	again, err := b.Acquire(context.Background())
	require.NoError(t, err, "a released slot is taken again")
	again()
}
