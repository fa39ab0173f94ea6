package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TrainJobKind is the kind of a TrainJob.
const TrainJobKind = "TrainJob"

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:ac:generate=true
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.conditions[?(@.status=="True")].type`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.status=="True")].reason`,priority=1
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.numNodes`
// +kubebuilder:printcolumn:name="Runtime",type=string,JSONPath=`.spec.runtimeRef.name`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be an RFC 1035 DNS label"
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="metadata.name must be at most 63 characters"

// TrainJob runs one training job from a runtime blueprint plus per-job overrides.
type TrainJob struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec TrainJobSpec `json:"spec,omitzero"`
	// +optional
	Status TrainJobStatus `json:"status,omitzero"`
}

// +kubebuilder:object:root=true

// TrainJobList is a list of TrainJobs.
type TrainJobList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TrainJob `json:"items"`
}

// Condition types of a TrainJob.
const (
	TrainJobSuspended = "Suspended"
	TrainJobComplete  = "Complete"
	TrainJobFailed    = "Failed"
	// TrainJobRunning is added by this project: True while the TrainJob's workload exists and
	// runs; False with the reason it does not (runtime missing, suspended, finished). It gives
	// `kubectl get trainjob` a state that stays right after a resume.
	TrainJobRunning = "Running"
)

// Condition reasons of a TrainJob.
const (
	TrainJobSuspendedReason           = "Suspended"
	TrainJobResumedReason             = "Resumed"
	TrainJobRuntimeNotSupportedReason = "TrainingRuntimeNotSupported"
	TrainJobDeadlineExceededReason    = "DeadlineExceeded"
	TrainJobRuntimeNotFoundReason     = "TrainingRuntimeNotFound"
	// TrainJobNameCollisionReason says the workload's name (the TrainJob's) is held by an object
	// the TrainJob does not own: nothing is adopted, the TrainJob waits until the name is free.
	TrainJobNameCollisionReason = "NameCollision"
)

// LabelTrainJobName names the TrainJob an object (a PodCliqueSet, its PodCliques and pods, the
// runtime snapshot) belongs to; the trainer-controller's caches select on it.
const LabelTrainJobName = "trainer.kubeflow.org/trainjob-name"

// ManagedBy values a TrainJob accepts.
const (
	TrainJobControllerManagedBy = "trainer.kubeflow.org/trainjob-controller"
	MultiKueueManagedBy         = "kueue.x-k8s.io/multikueue"
)

// TrainJobSpec is what to train and with which runtime.
type TrainJobSpec struct {
	// RuntimeRef names the runtime blueprint. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="runtimeRef is immutable"
	// +required
	RuntimeRef RuntimeRef `json:"runtimeRef,omitzero"`

	// Initializer downloads the dataset and model before training. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="initializer is immutable"
	// +optional
	Initializer *Initializer `json:"initializer,omitempty"`

	// Trainer overrides the runtime's trainer node. Immutable.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="trainer is immutable"
	// +optional
	Trainer *Trainer `json:"trainer,omitempty"`

	// RuntimePatches are per-manager patches applied to the runtime template.
	// +listType=map
	// +listMapKey=manager
	// +kubebuilder:validation:MaxItems=16
	// +optional
	RuntimePatches []RuntimePatch `json:"runtimePatches,omitempty"`

	// Suspend stops the job's pods; edits to a running job are made while it is suspended.
	// +kubebuilder:default=false
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// ActiveDeadlineSeconds fails the job this long after creation or the last resume
	// (KEP-2899). Immutable.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="activeDeadlineSeconds is immutable"
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// ManagedBy names the controller that reconciles the job; others leave it alone. Immutable.
	// +kubebuilder:default="trainer.kubeflow.org/trainjob-controller"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self in ['trainer.kubeflow.org/trainjob-controller', 'kueue.x-k8s.io/multikueue']",message="managedBy must be trainer.kubeflow.org/trainjob-controller or kueue.x-k8s.io/multikueue"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="managedBy is immutable"
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`
}

