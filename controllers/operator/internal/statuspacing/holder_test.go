package statuspacing

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestASummaryIsHeldWhileCreatesAreInFlightButNoLongerThanMaxHold(t *testing.T) {
	now := time.Unix(1000, 0)
	clk := clocktesting.NewFakePassiveClock(now)
	h := &Holder{Clock: clk}
	a, b := client.ObjectKey{Namespace: "ns", Name: "a"}, client.ObjectKey{Namespace: "ns", Name: "b"}

	assert.False(t, h.Busy())
	assert.False(t, h.Hold(a), "nothing in flight: written at once")
	done := h.Creating()
	assert.True(t, h.Busy())
	assert.True(t, h.Hold(a), "creates in flight: held")
	clk.SetTime(clk.Now().Add(MaxHold - time.Millisecond))
	assert.True(t, h.Hold(a), "still within MaxHold")
	assert.True(t, h.Hold(b), "another object's hold starts with its own first hold")
	clk.SetTime(clk.Now().Add(time.Millisecond))
	assert.False(t, h.Hold(a), "held MaxHold: written although creates go on")
	assert.True(t, h.Hold(a), "a later summary of the same object may be held again")

	done()
	done() // idempotent
	assert.False(t, h.Hold(b), "the burst is over: written")
	second := h.Creating()
	assert.True(t, h.Hold(b), "a new burst holds afresh")
	clk.SetTime(clk.Now().Add(MaxHold - time.Millisecond))
	assert.True(t, h.Hold(b), "the earlier burst's hold does not count against the new one")
	second()
	assert.False(t, h.Hold(b))
}
