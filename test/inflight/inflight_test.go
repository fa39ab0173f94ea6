package inflight

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCounterRemembersTheMostCallsInFlightAtOnce(t *testing.T) {
	var c Counter
	assert.Equal(t, int32(1), c.Enter())
	assert.Equal(t, int32(2), c.Enter())
	c.Leave()
	assert.Equal(t, int32(2), c.Enter(), "one left, one more came")
	c.Leave()
	c.Leave()
	assert.Equal(t, int32(0), c.Now())
	assert.Equal(t, int32(2), c.Most())

	var wg sync.WaitGroup
	hold := make(chan struct{})
	for range 50 {
		wg.Go(func() { c.Enter(); <-hold; c.Leave() })
	}
	require.Eventually(t, func() bool { return c.Now() == 50 }, 5*time.Second, time.Millisecond)
	close(hold)
	wg.Wait()
	assert.Equal(t, int32(50), c.Most(), "every concurrent call counted")
	assert.Equal(t, int32(0), c.Now())
}
