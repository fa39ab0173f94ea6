package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxReplicas bounds every replica and pod count of the grove.io kinds (the CRD schemas say
// Maximum=10000; Kubernetes itself supports 150,000 pods per cluster). One PodGang lists every pod
// of its gang and must fit in one etcd object, which some 15,000 pod references already exceed,
// and the operator keeps a clique's pod indices in memory: an unbounded count (2^31-1 is a valid
// int32) would crash it instead of running.
const MaxReplicas = 10000

// TopologyDomain names a level of a ClusterTopologyBinding: free-form as upstream Grove has it
// (region, zone, block, rack, host, nvl-domain, ...), ordered by the binding's levels.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=63
// +kubebuilder:validation:Pattern=`^[a-z][a-z0-9-]*$`
type TopologyDomain string

// TopologyConstraint asks the scheduler to pack each replica of the resource it is set on inside
// one topology domain. A child may only be as strict as, or stricter than, its parent.
// +kubebuilder:validation:XValidation:rule="has(self.pack) || has(self.packDomain)",message="topologyConstraint must specify pack or deprecated packDomain",fieldPath=".pack",reason=FieldValueRequired
// +kubebuilder:validation:XValidation:rule="!(has(self.packDomain) && has(self.pack) && has(self.pack.required))",message="must not set both pack.required and deprecated packDomain",fieldPath=".pack.required"
type TopologyConstraint struct {
	// TopologyName names the ClusterTopologyBinding whose levels the domains refer to. Children
	// inherit it from their parent when unset.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	TopologyName string `json:"topologyName,omitempty"`

	// Pack holds the required and preferred packing domains.
	// +optional
	Pack *TopologyPackConstraint `json:"pack,omitempty"`

	// PackDomain is upstream Grove's older spelling of pack.required, kept so that objects
	// stored with it stay valid (and are honoured as pack.required); new workloads are refused
	// with it.
	//
	// Deprecated: use pack.required.
	// +optional
	PackDomain TopologyDomain `json:"packDomain,omitempty"`
}

// RequiredDomain is the domain every replica must fit in: pack.required, else the deprecated
// packDomain, else "".
func (tc *TopologyConstraint) RequiredDomain() TopologyDomain {
	switch {
	case tc == nil:
		return ""
	case tc.Pack != nil && tc.Pack.Required != "":
		return tc.Pack.Required
	}
	return tc.PackDomain
}

// PreferredDomain is pack.preferred, or "".
func (tc *TopologyConstraint) PreferredDomain() TopologyDomain {
	if tc == nil || tc.Pack == nil {
		return ""
	}
	return tc.Pack.Preferred
}

// TopologyPackConstraint holds a hard and a best-effort packing domain.
// +kubebuilder:validation:XValidation:rule="has(self.required) || has(self.preferred)",message="pack must specify at least one of required or preferred",reason=FieldValueRequired
type TopologyPackConstraint struct {
	// Required is the domain every replica must fit in; the workload stays pending otherwise.
	// +optional
	Required TopologyDomain `json:"required,omitempty"`

	// Preferred is a narrower domain the scheduler tries first and may fall back from.
	// +optional
	Preferred TopologyDomain `json:"preferred,omitempty"`
}

// AutoScalingConfig configures the HorizontalPodAutoscaler the operator creates for a PodClique or
// a PodCliqueScalingGroup.
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas",fieldPath=".minReplicas"
type AutoScalingConfig struct {
	// MinReplicas is the lowest replica count the autoscaler may choose (defaults to the
	// resource's minAvailable). 0 lets the autoscaler make the component idle (zero replicas)
	// where the cluster allows it: the HorizontalPodAutoscaler's HPAScaleToZero feature gate and
	// at least one Object or External metric, which admission requires.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the highest replica count the autoscaler may choose.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	MaxReplicas int32 `json:"maxReplicas"`

	// Metrics drive the autoscaler; empty means 80% average CPU utilisation.
	// +optional
	// +listType=atomic
	Metrics []autoscalingv2.MetricSpec `json:"metrics,omitempty"`
}

// ErrorCode identifies a class of reconcile error so users and alerts can match on it.
type ErrorCode string

// Condition NameCollision of a PodCliqueSet: True while a name it would give a child is held by
// an object another owner controls (another PodCliqueSet whose generated names overlap); the
// message names both objects. Nothing is adopted or shared: the name is left to its holder.
const (
	ConditionNameCollision       = "NameCollision"
	ReasonNameHeldByAnotherOwner = "NameHeldByAnotherOwner"
	ReasonNoNameCollision        = "NoNameCollision"
)

// Error codes of the steps of a PodCliqueSet reconcile, in status.lastErrors.
const (
	ErrorCodeGangTermination ErrorCode = "ERR_GANG_TERMINATION"
	ErrorCodeSyncReplica     ErrorCode = "ERR_SYNC_REPLICA"
	ErrorCodeResourceClaims  ErrorCode = "ERR_SYNC_RESOURCE_CLAIMS"
	ErrorCodeComputeDomains  ErrorCode = "ERR_SYNC_COMPUTE_DOMAINS"
	ErrorCodeSyncAutoscalers ErrorCode = "ERR_SYNC_AUTOSCALERS"
	ErrorCodeDeleteChildren  ErrorCode = "ERR_DELETE_CHILDREN"
	ErrorCodeTraining        ErrorCode = "ERR_TRAINING"
	ErrorCodeReconcile       ErrorCode = "ERR_RECONCILE"
)

// LastError records an error of the most recent reconcile, surfaced in status so a user sees why
// a reconcile keeps failing without reading operator logs.
type LastError struct {
	// Code identifies the kind of error.
	Code ErrorCode `json:"code"`
	// Description is the error message.
	Description string `json:"description"`
	// ObservedAt is when the error happened.
	ObservedAt metav1.Time `json:"observedAt"`
}
