package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.hpaPodSelector
// +kubebuilder:resource:shortName=pcs
// +kubebuilder:printcolumn:name="Type",type=string,JSONPath=`.spec.workloadType`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedReplicas`
// +kubebuilder:printcolumn:name="Restarts",type=integer,JSONPath=`.status.restartCount`
// +kubebuilder:printcolumn:name="Update",type=string,JSONPath=`.status.conditions[?(@.type=="UpdateInProgress")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// The deprecated packDomain is refused on new objects only, as upstream Grove refuses it (an object
// stored with it stays valid and can still be updated and deleted):
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.spec.template.topologyConstraint) || !has(self.spec.template.topologyConstraint.packDomain)",optionalOldSelf=true,message="packDomain is deprecated and cannot be used on new workloads; use pack.required",fieldPath=".spec.template.topologyConstraint.packDomain",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || self.spec.template.cliques.all(c, !has(c.topologyConstraint) || !has(c.topologyConstraint.packDomain))",optionalOldSelf=true,message="packDomain is deprecated and cannot be used on new workloads; use pack.required",fieldPath=".spec.template.cliques",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !has(self.spec.template.podCliqueScalingGroups) || self.spec.template.podCliqueScalingGroups.all(g, !has(g.topologyConstraint) || !has(g.topologyConstraint.packDomain))",optionalOldSelf=true,message="packDomain is deprecated and cannot be used on new workloads; use pack.required",fieldPath=".spec.template.podCliqueScalingGroups",reason=FieldValueForbidden

// PodCliqueSet is a replicated set of gangs: each replica holds one PodClique per clique and one
// PodCliqueScalingGroup per scaling group, scheduled all-or-nothing through PodGangs.
type PodCliqueSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodCliqueSetSpec   `json:"spec"`
	Status PodCliqueSetStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodCliqueSetList is a list of PodCliqueSets.
type PodCliqueSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodCliqueSet `json:"items"`
}

// WorkloadType tells the operator whether pods run until deleted or to completion.
// +kubebuilder:validation:Enum=Inference;Training
type WorkloadType string

const (
	// WorkloadTypeInference runs pods indefinitely and recreates failed ones.
	WorkloadTypeInference WorkloadType = "Inference"
	// WorkloadTypeTraining runs pods to completion; the PodCliqueSet reaches Succeeded or Failed.
	WorkloadTypeTraining WorkloadType = "Training"
)

