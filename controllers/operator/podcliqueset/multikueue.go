package podcliqueset

import (
	"context"
	"errors"
	"fmt"

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
