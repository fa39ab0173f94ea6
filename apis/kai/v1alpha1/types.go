// Package v1alpha1 holds local Go types for KAI scheduler's kai.scheduler/v1alpha1 Topology.
// The KAI Go modules cannot be fetched here, so these types mirror the JSON of KAI's published
// CRD (tested against it); the CRD itself is KAI's, never generated from this package.
// +kubebuilder:object:generate=true
// +kubebuilder:skip
// +groupName=kai.scheduler
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of KAI's Topology.
	GroupVersion = schema.GroupVersion{Group: "kai.scheduler", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// +kubebuilder:object:root=true

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
	Levels []TopologyLevel `json:"levels"`
}

// TopologyLevel is one level: the node label whose value names a node's domain, and an optional
// alias workloads may use in its place.
type TopologyLevel struct {
	NodeLabel string `json:"nodeLabel"`
	Alias     string `json:"alias,omitempty"`
}

func init() {
	SchemeBuilder.Register(&Topology{}, &TopologyList{})
}
