// Package v1alpha1 holds local Go types for KAI scheduler's kai.scheduler/v1alpha1 Topology.
// The KAI Go modules cannot be fetched here, so these types mirror the JSON of KAI's published
// CRD. `make manifests` generates the Topology CRD from them (config/thirdparty/kai) for the
// local cluster and the tests; an optional tier (config/thirdparty) compares it with KAI's
// published CRD.
// +kubebuilder:object:generate=true
// +groupName=kai.scheduler
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of KAI's Topology.
	GroupVersion = schema.GroupVersion{Group: "kai.scheduler", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes adds this package's kinds to a scheme under GroupVersion.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Topology{}, &TopologyList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster

// Topology is a cluster-scoped KAI topology: the node labels of its levels, broadest first. A
// PodGroup's topologyConstraint names one and packs within one of its levels. KAI forbids
// changing the levels' node labels once created; only their aliases may be edited.
type Topology struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec TopologySpec `json:"spec"`
}

// +kubebuilder:object:root=true

// TopologyList is a list of Topologies.
type TopologyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Topology `json:"items"`
}

// TopologySpec holds the levels, broadest first (1 to 16; kubernetes.io/hostname only last).
type TopologySpec struct {
	// Levels follow KAI's rules, which the backend relies on: node labels are unique, cannot be
	// edited once created (only aliases can) and kubernetes.io/hostname may only be the last.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +kubebuilder:validation:XValidation:rule="self.map(l, l.nodeLabel) == oldSelf.map(l, l.nodeLabel)",message="nodeLabel structure is immutable; only aliases may be edited"
	// +kubebuilder:validation:XValidation:rule="size(self.filter(i, size(self.filter(j, j.nodeLabel == i.nodeLabel)) > 1)) == 0",message="nodeLabel must be unique"
	// +kubebuilder:validation:XValidation:rule="size(self.filter(i, i.nodeLabel == 'kubernetes.io/hostname')) == 0 || self[size(self) - 1].nodeLabel == 'kubernetes.io/hostname'",message="the kubernetes.io/hostname label can only be used at the lowest level of topology"
	Levels []TopologyLevel `json:"levels"`
}

// TopologyLevel is one level: the node label whose value names a node's domain, and an optional
// alias workloads may use in its place.
type TopologyLevel struct {
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	NodeLabel string `json:"nodeLabel"`
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	Alias string `json:"alias,omitempty"`
}