// PodCliqueSetSpec is the desired state of a PodCliqueSet.
// +kubebuilder:validation:XValidation:rule="!has(self.trainingSpec) || self.workloadType == 'Training'",message="trainingSpec is only allowed with workloadType Training",fieldPath=".trainingSpec",reason=FieldValueForbidden
// +kubebuilder:validation:XValidation:rule="has(oldSelf.managedBy) == has(self.managedBy)",message="managedBy is immutable",fieldPath=".managedBy"
type PodCliqueSetSpec struct {
	// Replicas is the number of gang replicas.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	Replicas int32 `json:"replicas"`

	// UpdateStrategy says how replicas are replaced when the template changes.
	// +optional
	UpdateStrategy *PodCliqueSetUpdateStrategy `json:"updateStrategy,omitempty"`

	// WorkloadType is Inference (run until deleted) or Training (run to completion). Immutable.
	// +kubebuilder:default=Inference
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="workloadType is immutable"
	// +optional
	WorkloadType WorkloadType `json:"workloadType,omitempty"`

	// TrainingSpec bounds a Training workload's runtime and restarts.
	// +optional
	TrainingSpec *TrainingSpec `json:"trainingSpec,omitempty"`

	// QueueAdmission says who obtains Kueue's admission for a PodCliqueSet labelled with a queue
	// (docs/kueue.md): PerGang (the default) queues each PodGang as a Kueue Workload of its own;
	// Owner says the PodCliqueSet's controlling owner was admitted by Kueue as a whole (a TrainJob
	// under Kueue's TrainJob integration), so its gangs carry the queue but hold no quota of their
	// own. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="queueAdmission is immutable"
	// +optional
	QueueAdmission QueueAdmission `json:"queueAdmission,omitempty"`

	// ManagedBy names who runs the PodCliqueSet, as JobSet's spec.managedBy does (this project's
	// addition to upstream Grove's wire format): unset or grove.io/grove-operator, the
	// grove-operator of this cluster; kueue.x-k8s.io/multikueue, Kueue's MultiKueue, which runs a
	// copy on a worker cluster and copies its status back — on this cluster only the gangs'
	// Kueue Workloads are kept (docs/kueue.md, Multi-cluster). grove-webhook sets it on create
	// when the PodCliqueSet's queue leads to a MultiKueue admission check. Immutable.
	// +kubebuilder:validation:Enum=grove.io/grove-operator;kueue.x-k8s.io/multikueue
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="managedBy is immutable"
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`

	// Template describes every replica.
	Template PodCliqueSetTemplateSpec `json:"template"`
}

// TrainingSpec bounds the runtime and the restarts of a Training workload.
type TrainingSpec struct {
	// MaxRuntime is how long the workload may run, counted from status.startTime; past it every
	// pod is terminated and the workload Failed.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="must be a non-negative duration such as 30s, 90m or 1h30m"
	MaxRuntime *metav1.Duration `json:"maxRuntime,omitempty"`

	// MaxRestarts is how many replica restarts (summed over replicas) are allowed before the
	// workload Failed. Default 0: the first breach fails the workload.
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxRestarts *int32 `json:"maxRestarts,omitempty"`

	// SuccessPolicy says whose success makes the workload Succeeded, as a JobSet's successPolicy
	// does for its replicated jobs: the PodCliques still running then are deleted, their pods
	// with them (JobSet deletes its active Jobs). Unset: every PodClique of every replica
	// succeeded.
	// +optional
	SuccessPolicy *TrainingSuccessPolicy `json:"successPolicy,omitempty"`
}

// TrainingSuccessOperator combines the target cliques' PodCliques.
// +kubebuilder:validation:Enum=All;Any
type TrainingSuccessOperator string

const (
	// TrainingSuccessAll: every PodClique of the target cliques, in every replica, succeeded.
	TrainingSuccessAll TrainingSuccessOperator = "All"
	// TrainingSuccessAny: one PodClique of the target cliques succeeded.
	TrainingSuccessAny TrainingSuccessOperator = "Any"
)

// TrainingSuccessPolicy is JobSet's successPolicy over cliques.
type TrainingSuccessPolicy struct {
	// Operator is All or Any.
	// +kubebuilder:default=All
	// +optional
	Operator TrainingSuccessOperator `json:"operator,omitempty"`
	// TargetCliques names template cliques (standalone or in a scaling group); empty means
	// every clique.
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +optional
	TargetCliques []string `json:"targetCliques,omitempty"`
}

// UpdateStrategyType names how replicas are replaced when the template changes.
// +kubebuilder:validation:Enum=Coherent;RollingRecreate;OnDelete
type UpdateStrategyType string

const (
	// CoherentStrategy replaces, one replica at a time, the components whose template changed
	// together and in proportion: each step brings minAvailable of every changed component up
	// as one gang at the new version, then the rest of the step's share within each component's
	// budget (upstream Grove's GREP-393).
	CoherentStrategy UpdateStrategyType = "Coherent"
	// RollingRecreateStrategy replaces replicas one at a time.
	RollingRecreateStrategy UpdateStrategyType = "RollingRecreate"
	// OnDeleteStrategy replaces pods only when a user deletes them.
	OnDeleteStrategy UpdateStrategyType = "OnDelete"
)

// PodCliqueSetUpdateStrategy says how replicas are replaced when the template changes.
type PodCliqueSetUpdateStrategy struct {
	// Type is the strategy.
	// +kubebuilder:default=RollingRecreate
	// +optional
	Type UpdateStrategyType `json:"type,omitempty"`
}

// CliqueStartupType orders the start of the cliques of one gang.
// +kubebuilder:validation:Enum=CliqueStartupTypeAnyOrder;CliqueStartupTypeInOrder;CliqueStartupTypeExplicit
type CliqueStartupType string

const (
	// CliqueStartupTypeAnyOrder starts all cliques at once.
	CliqueStartupTypeAnyOrder CliqueStartupType = "CliqueStartupTypeAnyOrder"
	// CliqueStartupTypeInOrder starts each clique after the one listed before it.
	CliqueStartupTypeInOrder CliqueStartupType = "CliqueStartupTypeInOrder"
	// CliqueStartupTypeExplicit starts each clique after the cliques named in its startsAfter.
	CliqueStartupTypeExplicit CliqueStartupType = "CliqueStartupTypeExplicit"
)

// PodCliqueSetTemplateSpec describes one replica of a PodCliqueSet.
// +kubebuilder:validation:XValidation:rule="!has(self.podCliqueScalingGroups) || has(self.terminationDelay) || self.podCliqueScalingGroups.all(g, !has(g.terminationDelay))",message="a podCliqueScalingGroup terminationDelay requires spec.template.terminationDelay",fieldPath=".podCliqueScalingGroups",reason=FieldValueForbidden
type PodCliqueSetTemplateSpec struct {
	// Cliques are the roles of one replica; at least one.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	Cliques []*PodCliqueTemplateSpec `json:"cliques"`

	// StartupType orders the start of the cliques.
	// +kubebuilder:default=CliqueStartupTypeAnyOrder
	// +optional
	StartupType *CliqueStartupType `json:"cliqueStartupType,omitempty"`

	// PriorityClassName is given to every pod and PodGang.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// HeadlessServiceConfig configures the headless Service of each replica.
	// +optional
	HeadlessServiceConfig *HeadlessServiceConfig `json:"headlessServiceConfig,omitempty"`

	// TopologyConstraint packs each replica into one topology domain.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`

	// TerminationDelay is how long a replica may stay below minAvailable before it is
	// gang-terminated. Unset disables gang termination; 0 terminates at once.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="must be a non-negative duration such as 30s, 90m or 1h30m"
	TerminationDelay *metav1.Duration `json:"terminationDelay,omitempty"`

	// ResourceClaimTemplates are named ResourceClaim templates resourceSharing entries at any
	// level can name (upstream Grove's DRA resource sharing).
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	ResourceClaimTemplates []ResourceClaimTemplateConfig `json:"resourceClaimTemplates,omitempty"`

	// ResourceSharing are ResourceClaims the operator makes for the PodCliqueSet: AllReplicas,
	// one shared by every pod of every replica; PerReplica, one per replica shared by its pods.
	// A filter limits them to some cliques and scaling groups. Immutable.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ResourceSharing []PCSResourceSharingSpec `json:"resourceSharing,omitempty"`

	// PodCliqueScalingGroupConfigs groups cliques that scale together as one unit.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	PodCliqueScalingGroupConfigs []PodCliqueScalingGroupConfig `json:"podCliqueScalingGroups,omitempty"`
}

