package pcsadmission

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// toMultiKueue reports whether a new PodCliqueSet's queue leads to a MultiKueue admission check:
// its LocalQueue's ClusterQueue names an AdmissionCheck of MultiKueue's controller. A queue, a
// ClusterQueue or a check that does not exist (yet) leads nowhere: the PodCliqueSet runs here,
// as Kueue's own webhooks decide for JobSets and TrainJobs.
func toMultiKueue(ctx context.Context, r client.Reader, pcs *grovev1alpha1.PodCliqueSet) (bool, error) {
	if r == nil || pcs.Spec.QueueAdmission == grovev1alpha1.QueueAdmissionOwner || grovev1alpha1.MultiKueueCopy(pcs) {
		return false, nil
	}
	leads, _, err := queueLeadsToMultiKueue(ctx, r, pcs.Namespace, grovev1alpha1.QueueNameOf(pcs))
	return leads, err
}

// queueLeadsToMultiKueue reads queue's LocalQueue → ClusterQueue → AdmissionChecks: leads says
// one check is MultiKueue's; known says the LocalQueue and its ClusterQueue exist (a check named
// but missing is no MultiKueue check).
func queueLeadsToMultiKueue(ctx context.Context, r client.Reader, namespace, queue string) (leads, known bool, err error) {
	if queue == "" {
		return false, false, nil
	}
	lq := &kueuev1beta2.LocalQueue{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: queue}, lq); err != nil {
		return false, false, client.IgnoreNotFound(err)
	}
	cq := &kueuev1beta2.ClusterQueue{}
	if err := r.Get(ctx, client.ObjectKey{Name: string(lq.Spec.ClusterQueue)}, cq); err != nil {
		return false, false, client.IgnoreNotFound(err)
	}
	if cq.Spec.AdmissionChecksStrategy == nil {
		return false, true, nil
	}
	for _, rule := range cq.Spec.AdmissionChecksStrategy.AdmissionChecks {
		ac := &kueuev1beta2.AdmissionCheck{}
		err := r.Get(ctx, client.ObjectKey{Name: string(rule.Name)}, ac)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return false, false, err
		}
		if ac.Spec.ControllerName == kueuev1beta2.MultiKueueControllerName {
			return true, true, nil
		}
	}
	return false, true, nil
}

// validateManagedByQueue refuses a spec.managedBy that contradicts the PodCliqueSet's queue as it
// stands: MultiKueue's with a queue that has no MultiKueue check (only the gangs' Workloads would
// be kept here, and nothing would run them), the grove-operator's with one that has (MultiKueue
// would reject the gangs' Workloads: it dispatches PodCliqueSets, not PodGangs). A queue that
// does not exist yet decides nothing.
func validateManagedByQueue(ctx context.Context, r client.Reader, pcs *grovev1alpha1.PodCliqueSet) (field.ErrorList, error) {
	if r == nil || pcs.Spec.ManagedBy == nil || grovev1alpha1.MultiKueueCopy(pcs) || pcs.Spec.QueueAdmission == grovev1alpha1.QueueAdmissionOwner {
		return nil, nil
	}
	queue := grovev1alpha1.QueueNameOf(pcs)
	leads, known, err := queueLeadsToMultiKueue(ctx, r, pcs.Namespace, queue)
	if err != nil || !known {
		return nil, err
	}
	p := field.NewPath("spec", "managedBy")
	switch dispatched := grovev1alpha1.DispatchedByMultiKueue(pcs); {
	case dispatched && !leads:
		return field.ErrorList{field.Invalid(p, *pcs.Spec.ManagedBy, fmt.Sprintf("queue %q has no MultiKueue admission check: on this cluster only the gangs' Workloads are kept, and no worker would run them; leave managedBy unset", queue))}, nil
	case !dispatched && leads:
		return field.ErrorList{field.Invalid(p, *pcs.Spec.ManagedBy, fmt.Sprintf("queue %q leads to a MultiKueue admission check, which dispatches the PodCliqueSet to a worker cluster: leave managedBy unset or set %s", queue, grovev1alpha1.ManagedByMultiKueue))}, nil
	}
	return nil, nil
}

