package chaos

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Fault kinds. Every kind is injected at least once per run when the window allows (the
// schedule starts with all of them in a seeded order).
const (
	faultKill          = "kill"        // SIGKILL of one replica of a binary, then a restart
	faultLeaderKill    = "leader-kill" // SIGKILL of a controller's current leader
	faultAPIServer     = "apiserver-restart"
	faultPodDelete     = "pod-delete"
	faultPodUnready    = "pod-unready"
	faultNodeRemove    = "node-remove"
	faultWebhookOutage = "webhook-unavailable"
)

// faultKinds are the kinds with their target binary where one applies.
var faultKinds = []string{
	faultKill + " grove-operator", faultKill + " grove-webhook", faultKill + " backend-controller", faultKill + " trainer-controller",
	faultLeaderKill + " grove-operator", faultLeaderKill + " backend-controller", faultLeaderKill + " trainer-controller",
	faultAPIServer, faultPodDelete, faultPodUnready, faultNodeRemove, faultWebhookOutage,
}

// fault is one entry of the schedule: when (from the start of the fault window), what, and the
// random draws the injection uses (which target, how long it is held), all fixed by the seed so
// that a seed reproduces the schedule.
type fault struct {
	at   time.Duration
	kind string
	pick float64
	hold time.Duration
}

func (f fault) String() string {
	return fmt.Sprintf("at %6.1fs %-30s pick=%.3f hold=%s", f.at.Seconds(), f.kind, f.pick, f.hold.Round(100*time.Millisecond))
}

// schedule draws the faults of a window from a seed: gaps of 2–8 s, every kind once in a random
// order first, then kinds at random (pod faults twice as likely: they are the cheap, common ones).
func schedule(seed int64, window time.Duration) []fault {
	rng := rand.New(rand.NewSource(seed))
	first := rng.Perm(len(faultKinds))
	weighted := append(append([]string{}, faultKinds...), faultPodDelete, faultPodUnready)
	var out []fault
	at := 5 * time.Second
	for i := 0; at < window; i++ {
		var kind string
		if i < len(first) {
			kind = faultKinds[first[i]]
		} else {
			kind = weighted[rng.Intn(len(weighted))]
		}
		out = append(out, fault{
			at:   at,
			kind: kind,
			pick: rng.Float64(),
			hold: time.Duration(1000+rng.Intn(9000)) * time.Millisecond,
		})
		at += time.Duration(2000+rng.Intn(6000)) * time.Millisecond
	}
	return out
}

func TestSameSeedGivesTheSameFaultScheduleAndEveryKindComesFirst(t *testing.T) {
	a, b := schedule(42, 10*time.Minute), schedule(42, 10*time.Minute)
	require.Equal(t, a, b, "a seed reproduces the schedule")
	assert.NotEqual(t, a, schedule(43, 10*time.Minute), "another seed, another schedule")
	require.Greater(t, len(a), len(faultKinds))
	seen := map[string]bool{}
	for _, f := range a[:len(faultKinds)] {
		seen[f.kind] = true
		assert.GreaterOrEqual(t, f.hold, time.Second)
	}
	assert.Len(t, seen, len(faultKinds), "each kind once before any repeats")
	for i := 1; i < len(a); i++ {
		gap := a[i].at - a[i-1].at
		assert.True(t, gap >= 2*time.Second && gap < 8*time.Second, "gap %s", gap)
	}
	assert.Less(t, a[len(a)-1].at, 10*time.Minute, "nothing is scheduled after the window")
}
