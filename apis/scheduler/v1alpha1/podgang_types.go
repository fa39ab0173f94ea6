package v1alpha1

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pg
// +kubebuilder:printcolumn:name="Scheduler",type=string,JSONPath=`.metadata.labels.grove\.io/scheduler-name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Initialized",type=string,JSONPath=`.status.conditions[?(@.type=="Initialized")].status`
// +kubebuilder:printcolumn:name="BackendReady",type=string,JSONPath=`.status.conditions[?(@.type=="SchedulerBackendReady")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// PodGang is a group of pods that must be scheduled all together or not at all.
type PodGang struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PodGangSpec   `json:"spec"`
	Status PodGangStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PodGangList is a list of PodGangs.
type PodGangList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []PodGang `json:"items"`
}

// PodGangSpec is what the operator asks of the scheduler.
type PodGangSpec struct {
	// PodGroups are the member groups, one per PodClique.
	// +listType=map
	// +listMapKey=name
	PodGroups []PodGroup `json:"podgroups"`

	// TopologyConstraint packs the whole gang.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`

	// TopologyConstraintGroupConfigs pack subsets of the pod groups (e.g. one scaling-group
	// replica) more tightly than the whole gang.
	// +optional
	TopologyConstraintGroupConfigs []TopologyConstraintGroupConfig `json:"topologyConstraintGroupConfigs,omitempty"`

	// PriorityClassName is the priority of the gang.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// ReuseReservationRef suggests the scheduler reuse the placement of an earlier gang.
	// +optional
	ReuseReservationRef *NamespacedName `json:"reuseReservationRef,omitempty"`

	// QueueName is the Kueue LocalQueue that admits this gang as a whole (docs/kueue.md); empty
	// when the gang is not queued. The backend-controller keeps a Kueue Workload of the PodGang's
	// name for it and reports Kueue's decision in the QueueAdmitted condition.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	QueueName string `json:"queueName,omitempty"`

	// QueueAdmittedByOwner says Kueue admitted the gang's PodCliqueSet through its owner as a
	// whole (PodCliqueSet spec.queueAdmission: Owner): the gang has no Workload of its own and
	// never waits for the queue.
	// +optional
	QueueAdmittedByOwner bool `json:"queueAdmittedByOwner,omitempty"`

	// SchedulerQueueName is the gang scheduler's own queue the gang joins (a Volcano Queue, from
	// the PodCliqueSet's scheduling.grove.io/volcano-queue annotation); empty: the scheduler's
	// default. Unrelated to Kueue's QueueName.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	SchedulerQueueName string `json:"schedulerQueueName,omitempty"`

	// MultiKueue is set on the gangs of a PodCliqueSet that Kueue's MultiKueue runs on a worker
	// cluster (docs/kueue.md, Multi-cluster); nil otherwise.
	// +optional
	MultiKueue *PodGangMultiKueue `json:"multiKueue,omitempty"`
}

// MultiKueueRole says which side of MultiKueue a gang is on.
// +kubebuilder:validation:Enum=Manager;Worker
type MultiKueueRole string

const (
	// MultiKueueManager: the gang runs on a worker cluster; on this cluster only its Workload is
	// kept, for MultiKueue to dispatch. It has no pods here.
	MultiKueueManager MultiKueueRole = "Manager"
	// MultiKueueWorker: the gang runs here, admitted under the Workload MultiKueue copied from
	// the manager cluster: the backend-controller adopts that Workload and never creates one.
	MultiKueueWorker MultiKueueRole = "Worker"
)

// PodGangMultiKueue is how MultiKueue takes part in a gang's admission.
type PodGangMultiKueue struct {
	// Role is the side of MultiKueue this cluster is on for the gang.
	Role MultiKueueRole `json:"role"`
	// PlacedAfter (Manager only) names the gang whose Workload must have been placed on a worker
	// before this gang's Workload is created: MultiKueue then sends it to that worker only, so
	// every gang of the PodCliqueSet lands on one cluster. Empty for the first gang.
	// +optional
	PlacedAfter string `json:"placedAfter,omitempty"`
}

// PodGroup is the set of pods of one PodClique within a gang.
type PodGroup struct {
	// Name of the group (the PodClique name).
	Name string `json:"name"`
	// PodReferences are the member pods; filled once all pods exist.
	PodReferences []NamespacedName `json:"podReferences"`
	// MinReplicas is how many pods of the group must be placed together.
	// +kubebuilder:validation:Minimum=0
	MinReplicas int32 `json:"minReplicas"`
	// PodResourceRequests are the resources one pod of the group requests, as the scheduler
	// counts them (containers, init containers, overhead), from its PodClique's pod template. The
	// operator writes them with the group, so a backend that reserves resources for a gang
	// (coscheduling's minResources) learns them here, even before the PodClique exists.
	// +optional
	PodResourceRequests corev1.ResourceList `json:"podResourceRequests,omitempty"`
	// TopologyConstraint packs the pods of this group.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
}

