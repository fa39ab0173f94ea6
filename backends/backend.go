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

// SchedulerBackend is one scheduler behind Grove (GREP-375). A backend is stateless: every
// method derives what it does from its arguments, its profile's config and the API server, so
// the operator, the webhook and the backend-controller can each build their own.
type SchedulerBackend interface {
	// Name is the backend's name in scheduler profiles and in the PodGang label
	// grove.io/scheduler-name.
	Name() configv1alpha1.SchedulerName
	// PodSchedulerName is the schedulerName its pods carry.
	PodSchedulerName() string
	// Init checks, once at backend-controller start, that the scheduler's API is served, and
	// explains what to enable when it is not.
	Init(ctx context.Context) error
	// SyncPodGang creates or updates the scheduler's objects for a PodGang, repairing any drift,
	// and returns the reason and message of SchedulerBackendReady=True.
	SyncPodGang(ctx context.Context, pg *schedulerv1alpha1.PodGang) (reason, message string, err error)
	// BuildObjects returns the scheduler's objects for a PodGang as SyncPodGang writes them,
	// owned by the PodGang, without reading the cluster: kubectl grove renders them. binding is
	// the ClusterTopologyBinding the PodGang's constraints refer to, nil when there is none.
	BuildObjects(pg *schedulerv1alpha1.PodGang, binding *grovev1alpha1.ClusterTopologyBinding) ([]client.Object, error)
	// OnPodGangDelete removes what owner references do not: only the name and namespace of pg
	// are reliable, since the PodGang may be gone already.
	OnPodGangDelete(ctx context.Context, pg *schedulerv1alpha1.PodGang) error
	// PreparePod adds the scheduler's fields to a pod before it is created; it reads the
	// pod's grove.io/podgang and grove.io/podclique labels. The scheduler group the PodGang's
	// status names for the pod's group (SchedulingGroups) overrides what it sets there.
	PreparePod(pod *corev1.Pod)
	// SchedulingGroups names, for each pod group of a synced PodGang, the scheduler's group its
	// pods join (pod spec.schedulingGroup); the backend-controller writes them into the PodGang's
	// status with SchedulerBackendReady. Nil for schedulers that find a gang's pods otherwise.
	SchedulingGroups(pg *schedulerv1alpha1.PodGang) []schedulerv1alpha1.SchedulingGroup
	// ValidatePodCliqueSet rejects at admission what the scheduler cannot honour when
	// correctness depends on it, naming the field.
	ValidatePodCliqueSet(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList
	// NotHonoured lists what a PodCliqueSet asks for that the scheduler admits but does not do;
	// the operator reports it in the PodCliqueSet's SchedulingConstraintsHonored condition.
	NotHonoured(pcs *grovev1alpha1.PodCliqueSet) []string
	// GangScheduling reports whether the scheduler places each PodGang all together. The
	// operator then lifts the gates of a whole gang at once (holding dependent cliques back for
	// startup ordering would keep the gang from ever being complete) and holds dependents at
	// start instead (docs/startup-ordering.md).
	GangScheduling() bool
	// OwnedTypes are the kinds of objects SyncPodGang creates, owned by the PodGang; the
	// backend-controller watches them to repair drift.
	OwnedTypes() []client.Object
}

// ClusterValidator is optional: a backend whose admission rules depend on objects in the cluster
// (Volcano's queues) implements it, and grove-webhook calls it, after ValidatePodCliqueSet
// passed, for a new PodCliqueSet and for an update that changes what it checks. An error is a
// failed read, not a refusal.
type ClusterValidator interface {
	ValidatePodCliqueSetInCluster(ctx context.Context, r client.Reader, old, pcs *grovev1alpha1.PodCliqueSet) (field.ErrorList, error)
}

// TopologySyncer is optional: a backend whose scheduler keeps a topology object of its own (KAI's
// Topology) implements it, and the backend-controller checks for it with a type assertion. For
// each ClusterTopologyBinding the backend-controller calls SyncTopology and records the result in
// the binding's status (schedulerTopologyStatuses, SchedulerTopologyDrift).
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
