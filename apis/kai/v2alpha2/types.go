// Package v2alpha2 holds local Go types for KAI scheduler's scheduling.run.ai/v2alpha2 PodGroup.
// The KAI Go modules cannot be fetched here, so these types mirror the JSON of KAI's published
// CRD (tested against it); the CRD itself is KAI's, never generated from this package.
// +kubebuilder:object:generate=true
// +kubebuilder:skip
// +groupName=scheduling.run.ai
package v2alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of KAI's PodGroup.
	GroupVersion = schema.GroupVersion{Group: "scheduling.run.ai", Version: "v2alpha2"}

	// SchemeBuilder registers this package's kinds with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// Pod contract of KAI: the scheduler name, and where a pod names its PodGroup and subgroup.
const (
	SchedulerName            = "kai-scheduler"
	PodGroupNameAnnotation   = "pod-group-name"
	SubGroupLabel            = "kai.scheduler/subgroup-name"
	SkipPodGrouperAnnotation = "kai.scheduler/skip-podgrouper"
	QueueLabel               = "kai.scheduler/queue"
)

// +kubebuilder:object:root=true

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
	MinMember          *int32              `json:"minMember,omitempty"`
	MinSubGroup        *int32              `json:"minSubGroup,omitempty"`
	Queue              string              `json:"queue,omitempty"`
	PriorityClassName  string              `json:"priorityClassName,omitempty"`
	Preemptibility     string              `json:"preemptibility,omitempty"`
	MarkUnschedulable  *bool               `json:"markUnschedulable,omitempty"`
	SchedulingBackoff  *int32              `json:"schedulingBackoff,omitempty"`
	SubGroups          []SubGroup          `json:"subGroups,omitempty"`
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
}

// SubGroup is a nested gang inside a PodGroup (one per PodClique, or per scaling-group replica).
type SubGroup struct {
	Name               string              `json:"name"`
	Parent             *string             `json:"parent,omitempty"`
	MinMember          *int32              `json:"minMember,omitempty"`
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

// PodGroupCondition is a KAI status condition.
type PodGroupCondition struct {
	Type               string      `json:"type"`
	Status             string      `json:"status"`
	Reason             string      `json:"reason,omitempty"`
	Message            string      `json:"message,omitempty"`
	TransitionID       string      `json:"transitionID,omitempty"`
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

func init() {
	SchemeBuilder.Register(&PodGroup{}, &PodGroupList{})
}