// TopologyConstraint holds topology packing constraints as node-label keys.
type TopologyConstraint struct {
	// PackConstraint holds the required and preferred keys.
	// +optional
	PackConstraint *TopologyPackConstraint `json:"packConstraint,omitempty"`
}

// TopologyPackConstraint holds node-label keys (e.g. kubernetes.io/hostname).
type TopologyPackConstraint struct {
	// Required is the key whose single value all pods must share.
	// +optional
	Required *string `json:"required,omitempty"`
	// Preferred is a narrower key the scheduler tries first.
	// +optional
	Preferred *string `json:"preferred,omitempty"`
}

// TopologyConstraintGroupConfig packs a subset of the pod groups.
type TopologyConstraintGroupConfig struct {
	// Name of the subset.
	Name string `json:"name"`
	// PodGroupNames are the members.
	PodGroupNames []string `json:"podGroupNames"`
	// TopologyConstraint packs the members.
	// +optional
	TopologyConstraint *TopologyConstraint `json:"topologyConstraint,omitempty"`
}

// NamespacedName names a pod; types.NamespacedName has no JSON tags.
type NamespacedName struct {
	// Namespace of the object.
	Namespace string `json:"namespace"`
	// Name of the object.
	Name string `json:"name"`
}

// PodGangPhase is the coarse scheduling state of a gang.
// +kubebuilder:validation:Enum=Pending;Starting;Running;Failed;Succeeded
type PodGangPhase string

const (
	// PodGangPhasePending means the gang waits for placement: some pod group has fewer than its
	// minReplicas pods bound to nodes (Scheduled is not True).
	PodGangPhasePending PodGangPhase = "Pending"
	// PodGangPhaseStarting means the gang is placed (Scheduled) and its pods are starting: some
	// pod group has fewer than its minReplicas pods ready.
	PodGangPhaseStarting PodGangPhase = "Starting"
	// PodGangPhaseRunning means every pod group has its minReplicas pods ready (Ready), or ready
	// and finished: a batch gang stays Running while its pods succeed one by one.
	PodGangPhaseRunning PodGangPhase = "Running"
	// PodGangPhaseFailed means a referenced pod failed and has not been replaced yet.
	PodGangPhaseFailed PodGangPhase = "Failed"
	// PodGangPhaseSucceeded means every referenced pod succeeded (batch workloads).
	PodGangPhaseSucceeded PodGangPhase = "Succeeded"
)

// Condition types of a PodGang, and which side writes them.
const (
	// ConditionInitialized (operator): all pods exist and podReferences are complete.
	ConditionInitialized = "Initialized"
	// ConditionSchedulerBackendReady (backend-controller): the scheduler's own objects exist
	// for the PodGang's current generation.
	ConditionSchedulerBackendReady = "SchedulerBackendReady"
	// ConditionScheduled (operator, for every backend: it sees each pod's binding): every pod
	// group has its minReplicas pods bound to nodes. False carries the scheduler's own reason
	// and message from a waiting pod's PodScheduled condition.
	ConditionScheduled = "Scheduled"
	// ConditionReady (operator): every pod group has minReplicas ready pods.
	ConditionReady = "Ready"
	// ConditionUnhealthy (operator): the gang is a candidate for gang termination.
	ConditionUnhealthy = "Unhealthy"
	// ConditionQueueAdmitted (backend-controller, for a gang with spec.queueName): Kueue admitted
	// the gang's Workload; False while it waits, was evicted or cannot be admitted, with Kueue's
	// reason and message.
	ConditionQueueAdmitted = "QueueAdmitted"
)

// Reasons of QueueAdmitted.
const (
	// ReasonQueueAdmitted: Kueue reserved quota for the whole gang and admitted it.
	ReasonQueueAdmitted = "Admitted"
	// ReasonQueueAdmittedWithoutTopology: Kueue admitted the gang, but not every pack constraint
	// reached its topology-aware scheduling as written: the queue's ClusterQueue has no flavor
	// with a topology, or a constraint shared by pod groups Kueue cannot co-locate was applied to
	// each of them on its own (the message says which). The grove-operator reports it in the
	// PodCliqueSet's SchedulingConstraintsHonored condition.
	ReasonQueueAdmittedWithoutTopology = "AdmittedWithoutTopology"
	// ReasonQueuePending: the Workload waits in its queue for quota.
	ReasonQueuePending = "Pending"
	// ReasonQueueEvicted: Kueue evicted or preempted the admitted gang; it waits to be admitted
	// again (the message carries Kueue's reason, e.g. Preempted).
	ReasonQueueEvicted = "Evicted"
	// ReasonLocalQueueNotFound: the LocalQueue named by spec.queueName does not exist.
	ReasonLocalQueueNotFound = "LocalQueueNotFound"
	// ReasonQueueInadmissible: Kueue can never admit the gang as it is (it asks for more than the
	// queue's ClusterQueue can ever give, or the queue is stopped or inactive).
	ReasonQueueInadmissible = "Inadmissible"
	// ReasonWorkloadSyncFailed: the backend-controller could not write the gang's Workload.
	ReasonWorkloadSyncFailed = "WorkloadSyncFailed"
	// ReasonAwaitingMultiKueueWorkload (worker cluster): the gang's Workload is the one MultiKueue
	// copies from the manager cluster, and it is not here (yet, or any more).
	ReasonAwaitingMultiKueueWorkload = "AwaitingMultiKueueWorkload"
)

