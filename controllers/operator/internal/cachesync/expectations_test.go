package cachesync

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func TestExpectedChildrenAreUnseenUntilTheCacheShowsThemOrTheTimeoutPasses(t *testing.T) {
	now := time.Unix(1000, 0)
	clk := clocktesting.NewFakePassiveClock(now)
	p := &Expectations{Clock: clk}
	a, b := types.UID("uid-a"), types.UID("uid-b")

	assert.Empty(t, p.Unseen(a, nil), "nothing created: nothing pending")
	p.Expect(a, "a-0", "a-1", "a-2")
	p.Expect(b, "b-0")
	assert.Empty(t, p.Unseen(types.UID("uid-a-recreated"), nil), "a parent recreated under its name has nothing pending")
	assert.Equal(t, sets.New("a-0", "a-1", "a-2"), p.Unseen(a, sets.New[string]()), "the cache shows none yet")
	assert.Equal(t, sets.New("a-2"), p.Unseen(a, sets.New("a-0", "a-1")), "two arrived")
	assert.Equal(t, sets.New("a-2"), p.Unseen(a, sets.New[string]()), "those seen are forgotten, not expected again")
	assert.Empty(t, p.Unseen(a, sets.New("a-2")), "all arrived")
	assert.Empty(t, p.Unseen(a, nil), "and nothing is remembered")

	clk.SetTime(clk.Now().Add(CacheTimeout + time.Millisecond))
	assert.Empty(t, p.Unseen(b, nil), "past the timeout a child the cache never showed is dropped")
}

func TestAWriteIsUnseenWhileTheCacheShowsTheVersionItReplaced(t *testing.T) {
	now := time.Unix(1000, 0)
	clk := clocktesting.NewFakePassiveClock(now)
	s := &Expectations{Clock: clk}
	key := client.ObjectKey{Namespace: "ns", Name: "c"}

	assert.False(t, s.WriteUnseen(key, "5"), "never written")
	s.ExpectWrite(key, "5")
	assert.True(t, s.WriteUnseen(key, "5"), "the cache still shows the replaced version")
	assert.False(t, s.WriteUnseen(key, "6"), "the cache caught up")
	assert.False(t, s.WriteUnseen(key, "5"), "and the entry is gone")

	s.ExpectWrite(key, "7")
	clk.SetTime(clk.Now().Add(CacheTimeout + time.Millisecond))
	assert.False(t, s.WriteUnseen(key, "7"), "past the timeout the cache is trusted again")
}
