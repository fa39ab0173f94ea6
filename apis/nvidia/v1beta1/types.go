// Package v1beta1 holds local Go types for NVIDIA's resource.nvidia.com/v1beta1 ComputeDomain,
// the object a multi-node NVLink (MNNVL) group is realised with (NVIDIA's DRA driver for GPUs
// installs its CRD). The operator writes ComputeDomains as unstructured objects; these types
// exist so that `make manifests` generates the CRD (config/thirdparty/nvidia) for the local
// cluster and the tests, and an optional tier (config/thirdparty) compares it with NVIDIA's
// published CRD.
// +kubebuilder:object:generate=true
// +groupName=resource.nvidia.com
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of NVIDIA's ComputeDomain.
	GroupVersion = schema.GroupVersion{Group: "resource.nvidia.com", Version: "v1beta1"}

	// SchemeBuilder registers this package's kinds with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes adds this package's kinds to a scheme under GroupVersion.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ComputeDomain{}, &ComputeDomainList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:subresource:status

// ComputeDomain prepares a set of nodes for a multi-node workload: NVIDIA's driver runs an IMEX
// daemon on each node whose pods claim a channel from the ResourceClaimTemplate it makes.
type ComputeDomain struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ComputeDomainSpec   `json:"spec,omitempty"`
	Status ComputeDomainStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ComputeDomainList is a list of ComputeDomains.
type ComputeDomainList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ComputeDomain `json:"items"`
}

// ComputeDomainSpec is the domain's channel and expected size. It is immutable, as in NVIDIA's
// schema: the operator deletes a ComputeDomain it no longer wants and never updates one.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="A computeDomain.spec is immutable"
type ComputeDomainSpec struct {
	// NumNodes is the number of nodes expected to join; 0 (what the operator writes) lets the
	// IMEX daemons follow the pods.
	// +optional
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	NumNodes int `json:"numNodes"`
	// Channel is how the workload's pods join the domain.
	Channel *ComputeDomainChannelSpec `json:"channel"`
}

// ComputeDomainChannelSpec names the ResourceClaimTemplate NVIDIA's driver makes for the
// domain's channel, and how many IMEX channels a claim gets.
type ComputeDomainChannelSpec struct {
	ResourceClaimTemplate ComputeDomainResourceClaimTemplate `json:"resourceClaimTemplate"`
	// AllocationMode asks for one IMEX channel (Single) or every channel of the domain (All).
	// +optional
	// +kubebuilder:default=Single
	// +kubebuilder:validation:Enum=All;Single
	AllocationMode string `json:"allocationMode,omitempty"`
}

// ComputeDomainResourceClaimTemplate is the ResourceClaimTemplate to generate.
type ComputeDomainResourceClaimTemplate struct {
	Name string `json:"name"`
}

// ComputeDomainStatus is written by NVIDIA's controller: whether the domain is ready and the
// nodes that joined it.
type ComputeDomainStatus struct {
	// +kubebuilder:default=NotReady
	// +kubebuilder:validation:Enum=Ready;NotReady
	Status string `json:"status"`
	// +optional
	// +listType=map
	// +listMapKey=name
	Nodes []ComputeDomainNode `json:"nodes,omitempty"`
}

// ComputeDomainNode is one node that joined a ComputeDomain.
type ComputeDomainNode struct {
	Name      string `json:"name"`
	IPAddress string `json:"ipAddress"`
	CliqueID  string `json:"cliqueID"`
	// Index makes a node's DNS name within its clique stable.
	// +optional
	Index int `json:"index"`
	// Status is whether the node's IMEX daemon is ready.
	// +optional
	// +kubebuilder:default=NotReady
	// +kubebuilder:validation:Enum=Ready;NotReady
	Status string `json:"status,omitempty"`
}
