package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// keepDispatchedGangs creates, for a PodCliqueSet Kueue's MultiKueue runs on a worker cluster,
// its PodGangs and nothing else (docs/kueue.md, Multi-cluster): the backend-controller builds
// each gang's Workload from them as it does on a single cluster, and MultiKueue dispatches those.
// The gangs are those the worker's copy will make — the same names, pod groups and sizes — and
// every gang after the first waits for the first one's placement (PlacedAfter), so that all of
// them land on its worker. The status is not written: MultiKueue copies the worker's.
// The spec is immutable (grove-webhook): a gang once created is never updated.
func (r *Reconciler) keepDispatchedGangs(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed) error {
	if obs.backend == "" {
		return fmt.Errorf("PodGangs: %w", obs.backendErr)
	}
	first := ""
	var errs []error
	for replica := range int(pcs.Spec.Replicas) {
		for _, g := range wantedGangs(pcs, replica, obs) {
			if first == "" {
				first = g.name
			}
			if obs.gangs[g.name] != nil || obs.unseen.Has("PodGang/"+g.name) || obs.collided["PodGang/"+g.name] {
				continue
			}
			pg, _ := wantPodGang(pcs, replica, g, obs.backend, obs)
			pg.Spec.MultiKueue = &schedulerv1alpha1.PodGangMultiKueue{Role: schedulerv1alpha1.MultiKueueManager}
			if g.name != first {
				pg.Spec.MultiKueue.PlacedAfter = first
			}
			setOwner(pcs, pg)
			errs = append(errs, r.create(ctx, pcs, pg, obs))
		}
	}
	return errors.Join(errs...)
}

// dispatchedCondition is the Dispatched condition of a PodCliqueSet MultiKueue copied to this
// worker cluster, which MultiKueue copies back to the manager's object with the rest of the
// status; nil for any other PodCliqueSet.
func dispatchedCondition(pcs *grovev1alpha1.PodCliqueSet, clusterName string) *metav1.Condition {
	if !grovev1alpha1.MultiKueueCopy(pcs) || grovev1alpha1.AdmittedByOwner(pcs) {
		return nil // a TrainJob's PodCliqueSet: the TrainJob says where it runs
	}
	where := "a worker cluster of MultiKueue (kueue.multiKueue.clusterName is not configured here)"
	if clusterName != "" {
		where = "cluster " + clusterName
	}
	return &metav1.Condition{Type: grovev1alpha1.ConditionDispatched, Status: metav1.ConditionTrue, Reason: grovev1alpha1.ReasonRunsOnWorker,
		Message: fmt.Sprintf("runs on %s, dispatched by Kueue's MultiKueue (origin %q)", where, pcs.Labels[grovev1alpha1.LabelMultiKueueOrigin])}
}

// setDispatched sets or removes the Dispatched condition in st.
func setDispatched(pcs *grovev1alpha1.PodCliqueSet, st *grovev1alpha1.PodCliqueSetStatus, clusterName string) {
	if c := dispatchedCondition(pcs, clusterName); c != nil {
		meta.SetStatusCondition(&st.Conditions, *c)
	}
}

// FinalizerMultiKueueCopy holds a worker's ended PodCliqueSet copy (MultiKueue's) while MultiKueue
// still has Workloads of its gangs here. MultiKueue deletes the copy when it has copied the final
// status of the first gang's Workload; were the copy gone while another gang's Workload still
// waits for the same, MultiKueue would create the copy anew (it makes a missing copy for any
// gang's Workload it syncs), start it again, and copy that new copy's status over the final one.
const FinalizerMultiKueueCopy = "grove.io/multikueue-copy"

// holdCopy keeps FinalizerMultiKueueCopy on a worker's PodCliqueSet copy: added while it lives,
// removed once it is deleted and either has not ended (a copy deleted while it runs, behind
// Kueue's back or by MultiKueue on an eviction, goes at once) or none of its gangs' Workloads is
// left. held says the pass is over (the copy is being deleted).
func (r *Reconciler) holdCopy(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet) (held bool, err error) {
	if !grovev1alpha1.MultiKueueCopy(pcs) || grovev1alpha1.AdmittedByOwner(pcs) {
		return false, nil
	}
	has := controllerutil.ContainsFinalizer(pcs, FinalizerMultiKueueCopy)
	if pcs.DeletionTimestamp.IsZero() {
		if has {
			return false, nil
		}
		patch := client.MergeFromWithOptions(pcs.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(pcs, FinalizerMultiKueueCopy)
		return false, r.Client.Patch(ctx, pcs, patch)
	}
	if !has {
		return true, nil
	}
	left, err := r.copiedWorkloadsLeft(ctx, pcs)
	if err != nil || len(left) > 0 {
		if len(left) > 0 {
			log.FromContext(ctx).V(1).Info("the ended copy waits for MultiKueue to remove its gangs' Workloads", "gangs", left)
		}
		return true, err
	}
	patch := client.MergeFromWithOptions(pcs.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(pcs, FinalizerMultiKueueCopy)
	if err := r.Client.Patch(ctx, pcs, patch); err != nil {
		return true, err
	}
	log.FromContext(ctx).Info("released the deleted MultiKueue copy", "phase", pcs.Status.Phase)
	return true, nil
}

// copiedWorkloadsLeft names the gangs of an ended copy whose Workload MultiKueue has not removed
// yet, as their QueueAdmitted condition says (the backend-controller's); none for a copy that
// has not ended.
func (r *Reconciler) copiedWorkloadsLeft(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet) ([]string, error) {
	if p := pcs.Status.Phase; p != grovev1alpha1.PodCliqueSetPhaseSucceeded && p != grovev1alpha1.PodCliqueSetPhaseFailed {
		return nil, nil
	}
	gangs := &schedulerv1alpha1.PodGangList{}
	if err := r.Client.List(ctx, gangs, client.InNamespace(pcs.Namespace), client.MatchingLabels{grovev1alpha1.LabelPartOf: pcs.Name}); err != nil {
		return nil, err
	}
	var left []string
	for _, pg := range gangs.Items {
		if pg.MultiKueueRoleOf() != schedulerv1alpha1.MultiKueueWorker || !metav1.IsControlledBy(&pg, pcs) {
			continue
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionQueueAdmitted)
		if c == nil || c.Reason != schedulerv1alpha1.ReasonAwaitingMultiKueueWorkload {
			left = append(left, pg.Name)
		}
	}
	slices.Sort(left)
	return left, nil
}

// deletionStarted passes the update that marks an object for deletion.
var deletionStarted = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
	},
}
