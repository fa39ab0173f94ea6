// Package statuspacing paces the grove-operator's status summaries behind its own pod creates.
// It is not about the cache (that is cachesync's): it decides when a summary is worth a slot at
// the API server.
package statuspacing

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// MaxHold bounds how long Holder holds back one object's summary: a process that never stops
// creating still reports, a few seconds late.
const MaxHold = 5 * time.Second

// Holder holds back status summaries while this process has creates in flight. Under load the
// API server is the bottleneck and serves writes in turn: a status summary written during a
// scale-out takes a slot from the pods the scale-out is for (measured in make bench: a hundred
// cliques' status writes in the window of their own pod creates). A summary only reports, so it
// waits for the burst to end, at most MaxHold. What other controllers act on — a condition that
// starts a timer or ends a workload, readiness a dependent clique waits for — is for the caller
// to write at once. It is an optimisation only: an entry lost with a restart makes a summary
// written early.
type Holder struct {
	mu       sync.Mutex
	creating int
	held     map[client.ObjectKey]time.Time // when the summary of an object was first held
	// Clock is the clock holds age by; nil: the real clock (tests set a fake one).
	Clock clock.PassiveClock
}

// Creating marks creates in flight until done is called.
func (h *Holder) Creating() (done func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.creating++
	var once sync.Once
	return func() {
		once.Do(func() {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.creating--
		})
	}
}

// Busy reports whether creates are in flight: whether Hold may hold anything.
func (h *Holder) Busy() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.creating > 0
}

// Hold reports whether the status summary of key should wait: creates are in flight and it has
// not waited MaxHold yet.
func (h *Holder) Hold(key client.ObjectKey) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.creating == 0 {
		h.held = nil // the burst is over: every summary is written
		return false
	}
	now := h.now()
	first, ok := h.held[key]
	if !ok {
		if h.held == nil {
			h.held = map[client.ObjectKey]time.Time{}
		}
		h.held[key] = now
		return true
	}
	if now.Sub(first) >= MaxHold {
		delete(h.held, key)
		return false
	}
	return true
}

// now reads the injected clock, the real one when none was given.
func (h *Holder) now() time.Time {
	if h.Clock == nil {
		return time.Now()
	}
	return h.Clock.Now()
}