// RuntimeRef names a TrainingRuntime or ClusterTrainingRuntime.
type RuntimeRef struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`
	// +kubebuilder:default="trainer.kubeflow.org"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	APIGroup *string `json:"apiGroup,omitempty"`
	// +kubebuilder:default="ClusterTrainingRuntime"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Kind *string `json:"kind,omitempty"`
}

// Initializer configures the dataset and model initializers.
type Initializer struct {
	// +optional
	Dataset *DatasetInitializer `json:"dataset,omitempty"`
	// +optional
	Model *ModelInitializer `json:"model,omitempty"`
}

// DatasetInitializer downloads a dataset.
type DatasetInitializer struct {
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",message="storageUri must be empty or a URI (scheme://...)"
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	StorageUri *string `json:"storageUri,omitempty"`
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`
}

// ModelInitializer downloads a model.
type ModelInitializer struct {
	// +kubebuilder:validation:XValidation:rule="self == '' || self.matches('^[A-Za-z][A-Za-z0-9+.-]*://.+$')",message="storageUri must be empty or a URI (scheme://...)"
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	StorageUri *string `json:"storageUri,omitempty"`
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// +optional
	SecretRef *corev1.LocalObjectReference `json:"secretRef,omitempty"`
}

// Trainer overrides the trainer node of the runtime.
type Trainer struct {
	// +kubebuilder:validation:MaxLength=500
	// +optional
	Image *string `json:"image,omitempty"`
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=1048576
	// +optional
	Command []string `json:"command,omitempty"`
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:items:MaxLength=1048576
	// +optional
	Args []string `json:"args,omitempty"`
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// NumNodes overrides mlPolicy.numNodes. At most 10000 (added by this project; Kubeflow sets
	// no bound): the MPI hostfile lists every node, and 2^31-1 nodes would exhaust the
	// trainer-controller's memory before any API server could refuse the result.
	// +kubebuilder:validation:Maximum=10000
	// +optional
	NumNodes *int32 `json:"numNodes,omitempty"`
	// ResourcesPerNode overrides the trainer container's resources.
	// +optional
	ResourcesPerNode *corev1.ResourceRequirements `json:"resourcesPerNode,omitempty"`
	// NumProcPerNode is the number of processes per node (PET_NPROC_PER_NODE, MPI slots).
	// +optional
	NumProcPerNode *int32 `json:"numProcPerNode,omitempty"`
}

// RuntimePatchManagerKueue is the manager of the runtime patch Kueue's TrainJob webhook adds to
// the TrainJobs it handles; once Kueue admits the TrainJob it carries the admission's node
// selectors, tolerations, labels and annotations per replicated job.
const RuntimePatchManagerKueue = "kueue.x-k8s.io/manager"

// LabelKueueQueueName is Kueue's label naming the LocalQueue of a TrainJob.
const LabelKueueQueueName = "kueue.x-k8s.io/queue-name"

// AdmittedByKueue reports whether Kueue's TrainJob integration admits the TrainJob as a whole: it
// names a queue and carries Kueue's runtime patch. Kueue then keeps it suspended until its
// Workload holds the quota for every pod, and suspends it again on eviction.
func (tj *TrainJob) AdmittedByKueue() bool {
	if tj.Labels[LabelKueueQueueName] == "" {
		return false
	}
	for _, p := range tj.Spec.RuntimePatches {
		if p.Manager == RuntimePatchManagerKueue {
			return true
		}
	}
	return false
}

// RuntimePatch is one manager's patch of the runtime template.
type RuntimePatch struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="manager is immutable"
	// +required
	Manager string `json:"manager,omitempty"`
	// +optional
	Time *metav1.Time `json:"time,omitempty"`
	// +optional
	TrainingRuntimeSpec *TrainingRuntimeSpecPatch `json:"trainingRuntimeSpec,omitempty"`
}

// TrainingRuntimeSpecPatch patches a runtime spec.
type TrainingRuntimeSpecPatch struct {
	// +optional
	Template *JobSetTemplatePatch `json:"template,omitempty"`
}

// JobSetTemplatePatch patches the JobSet template.
type JobSetTemplatePatch struct {
	// +optional
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec *JobSetSpecPatch `json:"spec,omitempty"`
}

// JobSetSpecPatch patches replicated jobs by name.
type JobSetSpecPatch struct {
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	// +optional
	ReplicatedJobs []ReplicatedJobPatch `json:"replicatedJobs,omitempty"`
}