// HeadlessServiceConfig configures the headless Service of each replica.
type HeadlessServiceConfig struct {
	// PublishNotReadyAddresses publishes DNS records of pods before they are ready, which
	// distributed runtimes need to rendezvous.
	// +kubebuilder:default=true
	PublishNotReadyAddresses bool `json:"publishNotReadyAddresses"`
}

// PodCliqueTemplateSpec describes one clique of a replica.
// +kubebuilder:validation:XValidation:rule="self.spec.replicas == 0 || !has(self.spec.minAvailable) || self.spec.minAvailable <= self.spec.replicas",message="minAvailable must not exceed replicas",fieldPath=".spec.minAvailable"
type PodCliqueTemplateSpec struct {
	// Name of the clique, unique in the PodCliqueSet and part of every generated name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Labels are added to the PodClique and its pods.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations are added to the PodClique and its pods.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// TopologyConstraint packs the pods of this clique into one topology domain.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`

	// ResourceSharing are ResourceClaims the operator makes for each PodClique of this clique:
	// AllReplicas, one shared by all its pods; PerReplica, one per pod index. (A
	// resourceClaimTemplateName in the pod spec instead gives every pod its own claim.) Immutable.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ResourceSharing []ResourceSharingSpec `json:"resourceSharing,omitempty"`

	// RollingUpdate is this clique's budget while a RollingRecreate update replaces its pods
	// (upstream Grove's per-component rollingUpdate). Only for a standalone clique: a member of a
	// scaling group is replaced with its group replica, under the group's budget. Defaulted to
	// maxUnavailable 1 under RollingRecreate; refused under OnDelete.
	// +optional
	RollingUpdate *RollingUpdateConfiguration `json:"rollingUpdate,omitempty"`

	// Spec is the PodClique spec.
	Spec PodCliqueSpec `json:"spec"`
}

