package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=ct
// +kubebuilder:printcolumn:name="Levels",type=string,JSONPath=`.spec.levels[*].domain`
// +kubebuilder:printcolumn:name="Drift",type=string,JSONPath=`.status.conditions[?(@.type=="SchedulerTopologyDrift")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// ClusterTopologyBinding names the topology levels of a cluster — which node label holds each
// domain — so workloads can ask to be packed within a domain by name.
type ClusterTopologyBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterTopologyBindingSpec   `json:"spec"`
	Status ClusterTopologyBindingStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterTopologyBindingList is a list of ClusterTopologyBindings.
type ClusterTopologyBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTopologyBinding `json:"items"`
}

// ClusterTopologyBindingSpec is the cluster's topology, broadest level first.
type ClusterTopologyBindingSpec struct {
	// Levels are ordered from the broadest domain to the narrowest, in the order listed (as
	// upstream Grove orders them); domains are free-form names. Each domain and each key appears
	// once (grove-webhook refuses a repeat, naming the element as upstream Grove does).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Levels []TopologyLevel `json:"levels"`

	// SchedulerTopologyBindings name scheduler topology objects someone else manages. For a
	// scheduler listed here the backend only checks the object for drift; for others it creates
	// and keeps its own.
	// +optional
	// +listType=map
	// +listMapKey=schedulerName
	SchedulerTopologyBindings []SchedulerTopologyBinding `json:"schedulerTopologyBindings,omitempty"`
}

// TopologyLevel binds a domain name to the node label that holds it.
type TopologyLevel struct {
	// Domain is the level's name in workloads' pack constraints (^[a-z][a-z0-9-]*$, 1-63
	// characters).
	Domain TopologyDomain `json:"domain"`
	// Key is the node label whose value identifies the domain a node is in.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	Key string `json:"key"`
}

// SchedulerTopologyBinding points a scheduler at a topology object it already has.
type SchedulerTopologyBinding struct {
	// SchedulerName is the scheduler backend (kai-scheduler).
	SchedulerName string `json:"schedulerName"`
	// TopologyReference is the name of that scheduler's topology object.
	// +kubebuilder:validation:MinLength=1
	TopologyReference string `json:"topologyReference"`
}

// ClusterTopologyBindingStatus is what the backends found.
type ClusterTopologyBindingStatus struct {
	// ObservedGeneration is the generation the statuses describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: SchedulerTopologyDrift is True when a scheduler's topology object does not
	// match the levels.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// SchedulerTopologyStatuses report, per backend, whether its topology object matches.
	// +optional
	// +listType=map
	// +listMapKey=schedulerName
	SchedulerTopologyStatuses []SchedulerTopologyStatus `json:"schedulerTopologyStatuses,omitempty"`
}

// SchedulerTopologyStatus is one backend's view of the binding.
type SchedulerTopologyStatus struct {
	// SchedulerName is the backend.
	SchedulerName string `json:"schedulerName"`
	// TopologyReference is the backend's topology object.
	// +optional
	TopologyReference string `json:"topologyReference,omitempty"`
	// InSync is true when that object has exactly the binding's levels.
	InSync bool `json:"inSync"`
	// SchedulerBackendTopologyObservedGeneration is the generation of the backend's topology
	// object last compared (upstream Grove's name); 0 when it was not found.
	// +optional
	SchedulerBackendTopologyObservedGeneration int64 `json:"schedulerBackendTopologyObservedGeneration,omitempty"`
	// Message explains a drift.
	// +optional
	Message string `json:"message,omitempty"`
}

// ConditionSchedulerTopologyDrift is the binding's condition type.
const ConditionSchedulerTopologyDrift = "SchedulerTopologyDrift"

// TopologyDomainOrder is the conventional order of the domains upstream Grove names, broadest
// first: admission ranks pack domains by it while the binding they name does not exist yet.
var TopologyDomainOrder = []TopologyDomain{"region", "zone", "datacenter", "block", "rack", "host", "numa"}

// KeyOf returns the node label of a domain, and whether the binding has that domain.
func (s *ClusterTopologyBindingSpec) KeyOf(domain TopologyDomain) (string, bool) {
	for _, l := range s.Levels {
		if l.Domain == domain {
			return l.Key, true
		}
	}
	return "", false
}
