package coherent

import (
	"fmt"
	"slices"
	"strings"
	"time"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// StepKind is what a step of a Coherent update does.
type StepKind string

const (
	// AnchorStep brings minAvailable of every changed component up at the new revision as one
	// new gang (a new Anchor entry).
	AnchorStep StepKind = "Anchor"
	// TailStep replaces more of the step's share of each component within its budget: standalone
	// pods join the newest anchor, scaling-group replicas get a new Tail entry.
	TailStep StepKind = "Tail"
	// LeftoverStep replaces, after the last anchor step, what integer division left over.
	LeftoverStep StepKind = "Leftover"
)

// Observed is what the update waits for, as seen of the replica's gangs and pods.
type Observed struct {
	// ReadyEpochs are the entries whose every PodGang exists and is Ready.
	ReadyEpochs map[string]bool
	// UpdatedReady and OldReady count, by standalone component key, the Ready pods at the new
	// revision and at an older one.
	UpdatedReady, OldReady map[string]int32
	// Available lists, by scaling-group key, the indices of its available replicas (every member
	// clique with minAvailable Ready pods); Whole those whose every pod is Ready.
	Available, Whole map[string][]int32
}

// Update is one pass of a replica's Coherent update.
type Update struct {
	// Entries are the recorded PodGangMap entries; Hash the revision updated to.
	Entries []Entry
	Hash    string
	// Scope are the changed components (in the order of the template), with their sizes now.
	Scope    []Component
	Observed Observed
	Now      time.Time
}

// Decision is what a pass of the update decided.
type Decision struct {
	// Entries are the PodGangMap's entries to record (the recorded ones when nothing changes).
	Entries []Entry
	// Changed: Entries differ from the recorded ones; record them before acting.
	Changed bool
	// Step is the step taken now ("" when waiting or done), Number its position (from 1) of Steps.
	Step          StepKind
	Number, Steps int
	// InFlight are the epochs whose gangs the current step brings up.
	InFlight []string
	// Taken are, by scaling group, the replicas the step moves to the new revision (those down
	// first), for the log of the decision.
	Taken map[string][]int32
	// Waiting says what the update waits for before its next step ("" when a step is taken or
	// the update of the replica is done).
	Waiting string
	// Done: every changed component runs the new revision, its gangs Ready, and every entry is
	// at the new revision.
	Done bool
}

// step is one step of the plan: how much of each component it moves to the new revision.
type step struct {
	kind StepKind
	take map[string]int32
}

// planSteps lays out a replica's update (upstream Grove's GREP-393, as its engine does it): when a
// scaling group changed, anchorSteps is the smallest replicas/minAvailable over the changed
// components (1 when only standalone cliques changed: their pods need no group of their own);
// each anchor step takes minAvailable of every component, its tail steps the rest of the step's
// share within each budget, and leftover steps what the division left.
func planSteps(scope []Component) []step {
	anchorSteps, group := int32(0), false
	for _, c := range scope {
		if c.Group && c.Replicas > 0 {
			group = true
		}
	}
	for _, c := range scope {
		if group && c.Replicas > 0 {
			n := max(c.Replicas/max(c.MinAvailable, 1), 1)
			if anchorSteps == 0 || n < anchorSteps {
				anchorSteps = n
			}
		}
	}
	anchorSteps = max(anchorSteps, 1)
	minOf := func(c Component) int32 { return min(max(c.MinAvailable, 1), c.Replicas) }
	share := map[string]int32{}
	for _, c := range scope {
		if c.Replicas > 0 {
			share[c.Key] = minOf(c) + (c.Replicas-anchorSteps*minOf(c))/anchorSteps
		}
	}
	var steps []step
	budgeted := func(kind StepKind, rest map[string]int32) {
		for {
			s := step{kind: kind, take: map[string]int32{}}
			for _, c := range scope {
				if r := rest[c.Key]; r > 0 {
					n := min(r, max(c.MaxUnavailable, 1))
					s.take[c.Key], rest[c.Key] = n, r-n
				}
			}
			if len(s.take) == 0 {
				return
			}
			steps = append(steps, s)
		}
	}
	for range anchorSteps {
		anchor, rest := step{kind: AnchorStep, take: map[string]int32{}}, map[string]int32{}
		for _, c := range scope {
			if c.Replicas > 0 {
				anchor.take[c.Key] = minOf(c)
				rest[c.Key] = share[c.Key] - minOf(c)
			}
		}
		steps = append(steps, anchor)
		budgeted(TailStep, rest)
	}
	left := map[string]int32{}
	for _, c := range scope {
		left[c.Key] = c.Replicas - anchorSteps*share[c.Key]
	}
	budgeted(LeftoverStep, left)
	return steps
}

// Next decides a pass of a replica's Coherent update: the next step when the last one is done
// (its gangs Ready, the pods and replicas it brought up Ready, every component within its budget
// for the next), or what it waits for.
func Next(u Update) Decision {
	entries := Sorted(clone(u.Entries))
	steps := planSteps(u.Scope)
	have := map[string]int32{}
	for _, e := range entries {
		if e.PodCliqueSetGenerationHash == u.Hash {
			for _, c := range u.Scope {
				have[c.Key] += holds(e, c)
			}
		}
	}
	// The step to take is the first whose cumulative share is not yet at the new revision.
	next, done := -1, map[string]int32{}
	for i, s := range steps {
		for k, n := range s.take {
			done[k] += n
		}
		for _, c := range u.Scope {
			if done[c.Key] > have[c.Key] {
				next = i
				break
			}
		}
		if next >= 0 {
			break
		}
	}
	d := Decision{Entries: entries, Steps: len(steps), InFlight: inFlight(entries, u.Hash)}
	if why := waitingFor(u, entries, have, next, steps); why != "" {
		d.Waiting = why
		return d
	}
	if next < 0 {
		d.Entries = reconverge(withoutOldScope(entries, u.Scope, u.Hash), u.Scope, u.Hash)
		d.Changed = !slices.EqualFunc(d.Entries, entries, sameEntry)
		d.Done = !d.Changed && SingleRevision(d.Entries, u.Hash)
		d.InFlight = nil
		return d
	}
	s := steps[next]
	take := map[string]int32{}
	for _, c := range u.Scope {
		if n := done[c.Key] - have[c.Key]; n > 0 {
			take[c.Key] = n
		}
	}
	d.Entries, d.InFlight, d.Taken = apply(entries, u, s.kind, take)
	d.Changed, d.Step, d.Number = true, s.kind, next+1
	return d
}

// waitingFor says why the next step cannot be taken yet ("" when it can): the new revision's
// gangs, pods or replicas are not all Ready, or the next step would take a component's Ready pods
// (available replicas) below replicas − maxUnavailable. A step takes down what is not Ready
// first, so an update that replaces broken pods is not held by them.
func waitingFor(u Update, entries []Entry, have map[string]int32, next int, steps []step) string {
	var why []string
	for _, e := range entries {
		if e.PodCliqueSetGenerationHash == u.Hash && holdsScope(e, u.Scope) && !u.Observed.ReadyEpochs[e.Epoch] {
			why = append(why, fmt.Sprintf("the PodGangs of epoch %s to be Ready", e.Epoch))
		}
	}
	for _, c := range u.Scope {
		available, updated, old := availability(u, c, entries)
		if c.Group {
			// The replicas a step took over count once every pod of theirs is Ready.
			if whole := wholeAtRevision(u, c, entries); whole < have[c.Key] {
				why = append(why, fmt.Sprintf("%s: %d of %d replicas at the new revision wholly Ready", c.Key, whole, have[c.Key]))
			}
		} else if updated < have[c.Key] {
			why = append(why, fmt.Sprintf("%s: %d of %d pods at the new revision Ready", c.Key, updated, have[c.Key]))
		}
		if next < 0 {
			continue
		}
		var cum int32
		for i := 0; i <= next; i++ {
			cum += steps[i].take[c.Key]
		}
		take := cum - have[c.Key]
		if take <= 0 {
			continue
		}
		down := take - max((c.Replicas-have[c.Key])-old, 0)
		if c.Group {
			down = 0
			for _, j := range groupTake(u, c, entries, take) {
				if slices.Contains(u.Observed.Available[c.Key], j) {
					down++
				}
			}
		}
		if floor := c.Replicas - c.MaxUnavailable; down > 0 && available-down < floor {
			why = append(why, fmt.Sprintf("%s: %d Ready; the next step takes %d of them down, which would leave fewer than replicas − maxUnavailable (%d)",
				c.Key, available, down, floor))
		}
	}
	return strings.Join(why, "; ")
}

// availability is a component's Ready pods (or available replicas): in all, at the new revision,
// and at an older one.
func availability(u Update, c Component, entries []Entry) (all, updated, old int32) {
	if !c.Group {
		updated, old = u.Observed.UpdatedReady[c.Key], u.Observed.OldReady[c.Key]
		return updated + old, updated, old
	}
	isNew := map[int32]bool{}
	for _, e := range entries {
		if e.PodCliqueSetGenerationHash == u.Hash {
			for _, j := range e.PCSGReplicaIndices[c.Key] {
				isNew[j] = true
			}
		}
	}
	for _, j := range u.Observed.Available[c.Key] {
		if isNew[j] {
			updated++
		} else if j < c.Replicas {
			old++
		}
	}
	return updated + old, updated, old
}

// wholeAtRevision counts a scaling group's replicas at the new revision whose every pod is Ready.
func wholeAtRevision(u Update, c Component, entries []Entry) int32 {
	isNew := map[int32]bool{}
	for _, e := range entries {
		if e.PodCliqueSetGenerationHash == u.Hash {
			for _, j := range e.PCSGReplicaIndices[c.Key] {
				isNew[j] = true
			}
		}
	}
	n := int32(0)
	for _, j := range u.Observed.Whole[c.Key] {
		if isNew[j] {
			n++
		}
	}
	return n
}

// holdsScope reports whether an entry holds any of the changed components.
func holdsScope(e Entry, scope []Component) bool {
	for _, c := range scope {
		if holds(e, c) > 0 {
			return true
		}
	}
	return false
}

// apply takes a step: the new revision's share goes into a new Anchor entry (anchor step) or, for
// a tail or leftover step, standalone pods into the newest anchor and scaling-group replicas into a
// new Tail entry; the same is taken from the old revision's entries (standalone pods from the
// oldest anchors first, scaling-group replicas as groupTake picks them); old entries left with nothing changed
// move to the new revision in place (same epoch, same PodGangs) and empty ones go.
func apply(entries []Entry, u Update, kind StepKind, take map[string]int32) ([]Entry, []string, map[string][]int32) {
	out := clone(entries)
	taken := map[string][]int32{}
	latest := ""
	newestAnchor := -1
	for i, e := range out {
		if e.PodCliqueSetGenerationHash == u.Hash && holdsScope(e, u.Scope) {
			latest = e.Epoch
			if e.Role == grovev1alpha1.PodGangRoleAnchor {
				newestAnchor = i
			}
		}
	}
	epoch := NextEpoch(out, u.Now)
	created := Entry{Epoch: epoch, PodCliqueSetGenerationHash: u.Hash, Role: grovev1alpha1.PodGangRoleTail}
	if kind == AnchorStep || newestAnchor < 0 {
		created.Role = grovev1alpha1.PodGangRoleAnchor
	}
	if latest != "" {
		created.DependsOn = []string{latest}
	}
	inFlight := []string{epoch}
	for _, c := range u.Scope {
		n := take[c.Key]
		if n == 0 {
			continue
		}
		switch {
		case c.Group:
			taken[c.Key] = groupTake(u, c, entries, n)
			addIndices(&created, c.Key, taken[c.Key])
			drainIndices(out, u.Hash, c, taken[c.Key])
			continue
		case created.Role == grovev1alpha1.PodGangRoleAnchor:
			setCount(&created, c.Key, n)
		default:
			a := &out[newestAnchor]
			setCount(a, c.Key, a.PodCliques[c.Key]+n)
		}
		drain(out, u.Hash, c, n)
	}
	if !empty(created) {
		out = append(out, created)
	} else {
		inFlight = []string{out[newestAnchor].Epoch}
	}
	return reconverge(out, u.Scope, u.Hash), inFlight, taken
}

// groupTake are the n replicas of scaling group c a step takes to the new revision: of those no
// entry at the new revision holds, the unavailable ones first (taking them costs no capacity:
// a replica broken, or never handed its step's gang by an operator that stopped in between),
// then by index.
func groupTake(u Update, c Component, entries []Entry, n int32) []int32 {
	isNew := map[int32]bool{}
	for _, e := range entries {
		if e.PodCliqueSetGenerationHash == u.Hash {
			for _, j := range e.PCSGReplicaIndices[c.Key] {
				isNew[j] = true
			}
		}
	}
	var down, up []int32
	for j := range c.Replicas {
		switch {
		case isNew[j]:
		case slices.Contains(u.Observed.Available[c.Key], j):
			up = append(up, j)
		default:
			down = append(down, j)
		}
	}
	taken := append(down, up...)
	return slices.Sorted(slices.Values(taken[:min(int(max(n, 0)), len(taken))]))
}

// drainIndices takes scaling-group replicas from whichever old revision's entry holds them.
func drainIndices(out []Entry, hash string, c Component, taken []int32) {
	for i := range out {
		if out[i].PodCliqueSetGenerationHash != hash {
			setIndices(&out[i], c.Key, slices.DeleteFunc(slices.Clone(out[i].PCSGReplicaIndices[c.Key]), func(j int32) bool { return slices.Contains(taken, j) }))
		}
	}
}

// drain takes n pods of standalone component c from the old revisions' entries: from the anchors
// holding its lowest indices first (the indices the new revision takes over: the most recent old
// revision's, in epoch order — with one old revision, the oldest anchor first).
func drain(out []Entry, hash string, c Component, n int32) {
	order := make([]int, len(out))
	for i := range out {
		order[i] = i
	}
	less := shareOrder(out)
	slices.SortStableFunc(order, func(a, b int) int { return less(out[a], out[b]) })
	for _, i := range order {
		e := &out[i]
		if e.PodCliqueSetGenerationHash == hash {
			continue
		}
		if e.Role != grovev1alpha1.PodGangRoleAnchor || n == 0 {
			continue
		}
		t := min(e.PodCliques[c.Key], n)
		if t > 0 {
			setCount(e, c.Key, e.PodCliques[c.Key]-t)
			n -= t
		}
	}
}

// reconverge moves the old revision's entries that hold nothing of the changed components to the
// new revision in place (their pods did not change) and drops those left empty.
func reconverge(entries []Entry, scope []Component, hash string) []Entry {
	out := clone(entries)
	out = slices.DeleteFunc(out, func(e Entry) bool { return e.PodCliqueSetGenerationHash != hash && empty(e) })
	for i := range out {
		if out[i].PodCliqueSetGenerationHash != hash && !holdsScope(out[i], scope) {
			out[i].PodCliqueSetGenerationHash = hash
			for k, n := range out[i].PodCliques {
				if n == 0 {
					delete(out[i].PodCliques, k)
				}
			}
		}
	}
	return out
}

// withoutOldScope removes what the old revision's entries still hold of the changed components
// once the new revision holds all of them (more than the components' sizes: pods scaled away).
func withoutOldScope(entries []Entry, scope []Component, hash string) []Entry {
	out := clone(entries)
	for i := range out {
		if out[i].PodCliqueSetGenerationHash == hash {
			continue
		}
		for _, c := range scope {
			if c.Group {
				setIndices(&out[i], c.Key, nil)
			} else {
				delete(out[i].PodCliques, c.Key)
			}
		}
	}
	return out
}

// SingleRevision reports whether every entry is at the revision.
func SingleRevision(entries []Entry, hash string) bool {
	for _, e := range entries {
		if e.PodCliqueSetGenerationHash != hash {
			return false
		}
	}
	return true
}

// inFlight is the newest entry of the new revision holding a changed component (the step in
// flight), if any.
func inFlight(entries []Entry, hash string) []string {
	var latest string
	for _, e := range entries {
		if e.PodCliqueSetGenerationHash == hash {
			latest = e.Epoch
		}
	}
	if latest == "" {
		return nil
	}
	return []string{latest}
}

func sameEntry(a, b Entry) bool {
	return a.Epoch == b.Epoch && a.PodCliqueSetGenerationHash == b.PodCliqueSetGenerationHash && a.Role == b.Role &&
		fmt.Sprint(a.PodCliques) == fmt.Sprint(b.PodCliques) && fmt.Sprint(a.PCSGReplicaIndices) == fmt.Sprint(b.PCSGReplicaIndices) &&
		slices.Equal(a.DependsOn, b.DependsOn)
}
