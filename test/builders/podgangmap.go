package builders

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// PodGangMapBuilder builds a PodGangMap: entries are added with Anchor or Tail, and the methods
// after one (Pods, GroupReplicas, DependsOn) fill in that entry.
type PodGangMapBuilder struct{ obj *grovev1alpha1.PodGangMap }

// PodGangMap starts a PodGangMap of no entries and no labels, for replica 0
// (spec.podCliqueSetReplicaIndex).
func PodGangMap(namespace, name string) *PodGangMapBuilder {
	return &PodGangMapBuilder{obj: &grovev1alpha1.PodGangMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}}
}

// Label sets a label.
func (b *PodGangMapBuilder) Label(key, value string) *PodGangMapBuilder {
	if b.obj.Labels == nil {
		b.obj.Labels = map[string]string{}
	}
	b.obj.Labels[key] = value
	return b
}

// OfReplica labels it as the map of PodCliqueSet replica i, as its PodCliqueSet does.
func (b *PodGangMapBuilder) OfReplica(pcs string, i string) *PodGangMapBuilder {
	return b.Label(grovev1alpha1.LabelPartOf, pcs).Label(grovev1alpha1.LabelPodCliqueSetReplicaIndex, i)
}

// Anchor adds an Anchor entry of that epoch and template revision ("" for none).
func (b *PodGangMapBuilder) Anchor(epoch, generationHash string) *PodGangMapBuilder {
	return b.entry(epoch, generationHash, grovev1alpha1.PodGangRoleAnchor)
}

// Tail adds a Tail entry of that epoch and template revision ("" for none).
func (b *PodGangMapBuilder) Tail(epoch, generationHash string) *PodGangMapBuilder {
	return b.entry(epoch, generationHash, grovev1alpha1.PodGangRoleTail)
}

// Pods puts n pods of the standalone PodClique named clique in the last entry added.
func (b *PodGangMapBuilder) Pods(clique string, n int32) *PodGangMapBuilder {
	e := b.last()
	if e.PodCliques == nil {
		e.PodCliques = map[string]int32{}
	}
	e.PodCliques[clique] = n
	return b
}

// GroupReplicas puts these replicas of the scaling group named group (its template name) in the
// last entry added.
func (b *PodGangMapBuilder) GroupReplicas(group string, indices ...int32) *PodGangMapBuilder {
	e := b.last()
	if e.PCSGReplicaIndices == nil {
		e.PCSGReplicaIndices = map[string][]int32{}
	}
	e.PCSGReplicaIndices[group] = indices
	return b
}

// DependsOn sets the epochs the last entry added waits for.
func (b *PodGangMapBuilder) DependsOn(epochs ...string) *PodGangMapBuilder {
	b.last().DependsOn = epochs
	return b
}

// Obj returns the PodGangMap.
func (b *PodGangMapBuilder) Obj() *grovev1alpha1.PodGangMap { return b.obj }

func (b *PodGangMapBuilder) entry(epoch, generationHash string, role grovev1alpha1.PodGangEntryRole) *PodGangMapBuilder {
	b.obj.Spec.Entries = append(b.obj.Spec.Entries, grovev1alpha1.PodGangEntry{Epoch: epoch, PodCliqueSetGenerationHash: generationHash, Role: role})
	return b
}

func (b *PodGangMapBuilder) last() *grovev1alpha1.PodGangEntry {
	return &b.obj.Spec.Entries[len(b.obj.Spec.Entries)-1]
}
