package v1alpha1

// Kueue integration (docs/kueue.md): a PodCliqueSet labelled kueue.x-k8s.io/queue-name, on the
// PodCliqueSet or on its clique templates, is admitted by Kueue gang by gang. The operator copies
// the queue into each PodGang's spec.queueName; the backend-controller keeps one Kueue Workload
// per queued PodGang and reports Kueue's decision in the PodGang's QueueAdmitted condition, which
// the operator sums up in the PodCliqueSet's.
const (
	// LabelKueueQueueName is Kueue's own label naming the LocalQueue of a workload.
	LabelKueueQueueName = "kueue.x-k8s.io/queue-name"

	// ConditionQueueAdmitted on a PodCliqueSet says whether Kueue admitted every gang of it: False
	// names the queue, the first gang waiting and Kueue's reason.
	ConditionQueueAdmitted = "QueueAdmitted"
	// ReasonAllGangsAdmitted: Kueue admitted every gang.
	ReasonAllGangsAdmitted = "AllGangsAdmitted"
	// ReasonAdmittedWithOwner: Kueue admitted the PodCliqueSet's owner as a whole
	// (queueAdmission: Owner); the gangs hold no quota of their own.
	ReasonAdmittedWithOwner = "AdmittedWithOwner"
)

// QueueAdmission says who obtains Kueue's admission for a queued PodCliqueSet's gangs.
// +kubebuilder:validation:Enum=PerGang;Owner
type QueueAdmission string

const (
	// QueueAdmissionPerGang queues every PodGang as a Kueue Workload of its own (the default).
	QueueAdmissionPerGang QueueAdmission = "PerGang"
	// QueueAdmissionOwner: the controlling owner holds Kueue's admission for the whole
	// PodCliqueSet. Kueue keeps the owner suspended until it is admitted and suspends it on
	// eviction, and its owner's controller creates the PodCliqueSet only while it runs, so the
	// gangs neither wait nor hold quota twice.
	QueueAdmissionOwner QueueAdmission = "Owner"
)

// AdmittedByOwner reports whether a queued PodCliqueSet's gangs are admitted through its owner.
func AdmittedByOwner(pcs *PodCliqueSet) bool {
	return pcs.Spec.QueueAdmission == QueueAdmissionOwner && QueueNameOf(pcs) != ""
}

// QueueNameOf is the LocalQueue a PodCliqueSet's gangs queue in: the PodCliqueSet's label, else
// the first clique template's (admission makes all that carry one agree); "" when not queued.
func QueueNameOf(pcs *PodCliqueSet) string {
	if q := pcs.Labels[LabelKueueQueueName]; q != "" {
		return q
	}
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.Labels[LabelKueueQueueName] != "" {
			return c.Labels[LabelKueueQueueName]
		}
	}
	return ""
}

// MultiKueue (docs/kueue.md, Multi-cluster): a PodCliqueSet whose queue leads to a MultiKueue
// admission check is marked spec.managedBy kueue.x-k8s.io/multikueue at admission. Kueue's
// MultiKueue then copies it to the worker cluster that admits its first gang (the copy without
// managedBy, labelled with MultiKueue's origin) and copies the copy's status back.
const (
	// ManagedByGroveOperator is spec.managedBy of a PodCliqueSet the grove-operator runs (as when unset).
	ManagedByGroveOperator = "grove.io/grove-operator"
	// ManagedByMultiKueue is spec.managedBy of a PodCliqueSet Kueue's MultiKueue runs on a worker.
	ManagedByMultiKueue = "kueue.x-k8s.io/multikueue"
	// LabelMultiKueueOrigin is MultiKueue's label on the copies it makes on a worker cluster.
	LabelMultiKueueOrigin = "kueue.x-k8s.io/multikueue-origin"

	// ConditionDispatched on a PodCliqueSet MultiKueue runs says on which cluster it runs: the
	// worker's copy writes it (True, RunsOnWorker, naming the cluster by the worker's
	// kueue.multiKueue.clusterName), and MultiKueue copies it back to the manager's object. While
	// no worker runs it, the manager's backend-controller says why (False: AwaitingWorker, or
	// LeftWorker naming the worker it left and Kueue's reason).
	ConditionDispatched = "Dispatched"
	// ReasonRunsOnWorker: this PodCliqueSet is MultiKueue's copy running on a worker cluster.
	ReasonRunsOnWorker = "RunsOnWorker"
)

// DispatchedByMultiKueue reports whether Kueue's MultiKueue runs the PodCliqueSet on a worker
// cluster: on this cluster only its gangs' Workloads are kept.
func DispatchedByMultiKueue(pcs *PodCliqueSet) bool {
	return pcs.Spec.ManagedBy != nil && *pcs.Spec.ManagedBy == ManagedByMultiKueue
}

// MultiKueueCopy reports whether the PodCliqueSet is the copy MultiKueue made on this (worker)
// cluster of one on the manager cluster.
func MultiKueueCopy(pcs *PodCliqueSet) bool {
	_, ok := pcs.Labels[LabelMultiKueueOrigin]
	return ok
}