// ConditionDispatched (backend-controller, manager cluster, for a gang whose PodCliqueSet
// MultiKueue runs on a worker): on which worker cluster the gang's Workload was admitted, or why
// it is on none.
const ConditionDispatched = "Dispatched"

// Reasons of Dispatched.
const (
	// ReasonRunsOnWorker: MultiKueue placed the gang on the worker cluster the message names.
	ReasonRunsOnWorker = "RunsOnWorker"
	// ReasonAwaitingWorker: MultiKueue has not placed the gang on a worker yet.
	ReasonAwaitingWorker = "AwaitingWorker"
	// ReasonAwaitingFirstGang: the gang's Workload is created once the PodCliqueSet's first gang
	// is placed, so that MultiKueue sends it to the same worker.
	ReasonAwaitingFirstGang = "AwaitingFirstGang"
	// ReasonLeftWorker: the gang ran on the worker the message names and left it (evicted,
	// preempted, the worker lost); it waits to be placed again, maybe elsewhere.
	ReasonLeftWorker = "LeftWorker"
)

// Reasons of the PodGang conditions.
const (
	// ReasonPodsPending: not all pods of the gang exist yet.
	ReasonPodsPending = "PodsPending"
	// ReasonReady: the gang is fully initialized (Initialized), or every pod group has its
	// minimum of ready pods (Ready).
	ReasonReady = "Ready"
	// ReasonPlaced: every pod group has its minimum of pods bound to nodes (Scheduled).
	ReasonPlaced = "Placed"
	// ReasonWaitingForPlacement: the gang's pods wait for the scheduler, which has not said why
	// (Scheduled). When it has, its own reason (e.g. Unschedulable, SchedulingGated) is used.
	ReasonWaitingForPlacement = "WaitingForPlacement"
	// ReasonPodsNotReady: a pod group has fewer than its minimum of ready pods (Ready).
	ReasonPodsNotReady = "PodsNotReady"
)

// PodGangStatus is what the scheduler side reports.
type PodGangStatus struct {
	// Phase is the coarse scheduling state.
	// +optional
	Phase PodGangPhase `json:"phase,omitempty"`
	// LastScheduled is when Scheduled last turned True; never cleared.
	// +optional
	LastScheduled *metav1.Time `json:"lastScheduled,omitempty"`
	// LastReady is when Ready last turned True; never cleared.
	// +optional
	LastReady *metav1.Time `json:"lastReady,omitempty"`
	// Conditions are Initialized, SchedulerBackendReady, Scheduled, Ready and Unhealthy.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// PlacementScore rates the network optimality of the placement, 1.0 being the best.
	// +optional
	PlacementScore *float64 `json:"placementScore,omitempty"`
	// SchedulingGroups name, for each pod group, the scheduler's group its pods join (a pod's
	// spec.schedulingGroup.podGroupName, immutable once the pod exists). The backend-controller
	// writes them with SchedulerBackendReady, for the generation it acknowledges, when its
	// scheduler finds a gang's pods by that reference (kube-scheduler's Workload API); the
	// operator sets them on the pods it creates. Pod groups that share one scheduler group share
	// its minimum: they keep no minimum of their own.
	// +optional
	// +listType=map
	// +listMapKey=podGroup
	SchedulingGroups []SchedulingGroup `json:"schedulingGroups,omitempty"`
}

// SchedulingGroup is the scheduler's group the pods of one pod group join.
type SchedulingGroup struct {
	// PodGroup is the name of a pod group of spec.podgroups.
	PodGroup string `json:"podGroup"`
	// Name is the scheduler's group (a scheduling.k8s.io PodGroup) its pods name.
	Name string `json:"name"`
}

// AnnotationTopologyName on a PodGang names the cluster topology its pack constraints refer to;
// backends with a topology object of their own (KAI) use it to name that object.
const AnnotationTopologyName = "grove.io/topology-name"

