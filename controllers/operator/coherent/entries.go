// Package coherent plans a PodCliqueSet replica's PodGangs as upstream Grove's PodGangMap records
// them: the layout of a replica that is not updating (an anchor gang, its scaling groups' tails,
// the entry scale-outs go to) and, under the Coherent update strategy, the next step of an update.
// Everything here is a pure function of the recorded entries, the replica's components and what
// was observed of its gangs and pods; the PodCliqueSet reconciler records what it returns in the
// PodGangMap before it touches a pod, so a restarted operator resumes the same step. Nothing here
// writes to the cluster: the reconciler logs each decision it acts on (a step taken, what a step
// waits for) with its object keys.
package coherent

import (
	"maps"
	"math/big"
	"slices"
	"time"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// Entry is one PodGangMap entry.
type Entry = grovev1alpha1.PodGangEntry

// Component is a standalone clique or a scaling group of one PodCliqueSet replica.
type Component struct {
	// Key names it in the PodGangMap: a standalone PodClique's name, or a scaling group's name in
	// the template.
	Key string
	// Group: a scaling group (counted in replica indices), not a standalone clique (in pods).
	Group bool
	// Replicas is its size now; MinAvailable its minimum viable share; MaxUnavailable its budget
	// during an update (at least MinAvailable under Coherent).
	Replicas, MinAvailable, MaxUnavailable int32
}

// NextEpoch is an epoch above every recorded one: the time in nanoseconds, or one more than the
// greatest recorded epoch when the clock is behind it (another operator's clock, a clock set back).
func NextEpoch(entries []Entry, now time.Time) string {
	next := big.NewInt(0)
	if !now.IsZero() {
		next = big.NewInt(now.UnixNano())
	}
	for _, e := range entries {
		if n, ok := new(big.Int).SetString(e.Epoch, 10); ok && n.Cmp(next) >= 0 {
			next = n.Add(n, big.NewInt(1))
		}
	}
	return next.String()
}

// epochAfter is the epoch k after e.
func epochAfter(e string, k int64) string {
	n, ok := new(big.Int).SetString(e, 10)
	if !ok {
		return e
	}
	return n.Add(n, big.NewInt(k)).String()
}

// compareEpochs orders epochs numerically (a longer decimal is a greater one).
func compareEpochs(a, b string) int {
	if len(a) != len(b) {
		return len(a) - len(b)
	}
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Sorted returns the entries oldest epoch first.
func Sorted(entries []Entry) []Entry {
	out := slices.Clone(entries)
	slices.SortFunc(out, func(a, b Entry) int { return compareEpochs(a.Epoch, b.Epoch) })
	return out
}

// clone deep-copies entries.
func clone(entries []Entry) []Entry {
	out := make([]Entry, len(entries))
	for i := range entries {
		entries[i].DeepCopyInto(&out[i])
	}
	return out
}

// Bootstrap is the layout of a replica created at revision hash: an Anchor with every standalone
// clique whole and the first minAvailable replicas of each scaling group; a Tail with every
// scaling group's replicas beyond (each its own gang, placed after the anchor); and, when there is
// a scaling group, an empty ScaleOut entry the replicas added later go to.
func Bootstrap(components []Component, hash string, epoch string) []Entry {
	anchor := Entry{Epoch: epoch, PodCliqueSetGenerationHash: hash, Role: grovev1alpha1.PodGangRoleAnchor}
	tail := Entry{Epoch: epochAfter(epoch, 1), PodCliqueSetGenerationHash: hash, Role: grovev1alpha1.PodGangRoleTail, DependsOn: []string{epoch}}
	hasGroup := false
	for _, c := range components {
		if !c.Group {
			setCount(&anchor, c.Key, c.Replicas)
			continue
		}
		hasGroup = true
		base := min(c.MinAvailable, c.Replicas)
		addIndices(&anchor, c.Key, span(0, base))
		addIndices(&tail, c.Key, span(base, c.Replicas))
	}
	out := []Entry{anchor}
	if len(tail.PCSGReplicaIndices) > 0 {
		out = append(out, tail)
	}
	if hasGroup {
		out = append(out, Entry{Epoch: epochAfter(epoch, 2), PodCliqueSetGenerationHash: hash, Role: grovev1alpha1.PodGangRoleScaleOut, DependsOn: []string{epoch}})
	}
	return out
}

// span is the indices [from, to).
func span(from, to int32) []int32 {
	var out []int32
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func setCount(e *Entry, key string, n int32) {
	if e.PodCliques == nil {
		e.PodCliques = map[string]int32{}
	}
	e.PodCliques[key] = n
}

func addIndices(e *Entry, key string, indices []int32) {
	if len(indices) == 0 {
		return
	}
	if e.PCSGReplicaIndices == nil {
		e.PCSGReplicaIndices = map[string][]int32{}
	}
	e.PCSGReplicaIndices[key] = slices.Sorted(slices.Values(append(e.PCSGReplicaIndices[key], indices...)))
}

// empty reports whether an entry holds no pod and no scaling-group replica.
func empty(e Entry) bool {
	for _, n := range e.PodCliques {
		if n > 0 {
			return false
		}
	}
	for _, ix := range e.PCSGReplicaIndices {
		if len(ix) > 0 {
			return false
		}
	}
	return true
}

// holds is how much of a component an entry holds: pods of a standalone clique, replicas of a
// scaling group.
func holds(e Entry, c Component) int32 {
	if c.Group {
		return int32(len(e.PCSGReplicaIndices[c.Key]))
	}
	return e.PodCliques[c.Key]
}

// Steady brings a replica's entries, with no update running, to its components' sizes: a
// standalone clique scaled out grows the newest anchor, scaled in shrinks the newest anchors
// first; a scaling group's new replicas go to the ScaleOut entry (made when missing), replicas
// beyond its size leave whichever entry holds them. Entries left empty are dropped, except the
// current ScaleOut entry.
func Steady(entries []Entry, components []Component, hash string, now time.Time) []Entry {
	out := Sorted(clone(entries))
	if len(out) == 0 {
		return Bootstrap(components, hash, NextEpoch(nil, now))
	}
	anchors := func() []int {
		var ix []int
		for i := range out {
			if out[i].Role == grovev1alpha1.PodGangRoleAnchor {
				ix = append(ix, i)
			}
		}
		return ix
	}
	hasGroup := false
	for _, c := range components {
		if c.Group {
			hasGroup = true
			held := map[int32]bool{}
			for i := range out {
				keep := slices.DeleteFunc(slices.Clone(out[i].PCSGReplicaIndices[c.Key]), func(j int32) bool { return j >= c.Replicas })
				setIndices(&out[i], c.Key, keep)
				for _, j := range keep {
					held[j] = true
				}
			}
			var missing []int32
			for j := range c.Replicas {
				if !held[j] {
					missing = append(missing, j)
				}
			}
			if len(missing) > 0 {
				addIndices(scaleOut(&out, hash, now), c.Key, missing)
			}
			continue
		}
		var have int32
		for i := range out {
			have += out[i].PodCliques[c.Key]
		}
		ax := anchors()
		if len(ax) == 0 {
			continue
		}
		if have < c.Replicas {
			newest := &out[ax[len(ax)-1]]
			setCount(newest, c.Key, newest.PodCliques[c.Key]+c.Replicas-have)
		}
		for k := len(ax) - 1; k >= 0 && have > c.Replicas; k-- {
			e := &out[ax[k]]
			take := min(e.PodCliques[c.Key], have-c.Replicas)
			if take > 0 {
				setCount(e, c.Key, e.PodCliques[c.Key]-take)
				have -= take
			}
		}
	}
	out = slices.DeleteFunc(out, func(e Entry) bool {
		if e.Role == grovev1alpha1.PodGangRoleScaleOut && e.PodCliqueSetGenerationHash == hash && hasGroup {
			return false
		}
		return e.Role != grovev1alpha1.PodGangRoleAnchor && empty(e)
	})
	if hasGroup {
		scaleOut(&out, hash, now)
	}
	return out
}

// setIndices sets (or, when none are left, removes) a scaling group's indices in an entry.
func setIndices(e *Entry, key string, indices []int32) {
	if len(indices) == 0 {
		delete(e.PCSGReplicaIndices, key)
		if len(e.PCSGReplicaIndices) == 0 {
			e.PCSGReplicaIndices = nil
		}
		return
	}
	if e.PCSGReplicaIndices == nil {
		e.PCSGReplicaIndices = map[string][]int32{}
	}
	e.PCSGReplicaIndices[key] = indices
}

// scaleOut is the current revision's ScaleOut entry, made (depending on the oldest anchor of the
// revision) when missing.
func scaleOut(out *[]Entry, hash string, now time.Time) *Entry {
	for i := range *out {
		if e := &(*out)[i]; e.Role == grovev1alpha1.PodGangRoleScaleOut && e.PodCliqueSetGenerationHash == hash {
			return e
		}
	}
	e := Entry{Epoch: NextEpoch(*out, now), PodCliqueSetGenerationHash: hash, Role: grovev1alpha1.PodGangRoleScaleOut}
	for _, a := range *out {
		if a.Role == grovev1alpha1.PodGangRoleAnchor && a.PodCliqueSetGenerationHash == hash {
			e.DependsOn = []string{a.Epoch}
			break
		}
	}
	*out = append(*out, e)
	return &(*out)[len(*out)-1]
}

// keysOf lists a map's keys in order (for stable messages).
func keysOf[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
