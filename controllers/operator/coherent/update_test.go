package coherent

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// The PodCliqueSet of upstream's coherent-update-case*.yaml samples (one replica): frontend F, 5
// pods, minAvailable 2; prefill P, 4 replicas, minAvailable 1; decode D, 3 replicas, minAvailable
// 1; Coherent's default budgets (maxUnavailable = minAvailable).
var (
	frontend = Component{Key: "case-0-frontend", Replicas: 5, MinAvailable: 2, MaxUnavailable: 2}
	prefill  = Component{Key: "prefill", Group: true, Replicas: 4, MinAvailable: 1, MaxUnavailable: 1}
	decode   = Component{Key: "decode", Group: true, Replicas: 3, MinAvailable: 1, MaxUnavailable: 1}
	all      = []Component{frontend, prefill, decode}
)

var t0 = time.Unix(1_000, 0)

// healthy is what a replica whose every gang is Ready and every pod Ready shows.
func healthy(entries []Entry, hash string, components []Component) Observed {
	o := Observed{ReadyEpochs: map[string]bool{}, UpdatedReady: map[string]int32{}, OldReady: map[string]int32{}, Available: map[string][]int32{}, Whole: map[string][]int32{}}
	for _, e := range entries {
		o.ReadyEpochs[e.Epoch] = true
		for _, c := range components {
			if c.Group {
				o.Available[c.Key] = append(o.Available[c.Key], e.PCSGReplicaIndices[c.Key]...)
				o.Whole[c.Key] = append(o.Whole[c.Key], e.PCSGReplicaIndices[c.Key]...)
			} else if e.PodCliqueSetGenerationHash == hash {
				o.UpdatedReady[c.Key] += e.PodCliques[c.Key]
			} else {
				o.OldReady[c.Key] += e.PodCliques[c.Key]
			}
		}
	}
	return o
}

// layout prints entries as "Role{content}" in epoch order, epochs as offsets from the first.
func layout(entries []Entry, hash string) []string {
	var out []string
	for _, e := range Sorted(entries) {
		var parts []string
		for _, k := range keysOf(e.PodCliques) {
			parts = append(parts, fmt.Sprintf("%s:%d", strings.TrimPrefix(k, "case-0-"), e.PodCliques[k]))
		}
		for _, k := range keysOf(e.PCSGReplicaIndices) {
			parts = append(parts, fmt.Sprintf("%s%v", k, e.PCSGReplicaIndices[k]))
		}
		rev := "new"
		if e.PodCliqueSetGenerationHash != hash {
			rev = "old"
		}
		out = append(out, fmt.Sprintf("%s(%s){%s}", e.Role, rev, strings.Join(parts, " ")))
	}
	return out
}

// totals counts what the entries hold of each component.
func totals(entries []Entry, components []Component) map[string]int32 {
	out := map[string]int32{}
	for _, e := range entries {
		for _, c := range components {
			out[c.Key] += holds(e, c)
		}
	}
	return out
}

// runUpdate runs a replica's update to its end with everything Ready between steps, checking at
// each step that nothing is lost and no component loses more than its budget; it returns the
// steps taken and the final entries.
func runUpdate(t *testing.T, entries []Entry, hash string, scope, components []Component) ([]StepKind, []Entry) {
	t.Helper()
	var kinds []StepKind
	now := t0
	for range 50 {
		now = now.Add(time.Second)
		d := Next(Update{Entries: entries, Hash: hash, Scope: scope, Observed: healthy(entries, hash, components), Now: now})
		require.Empty(t, d.Waiting, "a healthy replica never waits")
		if d.Done {
			return kinds, entries
		}
		require.True(t, d.Changed)
		assert.Equal(t, totals(entries, components), totals(d.Entries, components), "a step moves pods and replicas, it never loses or adds one")
		before, after := healthy(entries, hash, components), healthy(d.Entries, hash, components)
		for _, c := range scope {
			if c.Group {
				moved := 0
				old := map[int32]bool{}
				for _, e := range entries {
					if e.PodCliqueSetGenerationHash != hash {
						for _, j := range e.PCSGReplicaIndices[c.Key] {
							old[j] = true
						}
					}
				}
				for _, e := range d.Entries {
					if e.PodCliqueSetGenerationHash == hash {
						for _, j := range e.PCSGReplicaIndices[c.Key] {
							if old[j] {
								moved++
							}
						}
					}
				}
				assert.LessOrEqual(t, int32(moved), c.MaxUnavailable, "%s: replicas replaced by one step", c.Key)
				continue
			}
			assert.LessOrEqual(t, before.OldReady[c.Key]-after.OldReady[c.Key], c.MaxUnavailable, "%s: pods replaced by one step", c.Key)
		}
		if d.Step != "" {
			kinds = append(kinds, d.Step)
		}
		entries = d.Entries
	}
	t.Fatal("the update did not end in 50 passes")
	return nil, nil
}

