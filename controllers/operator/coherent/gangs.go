package coherent

import (
	"slices"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// Gang is one PodGang a PodGangMap entry makes: an Anchor entry makes one with its standalone
// pods and scaling-group replicas; a Tail or ScaleOut entry one per scaling-group replica.
type Gang struct {
	// Name is upstream's: <pcs>-<replica>-<epoch> for an anchor,
	// <pcs>-<replica>-<epoch>-<group>-<index> for the others.
	Name  string
	Entry Entry
	// Standalone maps a standalone PodClique to its pod count in the gang.
	Standalone map[string]int32
	// Groups maps a scaling group (its name in the template) to the replicas in the gang.
	Groups map[string][]int32
	// After are the PodGangs that must have been scheduled before this one's pods are released.
	After []string
}

// Gangs lists the PodGangs a replica's entries make, oldest epoch first, each with the PodGangs
// it waits for. Entries that hold nothing make none.
func Gangs(pcs string, replica int, entries []Entry) []Gang {
	byEpoch := map[string][]string{}
	var out []Gang
	for _, e := range Sorted(entries) {
		if e.Role == grovev1alpha1.PodGangRoleAnchor {
			if empty(e) {
				continue
			}
			g := Gang{Name: grovev1alpha1.AnchorPodGangName(pcs, replica, e.Epoch), Entry: e, Standalone: map[string]int32{}, Groups: map[string][]int32{}}
			for k, n := range e.PodCliques {
				if n > 0 {
					g.Standalone[k] = n
				}
			}
			for k, ix := range e.PCSGReplicaIndices {
				if len(ix) > 0 {
					g.Groups[k] = slices.Clone(ix)
				}
			}
			out = append(out, g)
			byEpoch[e.Epoch] = append(byEpoch[e.Epoch], g.Name)
			continue
		}
		for _, k := range keysOf(e.PCSGReplicaIndices) {
			for _, j := range e.PCSGReplicaIndices[k] {
				g := Gang{Name: grovev1alpha1.EntryPodGangName(pcs, replica, e.Epoch, k, int(j)), Entry: e, Groups: map[string][]int32{k: {j}}}
				out = append(out, g)
				byEpoch[e.Epoch] = append(byEpoch[e.Epoch], g.Name)
			}
		}
	}
	for i := range out {
		for _, dep := range out[i].Entry.DependsOn {
			out[i].After = append(out[i].After, byEpoch[dep]...)
		}
	}
	return out
}

// Share is the part of a standalone PodClique's pods one PodGang holds: the pods of indices
// [From, From+Replicas).
type Share struct {
	PodGang        string
	From, Replicas int32
	// Current: the share's pods run the PodClique's template (its entry is at the revision the
	// PodClique is at); the pods of an older share are kept while they run and not recreated.
	Current bool
	// After are the PodGangs that must have been scheduled before the share's pods are released.
	After []string
}

// Shares divides a standalone PodClique's pod indices among the PodGangs of a replica's entries:
// the entries of the newest revision first (the pods an update brought up take the lowest
// indices, so each step replaces the next indices), then the older revisions, the most recent
// first — the order they had while each was the newest, so a second update in flight moves no pod
// between the gangs of older revisions — each revision's entries in epoch order. The division is
// the map's alone: a PodClique whose template has not caught up with the map's newest revision
// yet (the map is written first) divides its pods as it will once it has, so only the indices
// the step takes over change gangs. hash is the PodClique's revision: the shares at it are
// Current.
func Shares(gangs []Gang, pclq, hash string) []Share {
	entries := make([]Entry, len(gangs))
	for i, g := range gangs {
		entries[i] = g.Entry
	}
	order := shareOrder(entries)
	ordered := slices.Clone(gangs)
	slices.SortStableFunc(ordered, func(a, b Gang) int { return order(a.Entry, b.Entry) })
	var out []Share
	from := int32(0)
	for _, g := range ordered {
		n := g.Standalone[pclq]
		if n == 0 {
			continue
		}
		out = append(out, Share{PodGang: g.Name, From: from, Replicas: n, Current: g.Entry.PodCliqueSetGenerationHash == hash, After: g.After})
		from += n
	}
	return out
}

// shareOrder orders entries as a standalone clique's pod indices are divided among them: the
// revisions newest first (a revision is as new as its greatest epoch: every entry an update
// records has a greater epoch than the map's others), each revision's entries in epoch order.
func shareOrder(entries []Entry) func(a, b Entry) int {
	newest := map[string]string{} // revision → its greatest epoch
	for _, e := range entries {
		if h := e.PodCliqueSetGenerationHash; compareEpochs(e.Epoch, newest[h]) > 0 {
			newest[h] = e.Epoch
		}
	}
	return func(a, b Entry) int {
		ra, rb := newest[a.PodCliqueSetGenerationHash], newest[b.PodCliqueSetGenerationHash]
		if ra == rb {
			return compareEpochs(a.Epoch, b.Epoch)
		}
		return compareEpochs(rb, ra)
	}
}

// ShareOf is the share holding pod index i (nil when none does: beyond the entries' count).
func ShareOf(shares []Share, i int32) *Share {
	for k := range shares {
		if s := &shares[k]; i >= s.From && i < s.From+s.Replicas {
			return s
		}
	}
	return nil
}

// GroupReplicaGang is the PodGang holding a scaling group's replica index (nil when no entry
// holds it).
func GroupReplicaGang(gangs []Gang, group string, index int32) *Gang {
	for k := range gangs {
		if slices.Contains(gangs[k].Groups[group], index) {
			return &gangs[k]
		}
	}
	return nil
}