// defaultManagedBy marks a new PodCliqueSet whose queue leads to MultiKueue as MultiKueue's
// (spec.managedBy), as Kueue's own webhooks do for the kinds it knows: Kueue's generic MultiKueue
// adapter dispatches only objects that say so, and does not set it itself.
func (d *Defaulter) defaultManagedBy(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet) error {
	if pcs.Spec.ManagedBy != nil {
		return nil
	}
	dispatched, err := toMultiKueue(ctx, d.Queues, pcs)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("reading the queue of PodCliqueSet %s/%s to learn whether MultiKueue dispatches it: %w", pcs.Namespace, pcs.Name, err))
	}
	if dispatched {
		pcs.Spec.ManagedBy = ptr.To(grovev1alpha1.ManagedByMultiKueue)
		log.FromContext(ctx).V(1).Info("the PodCliqueSet's queue leads to a MultiKueue admission check: marked for MultiKueue", "podCliqueSet", client.ObjectKeyFromObject(pcs),
			"queue", grovev1alpha1.QueueNameOf(pcs))
	}
	return nil
}

// validateMultiKueueCreate states what MultiKueue dispatches: fixed-size work. MultiKueue copies
// the spec to a worker once and never again, so whatever would change it later — an autoscaler, a
// rolling update, scaling — would never reach the copy that runs: an Inference PodCliqueSet or
// one with an autoscaler is refused. A gang admitted through its owner is not queued on its own,
// so it is never dispatched by itself (its owner is).
func validateMultiKueueCreate(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	if !grovev1alpha1.DispatchedByMultiKueue(pcs) {
		return nil
	}
	p := field.NewPath("spec", "managedBy")
	why := "MultiKueue runs the PodCliqueSet on a worker cluster from the spec it had when dispatched, and never passes a later change on"
	var errs field.ErrorList
	if grovev1alpha1.QueueNameOf(pcs) == "" {
		errs = append(errs, field.Forbidden(p, grovev1alpha1.ManagedByMultiKueue+" needs the kueue.x-k8s.io/queue-name label: MultiKueue dispatches only what a queue of it admits"))
	}
	if pcs.Spec.QueueAdmission == grovev1alpha1.QueueAdmissionOwner {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "queueAdmission"), "Owner cannot be dispatched by MultiKueue on its own: its owner holds the admission (dispatch the owner)"))
	}
	if pcs.Spec.WorkloadType != grovev1alpha1.WorkloadTypeTraining {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "workloadType"),
			fmt.Sprintf("MultiKueue dispatches Training workloads only (the queue leads to a MultiKueue admission check): %s, so an Inference workload's scaling and updates would never reach it; queue it in a ClusterQueue without MultiKueue", why)))
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.Spec.ScaleConfig != nil {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "template", "cliques").Index(i).Child("spec", "autoScalingConfig"), "an autoscaled clique cannot be dispatched by MultiKueue: "+why))
		}
	}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if g.ScaleConfig != nil {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "template", "podCliqueScalingGroups").Index(i).Child("scaleConfig"), "an autoscaled scaling group cannot be dispatched by MultiKueue: "+why))
		}
	}
	return errs
}

// validateMultiKueueUpdate refuses any change of a dispatched PodCliqueSet's spec: MultiKueue
// would never pass it on to the copy that runs.
func validateMultiKueueUpdate(old, pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	if !grovev1alpha1.DispatchedByMultiKueue(old) || equality.Semantic.DeepEqual(old.Spec, pcs.Spec) {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec"),
		"the spec of a PodCliqueSet MultiKueue dispatches is immutable: MultiKueue copied it to a worker cluster once and never passes a change on; delete and create it anew")}
}