func TestACoherentUpdateFollowsUpstreamsStepsForEachSampleCase(t *testing.T) {
	for _, tc := range []struct {
		name  string
		scope []Component
		steps []StepKind
		want  []string
	}{
		{name: "case 1: frontend, prefill and decode changed: two anchor steps, each with a prefill tail, and decode's and the frontend's leftover",
			scope: all, steps: []StepKind{AnchorStep, TailStep, AnchorStep, TailStep, LeftoverStep},
			want: []string{"Anchor(new){frontend:2 decode[0] prefill[0]}", "Tail(new){prefill[1]}", "Anchor(new){frontend:3 decode[1] prefill[2]}",
				"Tail(new){prefill[3]}", "Tail(new){decode[2]}"}},
		{name: "case 2: prefill and decode changed: three anchors of one of each, prefill's leftover; the frontend keeps its pods and its gang",
			scope: []Component{prefill, decode}, steps: []StepKind{AnchorStep, AnchorStep, AnchorStep, LeftoverStep},
			want: []string{"Anchor(new){frontend:5}", "Anchor(new){decode[0] prefill[0]}", "Anchor(new){decode[1] prefill[1]}",
				"Anchor(new){decode[2] prefill[2]}", "Tail(new){prefill[3]}"}},
		{name: "case 3: only the frontend changed: one anchor of minAvailable, then the rest within its budget; prefill and decode keep their gangs",
			scope: []Component{frontend}, steps: []StepKind{AnchorStep, TailStep, TailStep},
			want: []string{"Anchor(new){decode[0] prefill[0]}", "Tail(new){decode[1 2] prefill[1 2 3]}", "Anchor(new){frontend:5}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := Bootstrap(all, "v1", NextEpoch(nil, t0))

			steps, end := runUpdate(t, start, "v2", tc.scope, all)

			assert.Equal(t, tc.steps, steps)
			assert.Equal(t, tc.want, layout(end, "v2"))
			for _, e := range end {
				if e.Epoch == start[0].Epoch || e.Epoch == start[1].Epoch {
					assert.False(t, holdsScope(e, tc.scope), "an entry kept from before the update (same epoch, same PodGangs) holds only unchanged components")
				}
			}
		})
	}
}

func TestBootstrapIsAnAnchorATailAndAnEmptyScaleOut(t *testing.T) {
	got := Bootstrap(all, "v1", "100")

	assert.Equal(t, []string{"Anchor(new){frontend:5 decode[0] prefill[0]}", "Tail(new){decode[1 2] prefill[1 2 3]}", "ScaleOut(new){}"}, layout(got, "v1"))
	assert.Equal(t, []string{"100", "101", "102"}, []string{got[0].Epoch, got[1].Epoch, got[2].Epoch})
	assert.Equal(t, []string{"100"}, got[1].DependsOn, "the tail is placed after the anchor")
	assert.Equal(t, []string{"Anchor(new){frontend:5}"}, layout(Bootstrap([]Component{frontend}, "v1", "100"), "v1"), "no scaling group: no tail, no scale-out entry")
}