// MinMember is how many pods of the gang must be placed together: the sum of its groups'
// minReplicas.
func (s *PodGangSpec) MinMember() int32 {
	var n int32
	for _, g := range s.PodGroups {
		n += g.MinReplicas
	}
	return n
}

// MinResources is what the gang needs at least: each pod group's per-pod requests
// (podResourceRequests) times its minReplicas, summed; nil when no group declares requests.
func (s *PodGangSpec) MinResources() corev1.ResourceList {
	total := corev1.ResourceList{}
	for _, g := range s.PodGroups {
		for name, q := range g.PodResourceRequests {
			q = q.DeepCopy()
			q.Mul(int64(g.MinReplicas))
			sum := total[name]
			sum.Add(q)
			total[name] = sum
		}
	}
	if len(total) == 0 {
		return nil
	}
	return total
}

// Acknowledged reports whether the backend-controller acknowledged the PodGang's current
// generation: SchedulerBackendReady=True with observedGeneration == generation. The scheduler's
// objects for the whole gang then exist.
func (pg *PodGang) Acknowledged() bool {
	if pg == nil {
		return false
	}
	for _, c := range pg.Status.Conditions {
		if c.Type == ConditionSchedulerBackendReady {
			return c.Status == metav1.ConditionTrue && c.ObservedGeneration == pg.Generation
		}
	}
	return false
}

// QueuedOnItsOwn reports whether the gang is admitted by Kueue as a Workload of its own: it names
// a queue and its PodCliqueSet's owner does not hold the admission for it.
func (pg *PodGang) QueuedOnItsOwn() bool {
	return pg != nil && pg.Spec.QueueName != "" && !pg.Spec.QueueAdmittedByOwner
}

// AwaitsQueue reports whether the gang is queued and Kueue has not admitted it (yet, or any more):
// its pods are held by Kueue's admission gate or have been evicted, so missing pods are no
// breach and no failure.
func (pg *PodGang) AwaitsQueue() bool {
	if !pg.QueuedOnItsOwn() {
		return false
	}
	for _, c := range pg.Status.Conditions {
		if c.Type == ConditionQueueAdmitted {
			return c.Status != metav1.ConditionTrue
		}
	}
	return true
}

// MaySchedule is the contract's rule for lifting the operator's scheduling gate (or creating a
// pod without it): the PodGang references the pod and its backend acknowledged the current
// generation. (For a backend that places pods one by one, the operator also waits for the pod's
// parent cliques.)
func (pg *PodGang) MaySchedule(pod string) bool {
	if !pg.Acknowledged() {
		return false
	}
	for _, g := range pg.Spec.PodGroups {
		for _, ref := range g.PodReferences {
			if ref.Name == pod {
				return true
			}
		}
	}
	return false
}

// SchedulingGroupOf is the scheduler's group the backend-controller assigned to a pod group, ""
// when it assigned none.
func (pg *PodGang) SchedulingGroupOf(podGroup string) string {
	for _, g := range pg.Status.SchedulingGroups {
		if g.PodGroup == podGroup {
			return g.Name
		}
	}
	return ""
}

// SharedSchedulingGroups lists the scheduler's groups that several pod groups share, each with
// its pod groups in spec order: their pods are placed against the shared group's one minimum,
// so the minReplicas of each is not kept on its own.
func (pg *PodGang) SharedSchedulingGroups() map[string][]string {
	members := map[string][]string{}
	for _, g := range pg.Spec.PodGroups {
		if name := pg.SchedulingGroupOf(g.Name); name != "" {
			members[name] = append(members[name], g.Name)
		}
	}
	for name, groups := range members {
		if len(groups) < 2 {
			delete(members, name)
		}
	}
	return members
}

// MultiKueueRoleOf is the gang's side of MultiKueue, "" when MultiKueue takes no part.
func (pg *PodGang) MultiKueueRoleOf() MultiKueueRole {
	if pg == nil || pg.Spec.MultiKueue == nil {
		return ""
	}
	return pg.Spec.MultiKueue.Role
}

// runsOnWorkerPrefix starts the message of a Dispatched condition with reason RunsOnWorker; the
// cluster's name follows it.
const runsOnWorkerPrefix = "MultiKueue placed the gang on cluster "

// RunsOnWorkerMessage is the message of Dispatched=True for a gang placed on cluster.
func RunsOnWorkerMessage(cluster string) string { return runsOnWorkerPrefix + cluster }

// DispatchedCluster is the worker cluster a manager gang's Dispatched condition names as the one
// it runs on, "" when it runs on none.
func (pg *PodGang) DispatchedCluster() string {
	for _, c := range pg.Status.Conditions {
		if c.Type == ConditionDispatched && c.Status == metav1.ConditionTrue && c.Reason == ReasonRunsOnWorker {
			return strings.TrimPrefix(c.Message, runsOnWorkerPrefix)
		}
	}
	return ""
}
