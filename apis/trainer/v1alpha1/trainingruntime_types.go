package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// Kinds a TrainJob's runtimeRef may name.
const (
	TrainingRuntimeKind        = "TrainingRuntime"
	ClusterTrainingRuntimeKind = "ClusterTrainingRuntime"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.spec.workloadKind`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterTrainingRuntime is a TrainingRuntime every namespace can use.
type ClusterTrainingRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec TrainingRuntimeSpec `json:"spec,omitzero"`
}

// +kubebuilder:object:root=true

// ClusterTrainingRuntimeList is a list of ClusterTrainingRuntimes.
type ClusterTrainingRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTrainingRuntime `json:"items"`
}

// +kubebuilder:object:root=true
// +kubebuilder:ac:generate=true
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.spec.workloadKind`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// TrainingRuntime is a namespaced blueprint that TrainJobs reference: the ML framework policy,
// gang policy and the JobSet template their workload is built from.
type TrainingRuntime struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec TrainingRuntimeSpec `json:"spec,omitempty,omitzero"`
}

// +kubebuilder:object:root=true

// TrainingRuntimeList is a list of TrainingRuntimes.
type TrainingRuntimeList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrainingRuntime `json:"items"`
}

// WorkloadKind is the kind of object a TrainJob becomes.
// +kubebuilder:validation:Enum=JobSet;PodCliqueSet
type WorkloadKind string

const (
	// WorkloadKindJobSet builds a JobSet, as Kubeflow Trainer does.
	WorkloadKindJobSet WorkloadKind = "JobSet"
	// WorkloadKindPodCliqueSet builds a Training PodCliqueSet, gang-scheduled through PodGangs.
	WorkloadKindPodCliqueSet WorkloadKind = "PodCliqueSet"
)

// TrainingRuntimeSpec is the blueprint of a runtime.
// +kubebuilder:validation:MinProperties=1
type TrainingRuntimeSpec struct {
	// MLPolicy says how many nodes to run and which framework's environment to inject.
	// +optional
	MLPolicy *MLPolicy `json:"mlPolicy,omitempty"`

	// PodGroupPolicy turns on gang scheduling on the JobSet path.
	// +optional
	PodGroupPolicy *PodGroupPolicy `json:"podGroupPolicy,omitempty"`

	// Template is the JobSet template; on the PodCliqueSet path each replicated job becomes a
	// clique.
	// +optional
	Template JobSetTemplateSpec `json:"template,omitzero"`

	// TTLSecondsAfterFinished deletes a TrainJob this long after it completed or failed
	// (KEP-2899); unset keeps finished TrainJobs.
	// +optional
	// +kubebuilder:validation:Minimum=0
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// WorkloadKind is what the runtime's TrainJobs become: JobSet (Kubeflow's default) or
	// PodCliqueSet.
	// +optional
	// +kubebuilder:default=JobSet
	WorkloadKind WorkloadKind `json:"workloadKind,omitempty"`
}

// JobSetTemplateSpec is a JobSet template.
// +kubebuilder:validation:MinProperties=1
type JobSetTemplateSpec struct {
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec jobsetv1alpha2.JobSetSpec `json:"spec,omitempty"`
}

// PodGroupPolicy picks the gang scheduler of the JobSet path.
type PodGroupPolicy struct {
	PodGroupPolicySource `json:",inline"`
}

// PodGroupPolicySource holds exactly one gang scheduler's settings.
type PodGroupPolicySource struct {
	// Coscheduling uses scheduler-plugins' coscheduling PodGroup.
	// +optional
	Coscheduling *CoschedulingPodGroupPolicySource `json:"coscheduling,omitempty"`
	// Volcano uses Volcano's PodGroup.
	// +optional
	Volcano *VolcanoPodGroupPolicySource `json:"volcano,omitempty"`
}

