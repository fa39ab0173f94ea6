package slowstart

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubegrove/grove/test/inflight"
)

func TestSlowStartStartsAWindowThatGrowsWithEverySuccess(t *testing.T) {
	var started atomic.Int32
	release := make(chan struct{})
	result := make(chan int)
	go func() {
		done, _ := Run(context.Background(), 100, func(context.Context, int) error {
			started.Add(1)
			<-release
			return nil
		})
		result <- done
	}()
	require.Eventually(t, func() bool { return started.Load() == InitialBatch }, time.Second, time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	assert.Equal(t, int32(InitialBatch), started.Load(), "no more than the initial window before any call ends")
	release <- struct{}{}
	require.Eventually(t, func() bool { return started.Load() == InitialBatch+2 }, time.Second, time.Millisecond,
		"a success frees its slot and widens the window by one")
	close(release)
	assert.Equal(t, 100, <-result)
	assert.Equal(t, int32(100), started.Load())
}

func TestSlowStartStopsStartingCallsAtTheFirstError(t *testing.T) {
	var calls atomic.Int32
	done, err := Run(context.Background(), 100, func(_ context.Context, i int) error {
		calls.Add(1)
		if i >= InitialBatch+2 {
			return errors.New("quota exceeded")
		}
		return nil
	})
	require.Error(t, err)
	assert.Equal(t, InitialBatch+2, done, "every call before the failing ones succeeded")
	// The window is InitialBatch plus the successes; once the first failure is in, none starts.
	assert.LessOrEqual(t, calls.Load(), int32(done+InitialBatch+done), "at most a window of failing calls was started")
}

func TestSlowStartKeepsAtMostMaxInFlightCallsInFlight(t *testing.T) {
	// The first 2×MaxInFlight calls succeed at once and widen the window past the limit; the
	// rest stay in flight until released.
	quick := 2 * MaxInFlight
	var calls inflight.Counter
	release := make(chan struct{})
	result := make(chan int)
	go func() {
		done, _ := Run(context.Background(), quick+2*MaxInFlight, func(_ context.Context, i int) error {
			calls.Enter()
			if i >= quick {
				<-release
			}
			calls.Leave()
			return nil
		})
		result <- done
	}()
	require.Eventually(t, func() bool { return calls.Now() == MaxInFlight }, 5*time.Second, time.Millisecond,
		"the held calls fill the window")
	close(release)
	assert.Equal(t, quick+2*MaxInFlight, <-result)
	assert.LessOrEqual(t, calls.Most(), int32(MaxInFlight), "the window stops growing at MaxInFlight")
}