func TestAStepWaitsForWhatItNeedsAndSaysWhat(t *testing.T) {
	start := Bootstrap(all, "v1", "100")
	first := Next(Update{Entries: start, Hash: "v2", Scope: all, Observed: healthy(start, "v1", all), Now: t0})
	require.Equal(t, AnchorStep, first.Step)
	anchor := first.InFlight[0]
	for _, tc := range []struct {
		name    string
		observe func(o *Observed)
		waiting []string
		// takes is an entry the step records ("": not checked).
		takes string
	}{
		{name: "the step's gang is not Ready yet", observe: func(o *Observed) { o.ReadyEpochs[anchor] = false },
			waiting: []string{"the PodGangs of epoch " + anchor + " to be Ready"}},
		{name: "a frontend pod it brought up is not Ready", observe: func(o *Observed) { o.UpdatedReady[frontend.Key] = 1 },
			waiting: []string{"case-0-frontend: 1 of 2 pods at the new revision Ready"}},
		{name: "the next step would take prefill below its budget: the replica the last step brought up is down",
			observe: func(o *Observed) { o.Available["prefill"], o.Whole["prefill"] = []int32{1, 2, 3}, []int32{1, 2, 3} },
			waiting: []string{"prefill: 3 Ready; the next step takes 1 of them down, which would leave fewer than replicas − maxUnavailable (3)"}},
		{name: "a prefill replica it brought up has a pod not Ready yet (above minAvailable)",
			observe: func(o *Observed) { o.Whole["prefill"] = []int32{1, 2, 3} },
			waiting: []string{"prefill: 0 of 1 replicas at the new revision wholly Ready"}},
		{name: "the replica it replaces next is the one down: the step goes ahead",
			observe: func(o *Observed) { o.Available["prefill"] = []int32{0, 2, 3} }},
		{name: "an old replica down, though not next by index, is taken first: the step goes ahead",
			observe: func(o *Observed) { o.Available["prefill"] = []int32{0, 1, 2} }, takes: "Tail(new){prefill[3]}"},
		{name: "an old frontend pod not Ready is taken down first: the step goes ahead",
			observe: func(o *Observed) { o.OldReady[frontend.Key] = 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := healthy(first.Entries, "v2", all)
			tc.observe(&o)

			d := Next(Update{Entries: first.Entries, Hash: "v2", Scope: all, Observed: o, Now: t0.Add(time.Second)})

			if tc.waiting == nil {
				assert.Empty(t, d.Waiting)
				assert.Equal(t, TailStep, d.Step)
				if tc.takes != "" {
					assert.Contains(t, layout(d.Entries, "v2"), tc.takes)
				}
				return
			}
			for _, w := range tc.waiting {
				assert.Contains(t, d.Waiting, w)
			}
			assert.False(t, d.Changed, "a waiting step records nothing")
			assert.Equal(t, []string{anchor}, d.InFlight, "the step in flight is still the anchor's")
		})
	}
}

func TestAStepTakesTheScalingGroupReplicaThatIsDownBeforeOneThatServes(t *testing.T) {
	// A group of 2 replicas, budget 1. An update to v2 recorded its second step (replica 1 in a
	// new anchor) and the operator stopped before the group handed replica 1 that gang; then v3
	// came. Replica 1's pods are in a gang the map no longer has, so it is not available; replica
	// 0 serves. Taking replica 0 first would leave none: the update must take replica 1.
	group := Component{Key: "prefill", Group: true, Replicas: 2, MinAvailable: 1, MaxUnavailable: 1}
	entries := []Entry{
		{Epoch: "100", PodCliqueSetGenerationHash: "v2", Role: grovev1alpha1.PodGangRoleAnchor, PCSGReplicaIndices: map[string][]int32{"prefill": {0}}},
		{Epoch: "200", PodCliqueSetGenerationHash: "v2", Role: grovev1alpha1.PodGangRoleAnchor, PCSGReplicaIndices: map[string][]int32{"prefill": {1}}},
	}
	o := Observed{ReadyEpochs: map[string]bool{"100": true}, Available: map[string][]int32{"prefill": {0}}, Whole: map[string][]int32{"prefill": {0}}}

	d := Next(Update{Entries: entries, Hash: "v3", Scope: []Component{group}, Observed: o, Now: t0})

	require.Empty(t, d.Waiting)
	require.Equal(t, AnchorStep, d.Step)
	assert.Equal(t, []string{"Anchor(old){prefill[0]}", "Anchor(new){prefill[1]}"}, layout(d.Entries, "v3"),
		"replica 1 moves to the new revision; replica 0 keeps serving in its gang")

	// Replica 1 comes up at v3: the next step takes replica 0, and the update ends on v3.
	steps, end := runUpdate(t, d.Entries, "v3", []Component{group}, []Component{group})
	assert.Equal(t, []StepKind{AnchorStep}, steps)
	assert.Equal(t, []string{"Anchor(new){prefill[1]}", "Anchor(new){prefill[0]}"}, layout(end, "v3"))
}