// CoschedulingPodGroupPolicySource configures the coscheduling PodGroup.
type CoschedulingPodGroupPolicySource struct {
	// ScheduleTimeoutSeconds is how long the gang may wait for placement.
	// +kubebuilder:default=60
	// +optional
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// VolcanoPodGroupPolicySource configures Volcano's PodGroup.
type VolcanoPodGroupPolicySource struct {
	// NetworkTopology constrains placement across Volcano HyperNode tiers.
	// +optional
	NetworkTopology *NetworkTopologySpec `json:"networkTopology,omitempty"`
}

// NetworkTopologySpec mirrors Volcano's network topology constraint.
type NetworkTopologySpec struct {
	// Mode is hard (must hold) or soft (best effort).
	// +kubebuilder:default=hard
	// +kubebuilder:validation:Enum=hard;soft
	// +optional
	Mode string `json:"mode,omitempty"`
	// HighestTierAllowed is the highest HyperNode tier a job may span.
	// +kubebuilder:default=1
	// +optional
	HighestTierAllowed *int `json:"highestTierAllowed,omitempty"`
}

// MLPolicy says how many nodes to run and which framework's environment to inject.
// +kubebuilder:validation:XValidation:rule="[has(self.torch), has(self.mpi), has(self.jax), has(self.xgboost), has(self.flux)].filter(x, x).size() <= 1",message="only one of torch, mpi, jax, xgboost and flux may be set"
type MLPolicy struct {
	// NumNodes is the default node count, overridden by a TrainJob's trainer.numNodes. At most
	// 10000, like trainer.numNodes.
	// +kubebuilder:validation:Maximum=10000
	// +optional
	NumNodes *int32 `json:"numNodes,omitempty"`

	MLPolicySource `json:",inline"`
}

// MLPolicySource holds at most one framework's policy.
type MLPolicySource struct {
	// +optional
	Torch *TorchMLPolicySource `json:"torch,omitempty"`
	// +optional
	MPI *MPIMLPolicySource `json:"mpi,omitempty"`
	// +optional
	Flux *FluxMLPolicySource `json:"flux,omitempty"`
	// +optional
	JAX *JAXMLPolicySource `json:"jax,omitempty"`
	// +optional
	XGBoost *XGBoostMLPolicySource `json:"xgboost,omitempty"`
}

// TorchMLPolicySource configures torchrun's PET_* environment.
type TorchMLPolicySource struct {
	// EnvInjection also injects the PET_* variables into other replicated jobs' containers.
	// +optional
	EnvInjection *EnvInjection `json:"envInjection,omitempty"`
}

// EnvInjection lists extra containers that receive the framework environment.
type EnvInjection struct {
	// +listType=map
	// +listMapKey=jobName
	// +kubebuilder:validation:MaxItems=16
	// +optional
	Targets []EnvInjectionTarget `json:"targets,omitempty"`
}

// EnvInjectionTarget names containers of one replicated job.
type EnvInjectionTarget struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	JobName string `json:"jobName,omitempty"`
	// +listType=set
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="!self.exists(c, c == 'node')",message="containerNames must not include the node container, which always receives the PET_* variables"
	// +required
	ContainerNames []string `json:"containerNames,omitempty"`
}

// JAXMLPolicySource enables JAX's distributed environment.
type JAXMLPolicySource struct{}

// XGBoostMLPolicySource enables XGBoost's distributed environment.
type XGBoostMLPolicySource struct{}

// MPIImplementation names an MPI distribution.
type MPIImplementation string

// MPI implementations.
const (
	MPIImplementationOpenMPI MPIImplementation = "OpenMPI"
	MPIImplementationIntel   MPIImplementation = "Intel"
	MPIImplementationMPICH   MPIImplementation = "MPICH"
)

// MPIMLPolicySource configures MPI: slots per node, SSH keys and the launcher.
type MPIMLPolicySource struct {
	// +kubebuilder:default=1
	// +optional
	NumProcPerNode *int32 `json:"numProcPerNode,omitempty"`
	// +kubebuilder:default=OpenMPI
	// +kubebuilder:validation:Enum=OpenMPI;""
	// +optional
	MPIImplementation *MPIImplementation `json:"mpiImplementation,omitempty"`
	// +kubebuilder:default=/root/.ssh
	// +kubebuilder:validation:MaxLength=4096
	// +optional
	SSHAuthMountPath *string `json:"sshAuthMountPath,omitempty"`
	// +kubebuilder:default=false
	// +optional
	RunLauncherAsNode *bool `json:"runLauncherAsNode,omitempty"`
}

// FluxMLPolicySource configures Flux Framework.
type FluxMLPolicySource struct {
	// +kubebuilder:default=1
	// +kubebuilder:validation:XValidation:rule="self >= 1",message="numProcPerNode must be at least 1"
	// +optional
	NumProcPerNode *int32 `json:"numProcPerNode,omitempty"`
}
