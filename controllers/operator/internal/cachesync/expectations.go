// Package cachesync is how the grove-operator copes with objects it created or wrote that its
// cache does not show yet: it remembers them until the cache does, so a pass neither creates
// them again nor writes a status that leaves them out.
package cachesync

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CacheTimeout bounds how long an expectation (a creation, a write or a deletion) is trusted:
// past it the cache is assumed to have caught up (or the object changed meanwhile), and creating,
// writing or deleting again is harmless.
const CacheTimeout = 5 * time.Second

// Expectations are the operator's one mechanism for what it created or wrote that the cache does
// not show yet, as the Job and ReplicaSet controllers' expectations. For creations: per parent,
// the names of the children a pass created, until the cache shows them, so the next pass neither
// creates them again nor summarises a view without them (for writes and deletions, see
// ExpectWrite and ExpectDelete). Children have deterministic names, so the expectation is the
// set of names rather than a count. Waiting for the cache instead (a worker held until it
// catches up) was measured in make bench under load: the wait was as long as the creates
// themselves, and a scale-out of a hundred small cliques queued behind it.
//
// It is never a source of truth: children have deterministic names, so an entry lost with a
// restart costs at most an AlreadyExists answer, and an entry the cache has not confirmed within
// CacheTimeout is dropped (the child was deleted meanwhile, or the watch is far behind: creating
// again is then harmless).
type Expectations struct {
	mu sync.Mutex
	// parents are keyed by UID: a parent deleted and created again under its name (a restarted
	// training clique) starts with nothing pending.
	parents map[types.UID]*pendingChildren
	// writes are this process's updates of existing objects the cache does not show yet, and
	// deletes its pod deletions: apart, as a pod and a PodClique may share a namespace and name.
	writes, deletes map[client.ObjectKey]pendingWrite
	// swept is when expired entries were last dropped (see expect).
	swept time.Time
	// Clock is the clock expectations age by; nil: the real clock (tests set a fake one).
	Clock clock.PassiveClock
}

type pendingWrite struct {
	replaced string // the resourceVersion the write replaced
	until    time.Time
}

type pendingChildren struct {
	names sets.Set[string]
	until time.Time
}

// now reads the injected clock, the real one when none was given.
func (p *Expectations) now() time.Time {
	if p.Clock == nil {
		return time.Now()
	}
	return p.Clock.Now()
}

// Expect records children just created for parent.
func (p *Expectations) Expect(parent types.UID, names ...string) {
	if len(names) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.parents == nil {
		p.parents = map[types.UID]*pendingChildren{}
	}
	c := p.parents[parent]
	if c == nil {
		c = &pendingChildren{names: sets.New[string]()}
		p.parents[parent] = c
	}
	c.names.Insert(names...)
	c.until = p.now().Add(CacheTimeout)
}

// Unseen returns the children of parent created but not in seen (the names the cache shows),
// and forgets those seen. Past CacheTimeout since the last creation it forgets them all.
func (p *Expectations) Unseen(parent types.UID, seen sets.Set[string]) sets.Set[string] {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.parents[parent]
	if c == nil {
		return nil
	}
	c.names = c.names.Difference(seen)
	if c.names.Len() == 0 || p.now().After(c.until) {
		delete(p.parents, parent)
		return nil
	}
	return c.names.Clone()
}

// ExpectWrite records that this process's write to key replaced resourceVersion. While the
// cache still shows that version it has not seen the write: a status computed from it would be
// built on the old status and refused as a conflict (measured in make bench: a conflict for every
// third PodClique status write during a scale-out, each one a full validation of the object by
// the API server for nothing). It is the same expectation as Expect, for updates of existing
// objects instead of creations, and as forgiving: an entry lost with a restart costs at most a
// conflict, and entries expire after CacheTimeout.
func (p *Expectations) ExpectWrite(key client.ObjectKey, resourceVersion string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.writes = p.expect(p.writes, key, resourceVersion)
}

// WriteUnseen reports whether cached, the resourceVersion the cache shows for key, is the one
// this process's last write replaced: the cache has not seen that write yet.
func (p *Expectations) WriteUnseen(key client.ObjectKey, cached string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unseen(p.writes, key, cached)
}

// ExpectDelete records that this process deleted the object key at resourceVersion. Until the
// cache shows the deletion (the object gone, or a newer version with its deletionTimestamp), a
// pass sees the object as it was and would delete it again — measured in make bench's rolling
// updates, a step's pods were deleted twice, each a request the API server answered for nothing
// while the pass waited for it. As forgiving as ExpectWrite.
func (p *Expectations) ExpectDelete(key client.ObjectKey, resourceVersion string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.deletes = p.expect(p.deletes, key, resourceVersion)
}

// DeleteUnseen reports whether cached, the resourceVersion the cache shows for key, is the one
// this process deleted: the cache has not seen the deletion yet.
func (p *Expectations) DeleteUnseen(key client.ObjectKey, cached string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.unseen(p.deletes, key, cached)
}

// sweepAbove is the number of entries past which recording one also drops the expired, at most
// once per CacheTimeout (none can have expired sooner): an entry is otherwise dropped only when
// it is looked up, and a deleted pod whose deletion the cache showed is never looked up again.
const sweepAbove = 1024

func (p *Expectations) expect(m map[client.ObjectKey]pendingWrite, key client.ObjectKey, resourceVersion string) map[client.ObjectKey]pendingWrite {
	now := p.now()
	if m == nil {
		m = map[client.ObjectKey]pendingWrite{}
	}
	if len(m) > sweepAbove && now.Sub(p.swept) >= CacheTimeout {
		p.swept = now
		for _, pending := range []map[client.ObjectKey]pendingWrite{p.writes, p.deletes} {
			for k, e := range pending {
				if now.After(e.until) {
					delete(pending, k)
				}
			}
		}
	}
	m[key] = pendingWrite{replaced: resourceVersion, until: now.Add(CacheTimeout)}
	return m
}

func (p *Expectations) unseen(m map[client.ObjectKey]pendingWrite, key client.ObjectKey, cached string) bool {
	e, ok := m[key]
	if !ok {
		return false
	}
	if e.replaced != cached || p.now().After(e.until) {
		delete(m, key)
		return false
	}
	return true
}
