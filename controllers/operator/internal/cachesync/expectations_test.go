package cachesync

import (
	"fmt"
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

func TestADeletionIsUnseenWhileTheCacheShowsTheVersionDeleted(t *testing.T) {
	now := time.Unix(1000, 0)
	clk := clocktesting.NewFakePassiveClock(now)
	s := &Expectations{Clock: clk}
	pod := client.ObjectKey{Namespace: "ns", Name: "c-0"}

	assert.False(t, s.DeleteUnseen(pod, "5"), "never deleted")
	s.ExpectDelete(pod, "5")
	assert.False(t, s.WriteUnseen(pod, "5"), "a deletion is not a write of an object of the same name")
	assert.True(t, s.DeleteUnseen(pod, "5"), "the cache still shows the version deleted")
	assert.False(t, s.DeleteUnseen(pod, "6"), "a newer version (its deletionTimestamp) is the deletion seen")
	assert.False(t, s.DeleteUnseen(pod, "5"), "and the deletion is forgotten")

	s.ExpectDelete(pod, "7")
	clk.SetTime(now.Add(CacheTimeout + time.Millisecond))
	assert.False(t, s.DeleteUnseen(pod, "7"), "past the timeout the deletion is no longer trusted: deleting again is harmless")
}

func TestDeletionsTheCacheShowedAreDroppedOnceManyArePending(t *testing.T) {
	now := time.Unix(1000, 0)
	clk := clocktesting.NewFakePassiveClock(now)
	s := &Expectations{Clock: clk}
	for i := range sweepAbove + 1 {
		s.ExpectDelete(client.ObjectKey{Namespace: "ns", Name: fmt.Sprintf("old-%d", i)}, "1")
	}
	clk.SetTime(now.Add(CacheTimeout + time.Millisecond))
	s.ExpectDelete(client.ObjectKey{Namespace: "ns", Name: "new"}, "1")

	assert.Len(t, s.deletes, 1, "the expired deletions went; the new one stays")
	assert.True(t, s.DeleteUnseen(client.ObjectKey{Namespace: "ns", Name: "new"}, "1"))
}

func TestASweepDropsExpiredWritesTooAndComesAtMostOncePerTimeout(t *testing.T) {
	t0 := time.Unix(1000, 0)
	clk := clocktesting.NewFakePassiveClock(t0)
	s := &Expectations{Clock: clk}
	at := func(d time.Duration) { clk.SetTime(t0.Add(d)) }
	add := func(kind string, n int) {
		for i := range n {
			s.ExpectDelete(client.ObjectKey{Namespace: "ns", Name: fmt.Sprintf("%s-%d", kind, i)}, "1")
		}
	}

	add("a", sweepAbove-9) // expire at CacheTimeout
	s.ExpectWrite(client.ObjectKey{Namespace: "ns", Name: "written"}, "1")
	at(CacheTimeout / 2)
	add("b", 10) // expire at 1.5 × CacheTimeout; sweepAbove+1 entries now, no sweep yet
	at(CacheTimeout + time.Millisecond)
	add("c", 1) // the first sweep
	assert.Len(t, s.deletes, 11, "the expired deletions went, the b's stay")
	assert.Empty(t, s.writes, "and the expired write with them")

	at(CacheTimeout + 2*time.Millisecond)
	add("d", sweepAbove+1)
	at(CacheTimeout * 8 / 5) // the b's have expired, but the last sweep was less than a timeout ago
	add("e", 1)
	assert.Len(t, s.deletes, 11+sweepAbove+1+1, "no second sweep within a timeout of the first")

	at(2*CacheTimeout + 10*time.Millisecond)
	add("f", 1)
	assert.Len(t, s.deletes, 2, "a timeout later the next sweep drops every expired one")
}
