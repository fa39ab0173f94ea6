package v1alpha1

// Labels the operator puts on every object it creates; selectors use them, never name prefixes.
const (
	// LabelManagedBy marks objects the operator owns.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelManagedByValue is the value of LabelManagedBy.
	LabelManagedByValue = "grove-operator"
	// LabelPartOf holds the name of the PodCliqueSet an object belongs to.
	LabelPartOf = "app.kubernetes.io/part-of"
	// LabelComponent says what an object is for, where its kind does not (a ResourceClaim of
	// resource sharing, a ComputeDomain of MNNVL).
	LabelComponent = "app.kubernetes.io/component"
	// LabelPodClique holds the name of a pod's PodClique.
	LabelPodClique = "grove.io/podclique"
	// LabelPodGang holds the name of the PodGang a pod or PodClique belongs to.
	LabelPodGang = "grove.io/podgang"
	// LabelPodCliqueSetReplicaIndex holds the PodCliqueSet replica index.
	LabelPodCliqueSetReplicaIndex = "grove.io/podcliqueset-replica-index"
	// LabelPodCliqueScalingGroup holds the name of the PodCliqueScalingGroup.
	LabelPodCliqueScalingGroup = "grove.io/podcliquescalinggroup"
	// LabelPodCliqueScalingGroupReplicaIndex holds the PodCliqueScalingGroup replica index.
	LabelPodCliqueScalingGroupReplicaIndex = "grove.io/podcliquescalinggroup-replica-index"
	// LabelPodCliqueScalingGroupPodIndex holds a pod's index within its scaling-group replica,
	// counting the member cliques in cliqueNames order (the pod's GROVE_PCSG_POD_INDEX).
	LabelPodCliqueScalingGroupPodIndex = "grove.io/podcliquescalinggroup-pod-index"
	// LabelPodIndex holds a pod's stable index within its PodClique.
	LabelPodIndex = "grove.io/podclique-pod-index"
	// LabelBasePodGang holds, on the PodCliques and pods of a scaled PodGang (a scaling-group
	// replica beyond minAvailable), the name of the base PodGang of their PodCliqueSet replica.
	LabelBasePodGang = "grove.io/base-podgang"
	// LabelPodTemplateHash holds the hash of the pod template a pod was created from.
	LabelPodTemplateHash = "grove.io/pod-template-hash"
	// LabelSchedulerName routes a PodGang to the backend-controller of that scheduler backend.
	LabelSchedulerName = "grove.io/scheduler-name"
	// LabelEpoch holds, on a PodGang of a PodGangMap entry, the entry's epoch.
	LabelEpoch = "grove.io/epoch"
	// LabelPodGangRole holds, on a PodGang of a PodGangMap entry, the entry's role (Anchor, Tail,
	// ScaleOut).
	LabelPodGangRole = "grove.io/podgang-role"
	// LabelPodCliqueSetGenerationHash holds, on a PodGang of a PodGangMap entry, the template
	// revision of its pods.
	LabelPodCliqueSetGenerationHash = "grove.io/podcliqueset-generation-hash"
)

// ComponentPodGangMap is the LabelComponent value of a PodGangMap.
const ComponentPodGangMap = "pcs-podgangmap"

// Scheduling gate the operator puts on every pod it creates and lifts once the gang is ready.
const SchedulingGatePodGangPendingCreation = "grove.io/podgang-pending-creation"

// Startup ordering on a backend that places a gang whole (docs/startup-ordering.md): the gang's
// pods are placed together, and a pod of a clique that starts after others waits in its init
// container StartupWaitContainer until the operator sets its AnnotationStartupGate to
// StartupGateReleased. The init container reads the annotation through the downward API, so the
// pod needs no API access and no service account.
const (
	// AnnotationStartupGate is StartupGateWaiting on a pod created before its parent cliques were
	// up and StartupGateReleased once they are.
	AnnotationStartupGate = "grove.io/startup-gate"
	// StartupGateWaiting holds the pod's containers in its StartupWaitContainer.
	StartupGateWaiting = "waiting"
	// StartupGateReleased lets the StartupWaitContainer end and the pod's containers start.
	StartupGateReleased = "released"
	// StartupWaitContainer is the name of the init container that waits (upstream Grove's
	// name for its init container that waits for parent cliques).
	StartupWaitContainer = "grove-initc"
)

// Environment variables the operator injects into every container.
const (
	EnvPCSName             = "GROVE_PCS_NAME"
	EnvPCSIndex            = "GROVE_PCS_INDEX"
	EnvPCLQName            = "GROVE_PCLQ_NAME"
	EnvHeadlessService     = "GROVE_HEADLESS_SERVICE"
	EnvPCLQPodIndex        = "GROVE_PCLQ_POD_INDEX"
	EnvPCSGName            = "GROVE_PCSG_NAME"
	EnvPCSGIndex           = "GROVE_PCSG_INDEX"
	EnvPCSGTemplateNumPods = "GROVE_PCSG_TEMPLATE_NUM_PODS"
	// EnvPCSGPodIndex is read from the pod's LabelPodCliqueScalingGroupPodIndex through the
	// downward API.
	EnvPCSGPodIndex = "GROVE_PCSG_POD_INDEX"
)

