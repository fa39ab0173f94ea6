package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.hpaPodSelector
// +kubebuilder:resource:shortName=pclq
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="MinAvail",type=integer,JSONPath=`.spec.minAvailable`
// +kubebuilder:printcolumn:name="Scheduled",type=integer,JSONPath=`.status.scheduledReplicas`
// +kubebuilder:printcolumn:name="Gated",type=integer,JSONPath=`.status.scheduleGatedReplicas`,priority=1
// +kubebuilder:printcolumn:name="Breached",type=string,JSONPath=`.status.conditions[?(@.type=="MinAvailableBreached")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PodClique is a set of pods of one role with stable indices; it is created by the operator for
// a PodCliqueSet replica or a PodCliqueScalingGroup replica.
type PodClique struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodCliqueSpec   `json:"spec"`
	Status PodCliqueStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodCliqueList is a list of PodCliques.
type PodCliqueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodClique `json:"items"`
}

// PodCliqueSpec is the desired state of a PodClique.
// +kubebuilder:validation:XValidation:rule="self.replicas == 0 || !has(self.minAvailable) || self.minAvailable <= self.replicas",message="minAvailable must not exceed replicas",fieldPath=".minAvailable"
type PodCliqueSpec struct {
	// RoleName is the role the pods play, e.g. leader or worker.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	RoleName string `json:"roleName"`

	// PodSpec is the spec of every pod of the clique.
	PodSpec corev1.PodSpec `json:"podSpec"`

	// Replicas is the number of pods.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Replicas int32 `json:"replicas"`

	// MinAvailable is how many pods are gang-scheduled together and must stay ready; defaults to
	// replicas.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MinAvailable *int32 `json:"minAvailable,omitempty"`

	// StartsAfter names the cliques that must have minAvailable ready pods before these pods
	// start (with cliqueStartupType Explicit).
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	StartsAfter []string `json:"startsAfter,omitempty"`

	// StartsAfterSucceeded names cliques of a Training workload whose pods must all have exited 0
	// before these pods start, like a JobSet dependsOn with status Complete (an initializer that
	// downloads the data first). Requires cliqueStartupType Explicit.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	StartsAfterSucceeded []string `json:"startsAfterSucceeded,omitempty"`

	// ScaleConfig makes the clique autoscaled; not allowed for members of a scaling group.
	// +optional
	ScaleConfig *AutoScalingConfig `json:"autoScalingConfig,omitempty"`
}

// PodCliqueStatus is the observed state of a PodClique.
type PodCliqueStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`

	// LastErrors are the errors of the last reconcile.
	// +optional
	LastErrors []LastError `json:"lastErrors,omitempty"`

	// Replicas is the number of non-terminated pods.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReadyReplicas is the number of ready pods.
	ReadyReplicas int32 `json:"readyReplicas"`

	// UpdatedReplicas is the number of pods at the current template hash.
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// ScheduleGatedReplicas is the number of pods still carrying a scheduling gate.
	ScheduleGatedReplicas int32 `json:"scheduleGatedReplicas"`

	// ScheduledReplicas is the number of pods bound to a node.
	ScheduledReplicas int32 `json:"scheduledReplicas"`

	// SucceededReplicas is the number of pods that exited 0 (Training).
	// +optional
	SucceededReplicas int32 `json:"succeededReplicas,omitempty"`

	// FailedReplicas is the number of pods that failed and are not yet replaced (Training).
	// +optional
	FailedReplicas int32 `json:"failedReplicas,omitempty"`

	// WasAvailable is set once minAvailable pods were ready outside a rolling update; a clique
	// that was never available cannot breach.
	// +optional
	WasAvailable bool `json:"wasAvailable,omitempty"`

	// Selector selects the pods of the clique, for the scale subresource.
	// +optional
	Selector *string `json:"hpaPodSelector,omitempty"`

	// Conditions are MinAvailableBreached, PodCliqueScheduled and (Training) Succeeded.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// CurrentPodCliqueSetGenerationHash is the PodCliqueSet generation hash fully realised here.
	// +optional
	CurrentPodCliqueSetGenerationHash *string `json:"currentPodCliqueSetGenerationHash,omitempty"`

	// CurrentPodTemplateHash is the pod template hash fully realised here.
	// +optional
	CurrentPodTemplateHash *string `json:"currentPodTemplateHash,omitempty"`

	// UpdateProgress tracks a rolling update.
	// +optional
	UpdateProgress *PodCliqueUpdateProgress `json:"updateProgress,omitempty"`
}

// PodCliqueUpdateProgress tracks a rolling update of a PodClique.
type PodCliqueUpdateProgress struct {
	// UpdateStartedAt is when the update began.
	UpdateStartedAt metav1.Time `json:"updateStartedAt,omitempty"`
	// UpdateEndedAt is when no update work was left; nil while in progress.
	// +optional
	UpdateEndedAt *metav1.Time `json:"updateEndedAt,omitempty"`
	// PodCliqueSetGenerationHash is the generation hash the clique converges to.
	PodCliqueSetGenerationHash string `json:"podCliqueSetGenerationHash"`
	// PodTemplateHash is the pod template hash the pods converge to.
	PodTemplateHash string `json:"podTemplateHash"`
	// ReadyPodsSelectedToUpdate records which ready pods the update already replaced, so a
	// restarted operator continues where it stopped.
	// +optional
	ReadyPodsSelectedToUpdate *PodsSelectedToUpdate `json:"readyPodsSelectedToUpdate,omitempty"`
}

// PodsSelectedToUpdate records the pod being replaced and those already replaced.
type PodsSelectedToUpdate struct {
	// Current is the pod being replaced now.
	Current string `json:"current"`
	// Completed are the pods already replaced.
	// +optional
	Completed []string `json:"completed,omitempty"`
}

func init() {
	SchemeBuilder.Register(&PodClique{}, &PodCliqueList{})
}
