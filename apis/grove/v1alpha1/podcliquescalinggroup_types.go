package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=pcsg
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="MinAvail",type=integer,JSONPath=`.spec.minAvailable`
// +kubebuilder:printcolumn:name="Scheduled",type=integer,JSONPath=`.status.scheduledReplicas`
// +kubebuilder:printcolumn:name="Breached",type=string,JSONPath=`.status.conditions[?(@.type=="MinAvailableBreached")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PodCliqueScalingGroup scales a set of cliques of one PodCliqueSet replica together: each of
// its replicas holds one PodClique per member clique.
type PodCliqueScalingGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodCliqueScalingGroupSpec   `json:"spec"`
	Status PodCliqueScalingGroupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodCliqueScalingGroupList is a list of PodCliqueScalingGroups.
type PodCliqueScalingGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodCliqueScalingGroup `json:"items"`
}

// PodCliqueScalingGroupSpec is the desired state of a PodCliqueScalingGroup.
type PodCliqueScalingGroupSpec struct {
	// Replicas is the number of group replicas.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Replicas int32 `json:"replicas"`

	// MinAvailable is how many group replicas must stay healthy.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`

	// CliqueNames are the member cliques of the PodCliqueSet template.
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	CliqueNames []string `json:"cliqueNames"`

	// TerminationDelay is the effective gang-termination delay of this group (its own override
	// or the PodCliqueSet's); unset disables gang termination.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="must be a non-negative duration such as 30s, 90m or 1h30m"
	TerminationDelay *metav1.Duration `json:"terminationDelay,omitempty"`

	InheritedSpec `json:",inline"`
}

// PodCliqueScalingGroupStatus is the observed state of a PodCliqueScalingGroup.
type PodCliqueScalingGroupStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`

	// LastErrors are the errors of the last reconcile.
	// +optional
	LastErrors []LastError `json:"lastErrors,omitempty"`

	// Replicas is the number of group replicas created.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ScheduledReplicas is the number of group replicas whose PodCliques are all scheduled.
	ScheduledReplicas int32 `json:"scheduledReplicas"`

	// AvailableReplicas is the number of group replicas with no breached PodClique.
	AvailableReplicas int32 `json:"availableReplicas"`

	// UpdatedReplicas is the number of group replicas at the current template.
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// Selector selects the pods of the group, for the scale subresource.
	// +optional
	Selector *string `json:"selector,omitempty"`

	// Conditions are MinAvailableBreached and UpdateInProgress.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// CurrentPodCliqueSetGenerationHash is the PodCliqueSet generation hash fully realised here:
	// every PodClique of every group replica runs it.
	// +optional
	CurrentPodCliqueSetGenerationHash *string `json:"currentPodCliqueSetGenerationHash,omitempty"`

	// UpdateProgress tracks the rollout of a new PodCliqueSet template through the group, as
	// upstream Grove reports it; nil until the group's first update.
	// +optional
	UpdateProgress *PodCliqueScalingGroupUpdateProgress `json:"updateProgress,omitempty"`

	// RecoveringReplicas are the group replicas this group gang-terminated that have not been
	// available since. They count as unhealthy when the group decides whether it can spare
	// another, so a group that keeps losing replicas escalates to its PodCliqueSet replica
	// (upstream Grove's GT-4) instead of recycling one replica after another. Recorded before
	// the replica's PodCliques are deleted.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=10000
	RecoveringReplicas []int32 `json:"recoveringReplicas,omitempty"`
}

// PodCliqueScalingGroupUpdateProgress tracks the rollout of a new template through a group.
type PodCliqueScalingGroupUpdateProgress struct {
	// UpdateStartedAt is when the group was handed the new template.
	UpdateStartedAt metav1.Time `json:"updateStartedAt"`
	// UpdateEndedAt is when no update work was left: every PodClique runs the new template
	// (RollingRecreate), or at once with OnDelete, where users replace the pods.
	// +optional
	UpdateEndedAt *metav1.Time `json:"updateEndedAt,omitempty"`
	// PodCliqueSetGenerationHash is the template revision the group converges to.
	PodCliqueSetGenerationHash string `json:"podCliqueSetGenerationHash"`
	// UpdatedPodCliquesCount counts the group's PodCliques whose pods all run that revision.
	// +optional
	UpdatedPodCliquesCount int32 `json:"updatedPodCliquesCount,omitempty"`
	// TotalPodCliquesCount counts the PodCliques the group's spec wants.
	// +optional
	TotalPodCliquesCount int32 `json:"totalPodCliquesCount,omitempty"`
	// LastProgressedAt is when the update last moved forward (one more PodClique whose pods all
	// run the new revision); set when it starts, cleared when it ends.
	// +optional
	LastProgressedAt *metav1.Time `json:"lastProgressedAt,omitempty"`
	// ReadyReplicaIndicesSelectedToUpdate shows, with RollingRecreate, the group replica being
	// updated now (the lowest not yet done) and those done; nil with OnDelete.
	// +optional
	ReadyReplicaIndicesSelectedToUpdate *PodCliqueScalingGroupReplicaUpdateProgress `json:"readyReplicaIndicesSelectedToUpdate,omitempty"`
}

// PodCliqueScalingGroupReplicaUpdateProgress names the group replicas of a rollout.
type PodCliqueScalingGroupReplicaUpdateProgress struct {
	// Current is the group replica being updated.
	Current int32 `json:"current"`
	// Completed are the group replicas that run the new revision.
	// +optional
	Completed []int32 `json:"completed,omitempty"`
}
