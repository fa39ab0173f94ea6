// Package v2 holds local Go types for KAI scheduler's scheduling.run.ai/v2 Queue, mirroring the
// JSON of KAI's published CRD (the KAI modules cannot be fetched here). `make manifests`
// generates the Queue CRD from them (config/thirdparty/kai) for the local cluster and the tests;
// an optional tier (config/thirdparty) compares it with KAI's published CRD.
// +kubebuilder:object:generate=true
// +groupName=scheduling.run.ai
package v2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of KAI's Queue.
	GroupVersion = schema.GroupVersion{Group: "scheduling.run.ai", Version: "v2"}

	// SchemeBuilder registers this package's kinds with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes adds this package's kinds to a scheme under GroupVersion.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Queue{}, &QueueList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster
// +kubebuilder:subresource:status

// Queue is a KAI quota queue; a PodGroup names one, and KAI leaves the gang pending without it.
// Its status is KAI's to write and nothing here reads it, so the type leaves it out; the CRD
// still has KAI's status subresource, so writes of the spec never touch it.
type Queue struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec QueueSpec `json:"spec,omitempty"`
}

// +kubebuilder:object:root=true

// QueueList is a list of Queues.
type QueueList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Queue `json:"items"`
}

// QueueSpec is the quota of a queue.
type QueueSpec struct {
	DisplayName       string          `json:"displayName,omitempty"`
	ParentQueue       string          `json:"parentQueue,omitempty"`
	Priority          *int            `json:"priority,omitempty"`
	PreemptMinRuntime *string         `json:"preemptMinRuntime,omitempty"`
	ReclaimMinRuntime *string         `json:"reclaimMinRuntime,omitempty"`
	Resources         *QueueResources `json:"resources,omitempty"`
}

// QueueResources is the quota per resource kind.
type QueueResources struct {
	CPU    *ResourceQuota `json:"cpu,omitempty"`
	GPU    *ResourceQuota `json:"gpu,omitempty"`
	Memory *ResourceQuota `json:"memory,omitempty"`
}

// ResourceQuota is the quota of one resource kind (-1: unlimited). KAI's schema requires none of
// them, so neither does the generated CRD, though this type always writes quota and limit.
type ResourceQuota struct {
	// +optional
	Quota float64 `json:"quota"`
	// +optional
	Limit           float64 `json:"limit"`
	OverQuotaWeight float64 `json:"overQuotaWeight,omitempty"`
}
