package backends

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// A scheduler backend is one scheduler behind Grove (GREP-375). Each is stateless: every method
// derives what it does from its arguments, its profile's config and the API server, so each
// binary builds its own from the configuration file. Each binary sees only its share, one
// interface per caller, and a registry of that interface (registry.go): grove-operator prepares
// pods (PodPreparer), grove-webhook admits (Admitter), the backend-controller syncs (Syncer), and
// kubectl grove renders (Renderer). Every scheduler package implements all four.

// Backend is what every caller knows of a scheduler backend.
type Backend interface {
	// Name is the backend's name in scheduler profiles and in the PodGang label
	// grove.io/scheduler-name.
	Name() configv1alpha1.SchedulerName
	// PodSchedulerName is the schedulerName its pods carry.
	PodSchedulerName() string
}

// PodPreparer is grove-operator's share: what it needs to create a gang's pods and to report on a
// PodCliqueSet.
type PodPreparer interface {
	Backend
	// PreparePod adds the scheduler's fields to a pod before it is created; it reads the
	// pod's grove.io/podgang and grove.io/podclique labels. The scheduler group the PodGang's
	// status names for the pod's group (Syncer.SchedulingGroups) overrides what it sets there.
	PreparePod(pod *corev1.Pod)
	// GangScheduling reports whether the scheduler places each PodGang all together. The
	// operator then lifts the gates of a whole gang at once (holding dependent cliques back for
	// startup ordering would keep the gang from ever being complete) and holds dependents at
	// start instead (docs/startup-ordering.md).
	GangScheduling() bool
	// NotHonoured lists what a PodCliqueSet asks for that the scheduler admits but does not do,
	// given its PodGangs as observed (by name); the operator reports it in the PodCliqueSet's
	// SchedulingConstraintsHonored condition.
	NotHonoured(pcs *grovev1alpha1.PodCliqueSet, gangs map[string]*schedulerv1alpha1.PodGang) []string
}

// Admitter is grove-webhook's share: what it needs to default and admit a PodCliqueSet and a
// ClusterTopologyBinding. An Admitter whose rules depend on objects in the cluster also
// implements ClusterValidator.
type Admitter interface {
	Backend
	// ValidatePodCliqueSet rejects at admission what the scheduler cannot honour when
	// correctness depends on it, naming the field.
	ValidatePodCliqueSet(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList
	// GangScheduling reports whether the scheduler places each PodGang all together.
	GangScheduling() bool
	// KeepsTopology reports whether the scheduler keeps a topology object of its own, which a
	// ClusterTopologyBinding's schedulerTopologyBindings may name (the Syncer then implements
	// TopologySyncer).
	KeepsTopology() bool
}

// Syncer is the backend-controller's share: what it needs to keep the scheduler's objects of each
// PodGang of its backend. A Syncer whose scheduler keeps a topology object also implements
// TopologySyncer.
type Syncer interface {
	Backend
	// Init checks, once at backend-controller start, that the scheduler's API is served, and
	// explains what to enable when it is not.
	Init(ctx context.Context) error
	// SyncPodGang creates or updates the scheduler's objects for a PodGang, repairing any drift,
	// and returns the reason and message of SchedulerBackendReady=True.
	SyncPodGang(ctx context.Context, pg *schedulerv1alpha1.PodGang) (reason, message string, err error)
	// OnPodGangDelete removes what owner references do not: only the name and namespace of pg
	// are reliable, since the PodGang may be gone already.
	OnPodGangDelete(ctx context.Context, pg *schedulerv1alpha1.PodGang) error
	// SchedulingGroups names, for each pod group of a synced PodGang, the scheduler's group its
	// pods join (pod spec.schedulingGroup); the backend-controller writes them into the PodGang's
	// status with SchedulerBackendReady. Nil for schedulers that find a gang's pods otherwise.
	SchedulingGroups(pg *schedulerv1alpha1.PodGang) []schedulerv1alpha1.SchedulingGroup
	// OwnedTypes are the kinds of objects SyncPodGang creates, owned by the PodGang; the
	// backend-controller watches them to repair drift.
	OwnedTypes() []client.Object
}

// Renderer is kubectl grove's share: the scheduler's objects of a PodGang, built without a
// cluster. (kubectl grove render also runs the operator's and the webhook's own code, so it
// builds their registries too.)
type Renderer interface {
	Backend
	// BuildObjects returns the scheduler's objects for a PodGang as SyncPodGang writes them,
	// owned by the PodGang, without reading the cluster. binding is the ClusterTopologyBinding
	// the PodGang's constraints refer to, nil when there is none.
	BuildObjects(pg *schedulerv1alpha1.PodGang, binding *grovev1alpha1.ClusterTopologyBinding) ([]client.Object, error)
	// SchedulingGroups is Syncer.SchedulingGroups.
	SchedulingGroups(pg *schedulerv1alpha1.PodGang) []schedulerv1alpha1.SchedulingGroup
}

// scheduler is what every scheduler package implements: each caller's share.
type scheduler interface {
	PodPreparer
	Admitter
	Syncer
	Renderer
}

// ClusterValidator is optional: a backend whose admission rules depend on objects in the cluster
// (Volcano's queues) implements it, and grove-webhook calls it, after ValidatePodCliqueSet
// passed, for a new PodCliqueSet and for an update that changes what it checks. An error is a
// failed read, not a refusal.
type ClusterValidator interface {
	ValidatePodCliqueSetInCluster(ctx context.Context, r client.Reader, old, pcs *grovev1alpha1.PodCliqueSet) (field.ErrorList, error)
}

// TopologySyncer is optional: a backend whose scheduler keeps a topology object of its own (KAI's
// Topology) implements it beside Syncer, and the backend-controller checks for it with a type
// assertion. For each ClusterTopologyBinding the backend-controller calls SyncTopology and records the result
// in the binding's status (schedulerTopologyStatuses, SchedulerTopologyDrift).
type TopologySyncer interface {
	// SyncTopology creates and keeps the scheduler's topology object for a binding, owned by it —
	// or, when the binding's schedulerTopologyBindings name an object for this scheduler, only
	// compares that object with the binding's levels and never writes it. It returns this
	// backend's entry of the binding's status; an error is retried and is not drift.
	SyncTopology(ctx context.Context, ct *grovev1alpha1.ClusterTopologyBinding) (grovev1alpha1.SchedulerTopologyStatus, error)
	// TopologyTypes are the kinds SyncTopology creates, owned by the binding; the
	// backend-controller watches them to repair drift.
	TopologyTypes() []client.Object
}
