package pcsadmission

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
)

// queueLayer is one place kueue.x-k8s.io/queue-name may be set: the PodCliqueSet's labels or a
// clique template's.
type queueLayer struct {
	path  *field.Path
	queue string
}

func queueLayers(pcs *grovev1alpha1.PodCliqueSet) []queueLayer {
	var out []queueLayer
	if q, ok := pcs.Labels[grovev1alpha1.LabelKueueQueueName]; ok {
		out = append(out, queueLayer{field.NewPath("metadata", "labels").Key(grovev1alpha1.LabelKueueQueueName), q})
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		if q, ok := c.Labels[grovev1alpha1.LabelKueueQueueName]; ok {
			out = append(out, queueLayer{field.NewPath("spec", "template", "cliques").Index(i).Child("labels").Key(grovev1alpha1.LabelKueueQueueName), q})
		}
	}
	return out
}

// validateQueueCreate applies the Kueue integration's rules (docs/kueue.md) to a new
// PodCliqueSet labelled kueue.x-k8s.io/queue-name, on itself or on clique templates: one queue
// for all (a gang spans cliques and Kueue admits it in one queue), a LocalQueue name, the
// integration turned on, a backend whose pods kube-scheduler places one by one (Kueue admits the
// gang as a whole; its pod webhook, built against an older Kubernetes, would drop the Workload
// API fields of gang mode), and at most eight pod groups per gang (Kueue's podSet limit).
//
// With spec.queueAdmission Owner, the PodCliqueSet's controlling owner holds Kueue's admission (a
// TrainJob under Kueue's TrainJob integration): it needs the queue label and that owner, and the
// per-gang rules do not apply since no gang gets a Workload.
func validateQueueCreate(pcs *grovev1alpha1.PodCliqueSet, enabled bool, registry *backends.Registry[backends.Admitter]) field.ErrorList {
	layers := queueLayers(pcs)
	byOwner := pcs.Spec.QueueAdmission == grovev1alpha1.QueueAdmissionOwner
	if byOwner {
		p := field.NewPath("spec", "queueAdmission")
		if len(layers) == 0 {
			return field.ErrorList{field.Forbidden(p, "Owner needs the kueue.x-k8s.io/queue-name label: it says who holds Kueue's admission for a queued PodCliqueSet")}
		}
		if metav1.GetControllerOf(pcs) == nil {
			return field.ErrorList{field.Forbidden(p, "Owner needs a controlling owner reference, the object Kueue admits as a whole (a TrainJob); a PodCliqueSet of its own is queued PerGang")}
		}
	}
	if len(layers) == 0 {
		return nil
	}
	var errs field.ErrorList
	first := layers[0]
	for _, l := range layers {
		switch {
		case l.queue == "":
			errs = append(errs, field.Invalid(l.path, l.queue, "must name a LocalQueue; remove the label to run without Kueue"))
		case l.queue != first.queue:
			errs = append(errs, field.Invalid(l.path, l.queue, fmt.Sprintf("must be the same queue as %s (%q): Kueue admits each gang, which spans cliques, in one queue", first.path, first.queue)))
		default:
			for _, msg := range validation.IsDNS1123Subdomain(l.queue) {
				errs = append(errs, field.Invalid(l.path, l.queue, "a LocalQueue name: "+msg))
			}
		}
	}
	if len(errs) > 0 || byOwner {
		return errs
	}
	if !enabled {
		return field.ErrorList{field.Forbidden(first.path, "the Kueue integration is off (kueue.enabled in the operator configuration): the PodCliqueSet would never be queued; remove the label or turn the integration on")}
	}
	if b := registry.ForPodCliqueSet(pcs); b != nil && (b.Name() != configv1alpha1.SchedulerNameKube || b.GangScheduling()) {
		errs = append(errs, field.Forbidden(first.path, fmt.Sprintf("Kueue admits gangs for the %s backend placing pods one by one only (this PodCliqueSet's backend is %s%s): Kueue already admits each gang whole, and its pod webhook would drop the fields another gang scheduler needs",
			configv1alpha1.SchedulerNameKube, b.Name(), gangSuffix(b))))
	}
	if n := basePodGroups(pcs); n > kueuegang.MaxPodSets {
		errs = append(errs, field.Invalid(first.path, first.queue, fmt.Sprintf("each replica's base gang has %d pod groups (standalone cliques, and each scaling group's cliques times its minAvailable); Kueue admits at most %d per Workload", n, kueuegang.MaxPodSets)))
	}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if len(g.CliqueNames) > kueuegang.MaxPodSets {
			errs = append(errs, field.TooMany(field.NewPath("spec", "template", "podCliqueScalingGroups").Index(i).Child("cliqueNames"), len(g.CliqueNames), kueuegang.MaxPodSets))
		}
	}
	return errs
}

func gangSuffix(b backends.Admitter) string {
	if b.GangScheduling() {
		return " in gang mode"
	}
	return ""
}

// basePodGroups counts the pod groups of a replica's base gang.
func basePodGroups(pcs *grovev1alpha1.PodCliqueSet) int {
	grouped := map[string]bool{}
	n := 0
	for i := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		g := &pcs.Spec.Template.PodCliqueScalingGroupConfigs[i]
		for _, c := range g.CliqueNames {
			grouped[c] = true
		}
		// The webhook defaults replicas and minAvailable (both 1) before validation runs.
		n += len(g.CliqueNames) * int(min(ptr.Deref(g.MinAvailable, 1), ptr.Deref(g.Replicas, 1)))
	}
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && !grouped[c.Name] {
			n++
		}
	}
	return n
}

// validateQueueUpdate keeps the queue and who holds its admission: a gang's admitted Workload
// cannot move to another queue, and a gang cannot start or stop holding quota of its own.
func validateQueueUpdate(old, pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	if old.Spec.QueueAdmission != pcs.Spec.QueueAdmission {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "queueAdmission"), pcs.Spec.QueueAdmission,
			fmt.Sprintf("field is immutable (was %q): the gangs either hold Kueue's quota themselves or through their owner for the PodCliqueSet's life", old.Spec.QueueAdmission))}
	}
	was, is := grovev1alpha1.QueueNameOf(old), grovev1alpha1.QueueNameOf(pcs)
	if was == is {
		return nil
	}
	p := field.NewPath("metadata", "labels").Key(grovev1alpha1.LabelKueueQueueName)
	if layers := queueLayers(pcs); len(layers) > 0 {
		p = layers[0].path
	}
	return field.ErrorList{field.Invalid(p, is, fmt.Sprintf("field is immutable (was %q): the gangs' Kueue Workloads stay in the queue they were created in; delete and recreate the PodCliqueSet to move it", was))}
}
