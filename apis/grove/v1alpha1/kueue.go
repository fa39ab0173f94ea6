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