// ReplicatedJobPatch patches one replicated job.
type ReplicatedJobPatch struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`
	// +optional
	Template *JobTemplatePatch `json:"template,omitempty"`
}

// JobTemplatePatch patches a Job template.
type JobTemplatePatch struct {
	// +optional
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec *JobSpecPatch `json:"spec,omitempty"`
}

// JobSpecPatch patches a Job spec.
type JobSpecPatch struct {
	// +optional
	Template *PodTemplatePatch `json:"template,omitempty"`
}

// PodTemplatePatch patches a pod template.
type PodTemplatePatch struct {
	// +optional
	Metadata *metav1.ObjectMeta `json:"metadata,omitempty"`
	// +optional
	Spec *PodSpecPatch `json:"spec,omitempty"`
}

// PodSpecPatch patches the scheduling and security parts of a pod spec.
type PodSpecPatch struct {
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="serviceAccountName is immutable"
	// +optional
	ServiceAccountName *string `json:"serviceAccountName,omitempty"`
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="volumes are immutable"
	// +optional
	Volumes []corev1.Volume `json:"volumes,omitempty"`
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="initContainers are immutable"
	// +optional
	InitContainers []ContainerPatch `json:"initContainers,omitempty"`
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="containers are immutable"
	// +optional
	Containers []ContainerPatch `json:"containers,omitempty"`
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="imagePullSecrets are immutable"
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="securityContext is immutable"
	// +optional
	SecurityContext *corev1.PodSecurityContext `json:"securityContext,omitempty"`
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	SchedulingGates []corev1.PodSchedulingGate `json:"schedulingGates,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="terminationGracePeriodSeconds is immutable"
	// +optional
	TerminationGracePeriodSeconds *int64 `json:"terminationGracePeriodSeconds,omitempty"`
}

// ContainerPatch patches one container.
type ContainerPatch struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=128
	// +optional
	VolumeMounts []corev1.VolumeMount `json:"volumeMounts,omitempty"`
	// +optional
	SecurityContext *corev1.SecurityContext `json:"securityContext,omitempty"`
}

// TrainJobStatus is the observed state of a TrainJob.
// +kubebuilder:validation:MinProperties=1
type TrainJobStatus struct {
	// Conditions are Suspended, Complete and Failed.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// JobsStatus counts the pods of each replicated job (or clique).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=100
	// +optional
	JobsStatus []JobStatus `json:"jobsStatus,omitempty"`
	// NumNodes is the trainer node count the job runs with (trainer.numNodes, else the
	// runtime's). Added by this project for `kubectl get`.
	// +kubebuilder:validation:Minimum=0
	// +optional
	NumNodes int32 `json:"numNodes,omitempty"`
	// TrainerStatus is progress the training code reports.
	// +optional
	TrainerStatus *TrainerStatus `json:"trainerStatus,omitempty"`
}

// JobStatus counts the pods of one replicated job.
type JobStatus struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +required
	Ready *int32 `json:"ready,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +required
	Succeeded *int32 `json:"succeeded,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +required
	Failed *int32 `json:"failed,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +required
	Active *int32 `json:"active,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +required
	Suspended *int32 `json:"suspended,omitempty"`
}

// TrainerStatus is progress reported by the training code.
// +kubebuilder:validation:XValidation:rule="has(self.lastUpdatedTime)",message="lastUpdatedTime is required when trainerStatus is present"
type TrainerStatus struct {
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	ProgressPercentage *int32 `json:"progressPercentage,omitempty"`
	// +kubebuilder:validation:Minimum=0
	// +optional
	EstimatedRemainingSeconds *int32 `json:"estimatedRemainingSeconds,omitempty"`
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	Metrics []Metric `json:"metrics,omitempty"`
	// +optional
	LastUpdatedTime metav1.Time `json:"lastUpdatedTime,omitempty"`
}

// Metric is one named training metric.
type Metric struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +required
	Name string `json:"name,omitempty"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=64
	// +required
	Value string `json:"value,omitempty"`
}

// UpdateTrainJobStatusRequest is the body training code POSTs to the trainer-controller's status
// server (Kubeflow Trainer v2.3's): its trainerStatus replaces the TrainJob's. An empty request
// changes nothing.
type UpdateTrainJobStatusRequest struct {
	// TrainerStatus is the trainer's latest progress.
	// +optional
	TrainerStatus *TrainerStatus `json:"trainerStatus,omitempty"`
}