// RollingUpdateConfiguration is one component's budget during a rolling update.
type RollingUpdateConfiguration struct {
	// MaxUnavailable is how many of the component's units may be unavailable at once while it is
	// updated, counted against its desired count: pods of a standalone clique, whole group
	// replicas of a scaling group (a replica is available when every member clique has
	// minAvailable Ready pods). Units already unavailable count against it; outdated ones among
	// them are replaced without waiting. A replacement counts once it is Ready. At least 1.
	// +optional
	MaxUnavailable *int32 `json:"maxUnavailable,omitempty"`

	// ProgressDeadline is how long the component's update may go without a replacement becoming
	// Ready before UpdateInProgress turns Unknown with reason ProgressDeadlineExceeded. It only
	// reports; the update goes on. Unset: no deadline.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+$')",message="must be a positive duration such as 30s, 10m or 1h"
	ProgressDeadline *metav1.Duration `json:"progressDeadline,omitempty"`
}

// PodCliqueScalingGroupConfig groups cliques whose PodCliques are created, scaled and
// gang-terminated together as one replica of the group.
// +kubebuilder:validation:XValidation:rule="!has(self.minAvailable) || !has(self.replicas) || self.replicas == 0 || self.minAvailable <= self.replicas",message="minAvailable must not exceed replicas",fieldPath=".minAvailable"
type PodCliqueScalingGroupConfig struct {
	// Name of the scaling group, unique in the PodCliqueSet.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// CliqueNames are the member cliques.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	CliqueNames []string `json:"cliqueNames"`

	// Annotations are added to the PodCliqueScalingGroup.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Replicas is the number of group replicas.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// MinAvailable is how many group replicas are gang-scheduled together with the base gang,
	// and how many must stay healthy before the whole PodCliqueSet replica is terminated.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MinAvailable *int32 `json:"minAvailable,omitempty"`

	// ScaleConfig makes the group autoscaled.
	// +optional
	ScaleConfig *AutoScalingConfig `json:"scaleConfig,omitempty"`

	// RollingUpdate is the group's budget while a RollingRecreate update replaces its replicas:
	// maxUnavailable counts whole group replicas. Defaulted to maxUnavailable 1 under
	// RollingRecreate; refused under OnDelete.
	// +optional
	RollingUpdate *RollingUpdateConfiguration `json:"rollingUpdate,omitempty"`

	// TerminationDelay overrides the PodCliqueSet terminationDelay for this group; it requires
	// the PodCliqueSet-level value to be set.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.matches('^(0|([0-9]+([.][0-9]+)?(ns|us|µs|ms|s|m|h))+)$')",message="must be a non-negative duration such as 30s, 90m or 1h30m"
	TerminationDelay *metav1.Duration `json:"terminationDelay,omitempty"`

	// TopologyConstraint packs each group replica into one topology domain.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`

	// ResourceSharing are ResourceClaims the operator makes for each PodCliqueScalingGroup:
	// AllReplicas, one shared by all its group replicas; PerReplica, one per group replica. A
	// filter limits them to some member cliques. Immutable.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	ResourceSharing []PCSGResourceSharingSpec `json:"resourceSharing,omitempty"`
}

// PodCliqueSetPhase is the coarse state of a PodCliqueSet.
// +kubebuilder:validation:Enum=Pending;Running;Succeeded;Failed
type PodCliqueSetPhase string

const (
	// PodCliqueSetPhasePending means no replica runs yet.
	PodCliqueSetPhasePending PodCliqueSetPhase = "Pending"
	// PodCliqueSetPhaseRunning means at least one replica runs.
	PodCliqueSetPhaseRunning PodCliqueSetPhase = "Running"
	// PodCliqueSetPhaseSucceeded means every pod of a Training workload exited 0 (terminal).
	PodCliqueSetPhaseSucceeded PodCliqueSetPhase = "Succeeded"
	// PodCliqueSetPhaseFailed means a Training workload ran out of restarts or time (terminal).
	PodCliqueSetPhaseFailed PodCliqueSetPhase = "Failed"
)