func TestARecordedStepIsNotTakenTwice(t *testing.T) {
	start := Bootstrap(all, "v1", "100")
	first := Next(Update{Entries: start, Hash: "v2", Scope: all, Observed: healthy(start, "v1", all), Now: t0})
	require.True(t, first.Changed)
	// The operator recorded the step and was killed before acting: nothing of it exists.
	nothingYet := healthy(start, "v1", all)

	again := Next(Update{Entries: first.Entries, Hash: "v2", Scope: all, Observed: nothingYet, Now: t0.Add(time.Minute)})

	assert.False(t, again.Changed)
	assert.Equal(t, first.InFlight, again.InFlight)
	assert.Contains(t, again.Waiting, "to be Ready")
}

func TestASecondChangeDuringAnUpdateAddsToItsScopeAndEndsOnOneRevision(t *testing.T) {
	entries := Bootstrap(all, "v1", "100")
	// v2 changed prefill and decode; two steps are taken.
	for range 2 {
		d := Next(Update{Entries: entries, Hash: "v2", Scope: []Component{prefill, decode}, Observed: healthy(entries, "v2", all), Now: t0})
		require.True(t, d.Changed)
		entries = d.Entries
	}
	// v3 changes the frontend: prefill and decode stay in scope (entries of v1 still hold them).
	steps, end := runUpdate(t, entries, "v3", all, all)

	assert.NotEmpty(t, steps)
	assert.True(t, SingleRevision(end, "v3"))
	assert.Equal(t, map[string]int32{frontend.Key: 5, "prefill": 4, "decode": 3}, totals(end, all))
}

func TestAnIdleComponentHasNothingToRoll(t *testing.T) {
	idle := prefill
	idle.Replicas = 0
	components := []Component{frontend, idle, decode}
	steps, end := runUpdate(t, Bootstrap(components, "v1", "100"), "v2", components, components)

	assert.Equal(t, AnchorStep, steps[0])
	assert.Equal(t, map[string]int32{frontend.Key: 5, "decode": 3}, totals(end, []Component{frontend, decode}))
}

func TestNextEpochStaysAboveTheRecordedOnesWhenTheClockIsBehind(t *testing.T) {
	recorded := []Entry{{Epoch: "99999999999999999999"}}

	assert.Equal(t, "100000000000000000000", NextEpoch(recorded, t0))
	assert.Equal(t, fmt.Sprint(t0.UnixNano()), NextEpoch([]Entry{{Epoch: "5"}}, t0))
	assert.Equal(t, 1, compareEpochs("10", "9"), "epochs compare as numbers")
}

func TestSteadyScalingGrowsTheNewestAnchorAndTheScaleOutEntry(t *testing.T) {
	entries := Bootstrap(all, "v1", "100")
	for _, tc := range []struct {
		name string
		f, p int32
		want []string
	}{
		{name: "nothing changed", f: 5, p: 4, want: []string{"Anchor(new){frontend:5 decode[0] prefill[0]}", "Tail(new){decode[1 2] prefill[1 2 3]}", "ScaleOut(new){}"}},
		{name: "scaled out", f: 7, p: 6, want: []string{"Anchor(new){frontend:7 decode[0] prefill[0]}", "Tail(new){decode[1 2] prefill[1 2 3]}", "ScaleOut(new){prefill[4 5]}"}},
		{name: "scaled in", f: 3, p: 2, want: []string{"Anchor(new){frontend:3 decode[0] prefill[0]}", "Tail(new){decode[1 2] prefill[1]}", "ScaleOut(new){}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, p := frontend, prefill
			f.Replicas, p.Replicas = tc.f, tc.p

			got := Steady(entries, []Component{f, p, decode}, "v1", t0)

			assert.Equal(t, tc.want, layout(got, "v1"))
		})
	}
	assert.Equal(t, grovev1alpha1.PodGangRoleScaleOut, Steady(entries[:2], all, "v1", t0)[2].Role, "a missing scale-out entry is made")
}
