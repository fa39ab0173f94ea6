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

	Spec   PodCliqueObjectSpec `json:"spec"`
	Status PodCliqueStatus     `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodCliqueList is a list of PodCliques.
type PodCliqueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodClique `json:"items"`
}

// PodCliqueObjectSpec is the spec of a PodClique object: its clique template's spec, with
// startsAfter and startsAfterSucceeded resolved to the names of the PodCliques it waits for (as
// upstream Grove resolves startsAfter), and what the operator hands down from the PodCliqueSet, so
// the PodClique reconciler never reads its PodCliqueSet. The operator writes all of it; a user's
// edit of anything but replicas is put back.
type PodCliqueObjectSpec struct {
	PodCliqueSpec `json:",inline"`
	InheritedSpec `json:",inline"`

	// ScalingGroupTemplateNumPods is, for a member of a PodCliqueScalingGroup, the number of pods
	// of one group replica (the pods' GROVE_PCSG_TEMPLATE_NUM_PODS).
	// +optional
	// +kubebuilder:validation:Minimum=0
	ScalingGroupTemplateNumPods *int32 `json:"scalingGroupTemplateNumPods,omitempty"`

	// ScalingGroupPodIndexOffset is, for a member of a PodCliqueScalingGroup, where its pods'
	// indices start within one group replica: the replicas of the member cliques before it in the
	// group's cliqueNames. A pod's grove.io/podcliquescalinggroup-pod-index label (and its
	// GROVE_PCSG_POD_INDEX) is the offset plus its index in the clique.
	// +optional
	// +kubebuilder:validation:Minimum=0
	ScalingGroupPodIndexOffset *int32 `json:"scalingGroupPodIndexOffset,omitempty"`

	// SharedResourceClaims are the ResourceClaims the PodCliqueSet and the scaling group make
	// (their resourceSharing entries whose filter reaches this clique) that every pod references.
	// +optional
	// +kubebuilder:validation:MaxItems=128
	SharedResourceClaims []string `json:"sharedResourceClaims,omitempty"`

	// ResourceSharing are the clique's own entries: the PodClique makes these claims, one for all
	// its pods (AllReplicas) or one per pod index (PerReplica).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ResourceSharing []ResourceSharingSpec `json:"resourceSharing,omitempty"`

	// ComputeDomainClaimTemplate is, for a clique in an MNNVL group, the ResourceClaimTemplate of
	// its replica's ComputeDomain: the GPU containers of its pods claim a channel from it.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ComputeDomainClaimTemplate string `json:"computeDomainClaimTemplate,omitempty"`

	// ResourceClaimTemplates are the PodCliqueSet's templates that ResourceSharing names.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ResourceClaimTemplates []ResourceClaimTemplateConfig `json:"resourceClaimTemplates,omitempty"`
}

// InheritedSpec is what the operator copies from a PodCliqueSet into the spec of its PodCliques
// and PodCliqueScalingGroups: each child's reconciler reads it there.
type InheritedSpec struct {
	// PodCliqueSetGenerationHash is the PodCliqueSet template revision the child is at: a rolling
	// update moves it onto the replicas one at a time, and a child's pods are made from it.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	PodCliqueSetGenerationHash string `json:"podCliqueSetGenerationHash,omitempty"`

	// UpdateStrategy is the PodCliqueSet's: with OnDelete the PodClique replaces outdated pods only
	// when they are deleted.
	// +optional
	// +kubebuilder:validation:Enum=Coherent;RollingRecreate;OnDelete
	UpdateStrategy UpdateStrategyType `json:"updateStrategy,omitempty"`

	// WorkloadType is the PodCliqueSet's: Training pods run to completion, and a breach restarts
	// or fails the whole PodCliqueSet replica.
	// +optional
	// +kubebuilder:validation:Enum=Inference;Training
	WorkloadType WorkloadType `json:"workloadType,omitempty"`

	// RollingUpdate is the component's budget during a RollingRecreate update: a standalone
	// PodClique's own, a PodCliqueScalingGroup's own; unset on the members of a scaling group,
	// whose pods are replaced all at once when the group updates their replica.
	// +optional
	RollingUpdate *RollingUpdateConfiguration `json:"rollingUpdate,omitempty"`

	// TemplateReplicas is the template's replica count last applied to the child: replicas set
	// on the child directly (kubectl scale) stick until the template's count changes.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TemplateReplicas *int32 `json:"templateReplicas,omitempty"`
}

// PodCliqueSpec is the desired state of a clique, in a PodCliqueSet template and in a PodClique.
type PodCliqueSpec struct {
	// RoleName is the role the pods play, e.g. leader or worker. Defaults to the clique's name
	// (upstream Grove's own samples leave it out); a PodClique always has it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	RoleName string `json:"roleName,omitempty"`

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
	// start (with cliqueStartupType Explicit). In a PodClique: the PodCliques (full names) it
	// waits for under the PodCliqueSet's startup type, those of startsAfterSucceeded included.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	StartsAfter []string `json:"startsAfter,omitempty"`

	// StartsAfterSucceeded names cliques of a Training workload whose pods must all have exited 0
	// before these pods start, like a JobSet dependsOn with status Complete (an initializer that
	// downloads the data first). Requires cliqueStartupType Explicit. In a PodClique: those of
	// startsAfter (full names) that must have succeeded, not merely be ready.
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

	// LastScheduled is when PodCliqueScheduled last turned True; never cleared (upstream Grove's
	// PodClique.status.lastScheduled).
	// +optional
	LastScheduled *metav1.Time `json:"lastScheduled,omitempty"`

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
	// UpdatedReadyReplicas counts the pods at the new template that are Ready.
	// +optional
	UpdatedReadyReplicas int32 `json:"updatedReadyReplicas,omitempty"`
	// UpdatedScheduledReplicas counts the pods at the new template that are bound to a node.
	// +optional
	UpdatedScheduledReplicas int32 `json:"updatedScheduledReplicas,omitempty"`
	// LastProgressedAt is when the update last moved forward (one more pod at the new template
	// Ready); set when it starts, cleared when it ends.
	// +optional
	LastProgressedAt *metav1.Time `json:"lastProgressedAt,omitempty"`
}

// PodsSelectedToUpdate records the pod being replaced and those already replaced.
type PodsSelectedToUpdate struct {
	// Current is the pod being replaced now.
	Current string `json:"current"`
	// Completed are the pods already replaced.
	// +optional
	Completed []string `json:"completed,omitempty"`
}

// Training reports whether the child belongs to a Training PodCliqueSet.
func (s *InheritedSpec) Training() bool {
	return s.WorkloadType == WorkloadTypeTraining
}