// PodCliqueSetStatus is the observed state of a PodCliqueSet.
type PodCliqueSetStatus struct {
	// ObservedGeneration is the generation the status describes.
	// +optional
	ObservedGeneration *int64 `json:"observedGeneration,omitempty"`

	// Conditions are the latest observations.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastErrors are the errors of the last reconcile.
	// +optional
	LastErrors []LastError `json:"lastErrors,omitempty"`

	// Replicas is the number of replicas created.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// UpdatedReplicas is the number of replicas at the current template.
	UpdatedReplicas int32 `json:"updatedReplicas"`

	// AvailableReplicas is the number of replicas whose PodCliques and scaling groups all have
	// MinAvailableBreached=False.
	AvailableReplicas int32 `json:"availableReplicas"`

	// Selector selects the pods of the PodCliqueSet, for the scale subresource.
	// +optional
	Selector *string `json:"hpaPodSelector,omitempty"`

	// PodGangStatuses summarise the PodGangs of the PodCliqueSet.
	// +optional
	PodGangStatuses []PodGangStatus `json:"podGangStatuses,omitempty"`

	// CurrentGenerationHash identifies the template revision the replicas converge to.
	// +optional
	CurrentGenerationHash *string `json:"currentGenerationHash,omitempty"`

	// UpdateProgress tracks a rolling update.
	// +optional
	UpdateProgress *PodCliqueSetUpdateProgress `json:"updateProgress,omitempty"`

	// Phase is Pending, Running, Succeeded or Failed (the last two for Training only).
	// +optional
	Phase PodCliqueSetPhase `json:"phase,omitempty"`

	// RestartCount is the number of replica restarts consumed, summed over replicas.
	// +optional
	RestartCount int32 `json:"restartCount,omitempty"`

	// CliqueStatuses sum, for a Training workload, each clique's pods over the replicas (and
	// scaling-group replicas): what a TrainJob's jobsStatus reports, so the trainer-controller
	// reads the PodCliqueSet alone. Not kept for Inference workloads, whose pods come and go.
	// +optional
	// +listType=map
	// +listMapKey=name
	CliqueStatuses []CliqueStatus `json:"cliqueStatuses,omitempty"`

	// RestartsInProgress are counted restarts whose PodCliques are still being deleted. Each is
	// written with the count, before the deletion, so an operator restarted in between deletes
	// them without counting the restart again; it goes once they are gone.
	// +optional
	// +listType=map
	// +listMapKey=replicaIndex
	RestartsInProgress []ReplicaRestart `json:"restartsInProgress,omitempty"`

	// ScaledReplicasToRestore are the replica counts of standalone PodCliques that gang
	// termination deletes after they were scaled away from their template (kubectl scale, an
	// autoscaler). Each is recorded before the deletion and given to the PodClique made in its
	// place, so recovery keeps the count the workload was scaled to (upstream Grove's #826 resets
	// it); it goes once that PodClique exists.
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=4096
	ScaledReplicasToRestore []ScaledReplicas `json:"scaledReplicasToRestore,omitempty"`

	// StartTime is when the phase first became Running; maxRuntime counts from it. Never reset.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
}

// CliqueStatus counts the pods of one clique of the template.
type CliqueStatus struct {
	// Name is the clique's name in the template.
	Name string `json:"name"`
	// Replicas are its non-terminated pods.
	Replicas int32 `json:"replicas"`
	// ReadyReplicas are its ready pods.
	ReadyReplicas int32 `json:"readyReplicas"`
	// SucceededReplicas are its pods that exited 0.
	SucceededReplicas int32 `json:"succeededReplicas"`
	// FailedReplicas are its failed pods not yet replaced.
	FailedReplicas int32 `json:"failedReplicas"`
}

// ScaledReplicas is the replica count a deleted PodClique had been scaled to.
type ScaledReplicas struct {
	// Name of the PodClique.
	Name string `json:"name"`
	// Replicas it had.
	Replicas int32 `json:"replicas"`
	// TemplateReplicas is the template's count then: a template changed since wins.
	TemplateReplicas int32 `json:"templateReplicas"`
	// ReplacedUID is the deleted PodClique's UID: the count goes to the one that replaces it.
	ReplacedUID types.UID `json:"replacedUID"`
}

// ReplicaRestart is one counted restart of a Training PodCliqueSet replica.
type ReplicaRestart struct {
	// ReplicaIndex is the restarted replica.
	ReplicaIndex int32 `json:"replicaIndex"`
	// Restart is which restart it is (1-based, over all replicas).
	Restart int32 `json:"restart"`
	// PodCliqueUIDs are the PodCliques the restart deletes; their successors have other UIDs.
	// +listType=set
	PodCliqueUIDs []types.UID `json:"podCliqueUIDs"`
}

