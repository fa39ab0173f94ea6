// Package inflight counts calls in flight in tests of code that runs them side by side, and
// remembers the most seen at once: what a bound on concurrency is checked against.
package inflight

import "sync/atomic"

// Counter counts calls in flight; the zero value is ready and safe for concurrent use.
type Counter struct{ now, most atomic.Int32 }

// Enter counts a call in and returns how many are in flight with it.
func (c *Counter) Enter() int32 {
	n := c.now.Add(1)
	for m := c.most.Load(); n > m && !c.most.CompareAndSwap(m, n); m = c.most.Load() {
	}
	return n
}

// Leave counts a call out.
func (c *Counter) Leave() { c.now.Add(-1) }

// Now is how many calls are in flight.
func (c *Counter) Now() int32 { return c.now.Load() }

// Most is the most calls seen in flight at once.
func (c *Counter) Most() int32 { return c.most.Load() }
