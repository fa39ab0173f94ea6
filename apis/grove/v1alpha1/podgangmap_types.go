package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=pgm
// +kubebuilder:printcolumn:name="Replica",type=integer,JSONPath=`.spec.podCliqueSetReplicaIndex`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PodGangMap records, for one replica of a PodCliqueSet with the Coherent update strategy, which
// PodGangs exist and what each holds: the plan a Coherent update follows, written before the
// PodGangs and pods it describes, so a restarted operator continues the same step. It is named
// <podcliqueset>-<replica>, written only by grove-operator, and has upstream Grove's wire format
// (grove.io/v1alpha1 PodGangMap, its PR #778).
type PodGangMap struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec PodGangMapSpec `json:"spec"`
}

// +kubebuilder:object:root=true

// PodGangMapList is a list of PodGangMaps.
type PodGangMapList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGangMap `json:"items"`
}

// PodGangMapSpec is the set of gang entries of one PodCliqueSet replica.
type PodGangMapSpec struct {
	// PodCliqueSetReplicaIndex is the replica the map belongs to.
	// +kubebuilder:validation:Minimum=0
	PodCliqueSetReplicaIndex int32 `json:"podCliqueSetReplicaIndex"`

	// Entries are the replica's gang entries, one per epoch. An Anchor entry is one PodGang (its
	// standalone pods and scaling-group replicas together); a Tail or ScaleOut entry is one
	// PodGang per scaling-group replica it holds.
	// +listType=map
	// +listMapKey=epoch
	// +kubebuilder:validation:MaxItems=1024
	Entries []PodGangEntry `json:"entries"`
}

// PodGangEntryRole is what an entry is for.
// +kubebuilder:validation:Enum=Anchor;Tail;ScaleOut
type PodGangEntryRole string

const (
	// PodGangRoleAnchor is a gang of standalone pods and scaling-group replicas scheduled together:
	// a replica's first, and each Coherent step's minimum viable unit.
	PodGangRoleAnchor PodGangEntryRole = "Anchor"
	// PodGangRoleTail holds scaling-group replicas beyond an anchor's, each its own gang, placed
	// once the epochs it depends on are scheduled.
	PodGangRoleTail PodGangEntryRole = "Tail"
	// PodGangRoleScaleOut holds scaling-group replicas added by scaling out.
	PodGangRoleScaleOut PodGangEntryRole = "ScaleOut"
)

// PodGangEntry is one scheduling batch of a replica, identified by its epoch.
type PodGangEntry struct {
	// Epoch identifies the entry and orders it among the others: a decimal integer, greater for
	// later entries. Every PodGang made from the entry carries it (label grove.io/epoch) and in
	// its name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=20
	// +kubebuilder:validation:Pattern=`^[0-9]+$`
	Epoch string `json:"epoch"`

	// PodCliqueSetGenerationHash is the PodCliqueSet template revision the entry's pods run.
	// +kubebuilder:validation:MaxLength=64
	PodCliqueSetGenerationHash string `json:"podCliqueSetGenerationHash"`

	// Role is Anchor, Tail or ScaleOut.
	Role PodGangEntryRole `json:"role"`

	// AnchorIndex is accepted as written by upstream Grove's alpha.12 and alpha.13 (an anchor's
	// index within its revision) and never written: anchors are ordered by epoch.
	// +optional
	AnchorIndex *int32 `json:"anchorIndex,omitempty"`

	// PodCliques maps a standalone PodClique's name to the number of its pods in the entry (an
	// Anchor's only).
	// +optional
	PodCliques map[string]int32 `json:"podCliques,omitempty"`

	// PCSGReplicaIndices maps a scaling group's name in the template to the indices of its
	// replicas the entry holds.
	// +optional
	PCSGReplicaIndices map[string][]int32 `json:"pcsgReplicaIndices,omitempty"`

	// DependsOn are the epochs whose PodGangs must have been scheduled before this entry's pods
	// are released to the scheduler.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	DependsOn []string `json:"dependsOn,omitempty"`
}