// PodGangStatus summarises one PodGang of the PodCliqueSet.
type PodGangStatus struct {
	// Name of the PodGang.
	Name string `json:"name"`
	// Phase of the PodGang.
	// +optional
	Phase string `json:"phase,omitempty"`
	// Conditions copied from the PodGang: its backend's SchedulerBackendReady. Initialized stays on
	// the PodGang: it changes as pods come and go, and mirroring it would cost a PodCliqueSet write
	// each time.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// PodCliqueSetUpdateProgress tracks a rolling update of a PodCliqueSet.
type PodCliqueSetUpdateProgress struct {
	// UpdateStartedAt is when the update began.
	UpdateStartedAt metav1.Time `json:"updateStartedAt,omitempty"`
	// UpdateEndedAt is when no update work was left; nil while in progress.
	// +optional
	UpdateEndedAt *metav1.Time `json:"updateEndedAt,omitempty"`
	// UpdatedPodCliquesCount counts PodCliques at the current generation hash.
	// +optional
	UpdatedPodCliquesCount int32 `json:"updatedPodCliquesCount,omitempty"`
	// TotalPodCliquesCount counts the PodCliques the current spec wants.
	// +optional
	TotalPodCliquesCount int32 `json:"totalPodCliquesCount,omitempty"`
	// UpdatedPodCliqueScalingGroupsCount counts scaling groups at the current generation hash.
	// +optional
	UpdatedPodCliqueScalingGroupsCount int32 `json:"updatedPodCliqueScalingGroupsCount,omitempty"`
	// TotalPodCliqueScalingGroupsCount counts the scaling groups the current spec wants.
	// +optional
	TotalPodCliqueScalingGroupsCount int32 `json:"totalPodCliqueScalingGroupsCount,omitempty"`
	// CurrentlyUpdating lists the replicas being replaced now.
	// +optional
	CurrentlyUpdating []PodCliqueSetReplicaUpdateProgress `json:"currentlyUpdating,omitempty"`
	// InScopeStandalonePodCliques names (as in the template) the standalone cliques a Coherent
	// update replaces: those whose template changed, fixed when the update starts and added to by a
	// change during it; cleared when it ends.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	InScopeStandalonePodCliques []string `json:"inScopeStandalonePodCliques,omitempty"`
	// InScopePodCliqueScalingGroups names (as in the template) the scaling groups a Coherent
	// update replaces, as InScopeStandalonePodCliques does the standalone cliques.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	InScopePodCliqueScalingGroups []string `json:"inScopePodCliqueScalingGroups,omitempty"`
	// LastProgressedAt is when the update last moved forward (a PodClique or scaling group more
	// at the new revision); set when it starts, cleared when it ends.
	// +optional
	LastProgressedAt *metav1.Time `json:"lastProgressedAt,omitempty"`
}

// PodCliqueSetReplicaUpdateProgress tracks the update of one replica.
type PodCliqueSetReplicaUpdateProgress struct {
	// ReplicaIndex is the replica being updated.
	ReplicaIndex int32 `json:"replicaIndex"`
	// UpdateStartedAt is when its update began.
	UpdateStartedAt metav1.Time `json:"updateStartedAt,omitempty"`
	// UpdateEndedAt is when all its children ran the new template.
	// +optional
	UpdateEndedAt *metav1.Time `json:"updateEndedAt,omitempty"`
	// InFlightEpochs are, under Coherent, the epochs of the replica's PodGangMap whose gangs the
	// current step brings up.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	InFlightEpochs []string `json:"inFlightEpochs,omitempty"`
	// Message says, under Coherent, what the current step waits for.
	// +optional
	Message *string `json:"message,omitempty"`
}

// CoherentUpdate reports whether a Coherent update of the PodCliqueSet is in progress, and the
// replica it is replacing now (-1 before its first replica's turn is recorded): while it runs,
// the sizes of the PodCliqueSet's children hold (the plan of the replica being updated is made for
// them, and a waiting replica's new PodCliques could only be made at the new template).
func (pcs *PodCliqueSet) CoherentUpdate() (replica int, inProgress bool) {
	up := pcs.Status.UpdateProgress
	if pcs.Spec.UpdateStrategy == nil || pcs.Spec.UpdateStrategy.Type != CoherentStrategy || up == nil || up.UpdateEndedAt != nil {
		return -1, false
	}
	for _, r := range up.CurrentlyUpdating {
		if r.UpdateEndedAt == nil {
			return int(r.ReplicaIndex), true
		}
	}
	return -1, true
}
