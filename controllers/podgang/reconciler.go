// Package podgang is the backend-controller's PodGang reconciler: for the PodGangs of one
// scheduler backend it creates that scheduler's objects and reports SchedulerBackendReady for
// the PodGang's current generation — the acknowledgement the grove-operator waits for before it
// lifts the pods' gates.
package podgang

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// Backend is what one scheduler backend does for a PodGang.
type Backend interface {
	// Name is the backend's name, the value of the PodGang's grove.io/scheduler-name label.
	Name() string
	// SyncPodGang creates or updates the scheduler's objects for the PodGang and returns the
	// reason and message of SchedulerBackendReady=True.
	SyncPodGang(ctx context.Context, pg *schedulerv1alpha1.PodGang) (reason, message string, err error)
}

// Reconciler reconciles the PodGangs of one backend.
type Reconciler struct {
	Client  client.Client
	Backend Backend
}

// Reasons of SchedulerBackendReady=False.
const ReasonSyncFailed = "SchedulerSyncFailed"

// +kubebuilder:rbac:groups=scheduler.grove.io,resources=podgangs,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduler.grove.io,resources=podgangs/status,verbs=get;update;patch

// SetupWithManager registers the reconciler for PodGangs labelled with this backend.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, concurrency int) error {
	mine, err := predicate.LabelSelectorPredicate(metav1.LabelSelector{MatchLabels: map[string]string{grovev1alpha1.LabelSchedulerName: r.Backend.Name()}})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("podgang").
		For(&schedulerv1alpha1.PodGang{}, builder.WithPredicates(mine, predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: concurrency}).
		Complete(r)
}

// Reconcile syncs the scheduler's objects and acknowledges the PodGang's generation.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	pg := &schedulerv1alpha1.PodGang{}
	if err := r.Client.Get(ctx, req.NamespacedName, pg); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !pg.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	reason, message, syncErr := r.Backend.SyncPodGang(ctx, pg)
	cond := metav1.Condition{
		Type: schedulerv1alpha1.ConditionSchedulerBackendReady, Status: metav1.ConditionTrue,
		Reason: reason, Message: message, ObservedGeneration: pg.Generation,
	}
	if syncErr != nil {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionFalse, ReasonSyncFailed, syncErr.Error()
	}
	status := pg.Status.DeepCopy()
	meta.SetStatusCondition(&status.Conditions, cond)
	if !equality.Semantic.DeepEqual(*status, pg.Status) {
		pg.Status = *status
		if err := r.Client.Status().Update(ctx, pg); err != nil {
			return ctrl.Result{}, err
		}
	}
	return ctrl.Result{}, syncErr
}
