package coherent

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

func TestEntriesMakeUpstreamsPodGangsAndTheirOrder(t *testing.T) {
	gangs := Gangs("case", 0, Bootstrap(all, "v1", "100"))

	var names []string
	for _, g := range gangs {
		names = append(names, g.Name)
	}
	assert.Equal(t, []string{"case-0-100", "case-0-101-decode-1", "case-0-101-decode-2", "case-0-101-prefill-1", "case-0-101-prefill-2", "case-0-101-prefill-3"}, names,
		"an anchor is one PodGang; a tail one per scaling-group replica; the empty scale-out entry none")
	assert.Equal(t, map[string]int32{frontend.Key: 5}, gangs[0].Standalone)
	assert.Equal(t, map[string][]int32{"prefill": {0}, "decode": {0}}, gangs[0].Groups)
	assert.Empty(t, gangs[0].After)
	assert.Equal(t, []string{"case-0-100"}, gangs[1].After, "a tail replica waits for its anchor to be scheduled")
	require.NotNil(t, GroupReplicaGang(gangs, "prefill", 2))
	assert.Equal(t, "case-0-101-prefill-2", GroupReplicaGang(gangs, "prefill", 2).Name)
	assert.Nil(t, GroupReplicaGang(gangs, "prefill", 4))
}

func TestAStandaloneCliquesPodsAreSharedNewRevisionFirst(t *testing.T) {
	start := Bootstrap(all, "v1", "100")
	step := Next(Update{Entries: start, Hash: "v2", Scope: all, Observed: healthy(start, "v1", all), Now: t0})
	gangs := Gangs("case", 0, step.Entries)

	shares := Shares(gangs, frontend.Key, "v2")

	anchor := "case-0-" + step.InFlight[0]
	assert.Equal(t, []Share{
		{PodGang: anchor, From: 0, Replicas: 2, Current: true},
		{PodGang: "case-0-100", From: 2, Replicas: 3, Current: false},
	}, shares, "the step's anchor takes the first indices (the pods it replaces); the old anchor keeps the rest")
	assert.Equal(t, anchor, ShareOf(shares, 1).PodGang)
	assert.Equal(t, "case-0-100", ShareOf(shares, 4).PodGang)
	assert.Nil(t, ShareOf(shares, 5))
}

func TestASecondUpdateInFlightKeepsTheOlderRevisionsPodsWhereTheyWere(t *testing.T) {
	// v1's anchor (epoch 100) and v2's two anchors: v2 was the newest, its pods on the lowest indices.
	gangs := Gangs("case", 0, []Entry{
		{Epoch: "100", PodCliqueSetGenerationHash: "v1", Role: grovev1alpha1.PodGangRoleAnchor, PodCliques: map[string]int32{frontend.Key: 1}},
		{Epoch: "200", PodCliqueSetGenerationHash: "v2", Role: grovev1alpha1.PodGangRoleAnchor, PodCliques: map[string]int32{frontend.Key: 2}},
		{Epoch: "300", PodCliqueSetGenerationHash: "v2", Role: grovev1alpha1.PodGangRoleAnchor, PodCliques: map[string]int32{frontend.Key: 2}},
	})
	atV2 := Shares(gangs, frontend.Key, "v2")

	atV3 := Shares(gangs, frontend.Key, "v3")

	assert.Equal(t, []string{"case-0-200 0-1", "case-0-300 2-3", "case-0-100 4-4"}, spans(atV2))
	assert.Equal(t, spans(atV2), spans(atV3), "v3 has no entry yet: every pod keeps its gang")
}

func spans(shares []Share) []string {
	var out []string
	for _, s := range shares {
		out = append(out, fmt.Sprintf("%s %d-%d", s.PodGang, s.From, s.From+s.Replicas-1))
	}
	return out
}

func TestAStepOfASecondUpdateReplacesTheIndicesItTakesAndMovesNoOtherPod(t *testing.T) {
	entries := []Entry{
		{Epoch: "100", PodCliqueSetGenerationHash: "v1", Role: grovev1alpha1.PodGangRoleAnchor, PodCliques: map[string]int32{frontend.Key: 1}},
		{Epoch: "200", PodCliqueSetGenerationHash: "v2", Role: grovev1alpha1.PodGangRoleAnchor, PodCliques: map[string]int32{frontend.Key: 2}},
		{Epoch: "300", PodCliqueSetGenerationHash: "v2", Role: grovev1alpha1.PodGangRoleAnchor, PodCliques: map[string]int32{frontend.Key: 2}},
	}
	before := spans(Shares(Gangs("case", 0, entries), frontend.Key, "v3"))
	scope := []Component{frontend}

	d := Next(Update{Entries: entries, Hash: "v3", Scope: scope, Observed: healthy(entries, "v3", scope), Now: t0})

	require.Equal(t, AnchorStep, d.Step)
	after := spans(Shares(Gangs("case", 0, d.Entries), frontend.Key, "v3"))
	assert.Equal(t, []string{"case-0-200 0-1", "case-0-300 2-3", "case-0-100 4-4"}, before)
	assert.Equal(t, []string{"case-0-" + d.InFlight[0] + " 0-1", "case-0-300 2-3", "case-0-100 4-4"}, after,
		"the new anchor takes indices 0-1 (the pods it replaces); the other old pods keep their gangs")
}

// The PodCliqueSet writes a step into the map before it gives the PodClique the new template: in
// between, the PodClique (still at v2) must divide its pods as it will at v3, or it would move
// (replace) pods of other indices than the step takes over — after a first update its pods sit
// one per anchor, and a v2-first division shifted every one of them.
func TestAPodCliqueBehindTheMapDividesItsPodsAsItWillOnceItCatchesUp(t *testing.T) {
	var entries []Entry
	for i := range 5 { // frontend's 5 pods, one per v2 anchor
		entries = append(entries, Entry{Epoch: fmt.Sprint(200 + i), PodCliqueSetGenerationHash: "v2", Role: grovev1alpha1.PodGangRoleAnchor,
			PodCliques: map[string]int32{frontend.Key: 1}})
	}
	scope := []Component{frontend}
	d := Next(Update{Entries: entries, Hash: "v3", Scope: scope, Observed: healthy(entries, "v3", scope), Now: t0})
	require.Equal(t, AnchorStep, d.Step)
	before := Shares(Gangs("case", 0, entries), frontend.Key, "v2")

	behind := Shares(Gangs("case", 0, d.Entries), frontend.Key, "v2")
	caughtUp := Shares(Gangs("case", 0, d.Entries), frontend.Key, "v3")

	assert.Equal(t, spans(caughtUp), spans(behind), "the same division before and after the PodClique catches up")
	var moved []int32
	for i := range int32(frontend.Replicas) {
		if ShareOf(before, i).PodGang != ShareOf(behind, i).PodGang {
			moved = append(moved, i)
		}
	}
	assert.Equal(t, []int32{0, 1}, moved, "only the indices the step takes over (minAvailable 2) change gang\nbefore %v\nafter  %v", spans(before), spans(behind))
	for _, s := range behind {
		assert.Equal(t, s.PodGang != "case-0-"+d.InFlight[0], s.Current, "share %s: only the v2 shares are the v2 PodClique's", s.PodGang)
	}
}
