// Package v2alpha2 holds local Go types for KAI scheduler's scheduling.run.ai/v2alpha2 PodGroup.
// The KAI Go modules cannot be fetched here, so these types mirror the JSON of KAI's published
// CRD. `make manifests` generates the PodGroup CRD from them (config/thirdparty/kai) for the
// local cluster and the tests; an optional tier (config/thirdparty) compares it with KAI's
// published CRD.
// +kubebuilder:object:generate=true
// +groupName=scheduling.run.ai
package v2alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of KAI's PodGroup.
	GroupVersion = schema.GroupVersion{Group: "scheduling.run.ai", Version: "v2alpha2"}

	// SchemeBuilder registers this package's kinds with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes adds this package's kinds to a scheme under GroupVersion.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &PodGroup{}, &PodGroupList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// Pod contract of KAI: the scheduler name, and where a pod names its PodGroup and subgroup.
const (
	SchedulerName            = "kai-scheduler"
	PodGroupNameAnnotation   = "pod-group-name"
	SubGroupLabel            = "kai.scheduler/subgroup-name"
	SkipPodGrouperAnnotation = "kai.scheduler/skip-podgrouper"
	QueueLabel               = "kai.scheduler/queue"
)

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=pg
// +kubebuilder:subresource:status

// PodGroup is KAI's gang: its pods are scheduled together once minMember (or minSubGroup) fit.
type PodGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodGroupSpec   `json:"spec,omitempty"`
	Status PodGroupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodGroupList is a list of PodGroups.
type PodGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGroup `json:"items"`
}

// PodGroupSpec is the desired gang.
type PodGroupSpec struct {
	// +kubebuilder:validation:Minimum=0
	MinMember *int32 `json:"minMember,omitempty"`
	// +kubebuilder:validation:Minimum=0
	MinSubGroup       *int32 `json:"minSubGroup,omitempty"`
	Queue             string `json:"queue,omitempty"`
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// +kubebuilder:validation:Enum=preemptible;non-preemptible
	Preemptibility     string              `json:"preemptibility,omitempty"`
	MarkUnschedulable  *bool               `json:"markUnschedulable,omitempty"`
	SchedulingBackoff  *int32              `json:"schedulingBackoff,omitempty"`
	SubGroups          []SubGroup          `json:"subGroups,omitempty"`
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
}

// SubGroup is a nested gang inside a PodGroup (one per PodClique, or per scaling-group replica).
type SubGroup struct {
	// Name is a DNS label, unique in the PodGroup (KAI validates it; the backend relies on that).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Parent *string `json:"parent,omitempty"`
	// +kubebuilder:validation:Minimum=0
	MinMember *int32 `json:"minMember,omitempty"`
	// +kubebuilder:validation:Minimum=0
	MinSubGroup        *int32              `json:"minSubGroup,omitempty"`
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
}

// TopologyConstraint names a KAI Topology object and the levels (node-label keys) to pack within.
type TopologyConstraint struct {
	Topology               string `json:"topology,omitempty"`
	RequiredTopologyLevel  string `json:"requiredTopologyLevel,omitempty"`
	PreferredTopologyLevel string `json:"preferredTopologyLevel,omitempty"`
}

// PodGroupStatus is the part of KAI's status the backend reads.
type PodGroupStatus struct {
	Conditions []PodGroupCondition `json:"conditions,omitempty"`
}

// PodGroupCondition is a KAI status condition. KAI's schema requires none of its fields, so
// neither does the generated CRD.
type PodGroupCondition struct {
	// +optional
	Type string `json:"type"`
	// +optional
	Status             string      `json:"status"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
	TransitionID       string      `json:"transitionID,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}