// Condition types of PodCliqueSet, PodClique and PodCliqueScalingGroup.
const (
	// ConditionMinAvailableBreached is True when fewer than minAvailable pods (or PCSG replicas)
	// are ready; its LastTransitionTime starts the terminationDelay clock.
	ConditionMinAvailableBreached = "MinAvailableBreached"
	// ConditionPodCliqueScheduled is True when at least minAvailable pods are scheduled.
	ConditionPodCliqueScheduled = "PodCliqueScheduled"
	// ConditionSucceeded is True when every pod of a Training PodClique exited 0.
	ConditionSucceeded = "Succeeded"
	// ConditionFailed is True when a Training PodCliqueSet ran out of restarts or time.
	ConditionFailed = "Failed"
	// ConditionUpdateInProgress is True (Progressing) while a rolling update runs, Unknown
	// (ProgressDeadlineExceeded) when it has not moved within a component's progressDeadline, and
	// False (NoActiveUpdate) otherwise — on PodCliques, PodCliqueScalingGroups and PodCliqueSets.
	ConditionUpdateInProgress = "UpdateInProgress"
)

// Reasons of UpdateInProgress (upstream Grove's).
const (
	ReasonProgressing              = "Progressing"
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	ReasonNoActiveUpdate           = "NoActiveUpdate"
)

// Reasons of the conditions above.
const (
	ReasonSufficientReadyPods   = "SufficientReadyPods"
	ReasonInsufficientReadyPods = "InsufficientReadyPods"
	ReasonNeverAvailable        = "NeverAvailable"
	// ReasonIdle: a clique or scaling group at 0 replicas is idle, as upstream Grove treats it:
	// no pod group in its gang, never breached, holding back no clique that starts after it.
	ReasonIdle = "Idle"
	// ReasonAwaitingQueueAdmission: Kueue has not admitted the clique's gang (yet, or again
	// after evicting it); missing pods are no breach.
	ReasonAwaitingQueueAdmission = "AwaitingQueueAdmission"
	ReasonUpdateInProgress       = "UpdateInProgress"
	ReasonMaxRestartsExceeded    = "MaxRestartsExceeded"
	ReasonMaxRuntimeExceeded     = "MaxRuntimeExceeded"
	ReasonAllPodsSucceeded       = "AllPodsSucceeded"
)

// PodCliqueSet condition telling whether every PodGang may be scheduled.
const (
	// ConditionPodGangsSchedulable is False while a PodGang is not created yet or its scheduler
	// backend has not acknowledged it, whose pods then wait (gated), or while the scheduler finds
	// no place for a gang (its PodGang's Scheduled=False/Unschedulable); the message names the
	// PodGang and why, in the scheduler's words.
	ConditionPodGangsSchedulable   = "PodGangsSchedulable"
	ReasonAllPodGangsSchedulable   = "AllPodGangsSchedulable"
	ReasonPodGangPending           = "PodGangPending"
	ReasonSchedulerBackendNotReady = "SchedulerBackendNotReady"
	// ReasonPodGangUnschedulable: the scheduler said it cannot place a gang now.
	ReasonPodGangUnschedulable = "Unschedulable"
	// ConditionSchedulingConstraintsHonored is False when the scheduler backend admitted
	// something it does not do (a preferred topology level, a gang on a backend without gangs);
	// the message lists what.
	ConditionSchedulingConstraintsHonored = "SchedulingConstraintsHonored"
	ReasonAllConstraintsHonored           = "AllConstraintsHonored"
	ReasonConstraintsNotHonored           = "ConstraintsNotHonored"
)

// PodCliqueSet condition saying whether the topology levels its constraints name exist.
const (
	ConditionTopologyLevelsUnavailable      = "TopologyLevelsUnavailable"
	ReasonClusterTopologyNotFound           = "ClusterTopologyNotFound"
	ReasonClusterTopologyLevelsUnavailable  = "ClusterTopologyLevelsUnavailable"
	ReasonAllClusterTopologyLevelsAvailable = "AllClusterTopologyLevelsAvailable"
	ReasonTopologyAwareSchedulingDisabled   = "TopologyAwareSchedulingDisabled"
)

// Reasons of the PodCliqueScalingGroup's MinAvailableBreached condition.
const (
	ReasonSufficientAvailableReplicas   = "SufficientAvailableReplicas"
	ReasonInsufficientAvailableReplicas = "InsufficientAvailableReplicas"
)

// Reasons of the PodCliqueScheduled condition.
const (
	ReasonSufficientScheduledPods   = "SufficientScheduledPods"
	ReasonInsufficientScheduledPods = "InsufficientScheduledPods"
	// ReasonReplacedPodsTerminating: a Training PodClique that replaces one a restart deleted
	// creates no pod while more pods of the one it replaces remain than it may go without (its
	// replicas less minAvailable), as JobSet recreates a restarted gang once the old one is gone:
	// its pods need their names, and on a node their devices.
	ReasonReplacedPodsTerminating = "ReplacedPodsTerminating"
)

// Reasons of the ClusterTopologyBinding condition SchedulerTopologyDrift.
const (
	ReasonTopologyDrift = "TopologyDrift"
	ReasonInSync        = "InSync"
)
