// Package topologybinding is the backend-controller's ClusterTopologyBinding reconciler, for a
// backend with a topology object of its own (KAI's Topology): it keeps that object for every
// binding and reports drift in the binding's status.
package topologybinding

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	groveac "github.com/kubegrove/grove/apis/grove/v1alpha1/applyconfiguration/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/backend/fieldindex"
	"github.com/kubegrove/grove/internal/reconcile/conditionlog"
	"github.com/kubegrove/grove/internal/reconcile/requeue"
)

// FieldManagerPrefix and the backend's name are the field manager of a backend's part of a
// binding's status.
const FieldManagerPrefix = "backend-controller-"

// conflictRequeue is how soon a binding whose status write lost a race is synced again.
const conflictRequeue = 250 * time.Millisecond

// Reconciler keeps, for a backend with a topology object of its own (a
// backends.TopologySyncer), that object for every ClusterTopologyBinding, and reports in the
// binding's status whether it matches the levels. The PodGang reconciler registers it.
type Reconciler struct {
	Client client.Client
	// Backend is the backend's name, its schedulerName in the binding.
	Backend string
	Syncer  backends.TopologySyncer
	// Clock stamps the drift condition's transitions; nil: the real clock.
	Clock clock.PassiveClock
}

func (r *Reconciler) clock() clock.PassiveClock {
	if r.Clock == nil {
		return clock.RealClock{}
	}
	return r.Clock
}

// Owner references that block deletion need update on the owner's finalizers (enforced where
// the OwnerReferencesPermissionEnforcement admission plugin is on).
// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings/finalizers,verbs=update
// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=kai.scheduler,resources=topologies,verbs=get;list;watch;create;update;patch;delete

// SetupWithManager registers the reconciler for ClusterTopologyBindings, the topology objects
// they own, and the ones their schedulerTopologyBindings name for this backend (never written,
// but their edits change the drift).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("clustertopologybinding-" + r.Backend).
		For(&grovev1alpha1.ClusterTopologyBinding{})
	for _, t := range r.Syncer.TopologyTypes() {
		b = b.Owns(t).Watches(t, handler.EnqueueRequestsFromMapFunc(r.bindingsReferencing))
	}
	return b.Complete(requeue.OnTransient(r))
}

// Reconcile syncs the binding's topology object and records the result in its status.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ct := &grovev1alpha1.ClusterTopologyBinding{}
	if err := r.Client.Get(ctx, req.NamespacedName, ct); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ct.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	st, err := r.Syncer.SyncTopology(ctx, ct)
	if err != nil {
		return ctrl.Result{}, err
	}
	st.SchedulerName = r.Backend
	status := ct.Status.DeepCopy()
	setSchedulerTopologyStatus(status, st)
	status.ObservedGeneration = ct.Generation
	drift := driftCondition(status.SchedulerTopologyStatuses, ct.Generation)
	drift.LastTransitionTime = metav1.NewTime(r.clock().Now()) // kept when the status does not change
	meta.SetStatusCondition(&status.Conditions, drift)
	if equality.Semantic.DeepEqual(*status, ct.Status) {
		return ctrl.Result{}, nil
	}
	before := ct.Status.Conditions
	// This backend's part only, under its own field manager: another backend's entry is its own
	// (schedulerTopologyStatuses is a map by schedulerName). The drift condition and the observed
	// generation summarise every backend's entry, so the write is made only from the binding as
	// stored: a view another backend's write made stale is a conflict, read again.
	if err := r.Client.Status().Apply(ctx, statusPart(ct, st, status), client.FieldOwner(FieldManagerPrefix+r.Backend), client.ForceOwnership); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRequeue}, nil
		}
		return ctrl.Result{}, err
	}
	ct.Status = *status
	logger := log.FromContext(ctx)
	logger.Info("recorded the backend's topology object in the binding's status", "backend", r.Backend,
		"topologyReference", st.TopologyReference, "inSync", st.InSync, "message", st.Message)
	conditionlog.Transitions(logger, before, ct.Status.Conditions)
	return ctrl.Result{}, nil
}

// statusPart is what one backend applies to a binding's status: its entry, the drift condition
// over every entry it saw, and the generation they are of.
func statusPart(ct *grovev1alpha1.ClusterTopologyBinding, st grovev1alpha1.SchedulerTopologyStatus, status *grovev1alpha1.ClusterTopologyBindingStatus) *groveac.ClusterTopologyBindingApplyConfiguration {
	part := groveac.ClusterTopologyBindingStatus().WithObservedGeneration(status.ObservedGeneration).
		WithSchedulerTopologyStatuses(groveac.SchedulerTopologyStatus().WithSchedulerName(st.SchedulerName).WithTopologyReference(st.TopologyReference).
			WithInSync(st.InSync).WithSchedulerBackendTopologyObservedGeneration(st.SchedulerBackendTopologyObservedGeneration).WithMessage(st.Message))
	if c := meta.FindStatusCondition(status.Conditions, grovev1alpha1.ConditionSchedulerTopologyDrift); c != nil {
		part.WithConditions(metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).WithMessage(c.Message).
			WithObservedGeneration(c.ObservedGeneration).WithLastTransitionTime(c.LastTransitionTime))
	}
	return groveac.ClusterTopologyBinding(ct.Name).WithResourceVersion(ct.ResourceVersion).WithStatus(part)
}

// setSchedulerTopologyStatus replaces the backend's entry, keeping the other backends' entries,
// sorted by scheduler name.
func setSchedulerTopologyStatus(status *grovev1alpha1.ClusterTopologyBindingStatus, st grovev1alpha1.SchedulerTopologyStatus) {
	for i := range status.SchedulerTopologyStatuses {
		if status.SchedulerTopologyStatuses[i].SchedulerName == st.SchedulerName {
			status.SchedulerTopologyStatuses[i] = st
			return
		}
	}
	status.SchedulerTopologyStatuses = append(status.SchedulerTopologyStatuses, st)
	sort.SliceStable(status.SchedulerTopologyStatuses, func(i, j int) bool {
		return status.SchedulerTopologyStatuses[i].SchedulerName < status.SchedulerTopologyStatuses[j].SchedulerName
	})
}

// driftCondition is True when any backend's topology object does not match the levels, with
// their messages; False otherwise.
func driftCondition(statuses []grovev1alpha1.SchedulerTopologyStatus, generation int64) metav1.Condition {
	cond := metav1.Condition{Type: grovev1alpha1.ConditionSchedulerTopologyDrift, ObservedGeneration: generation}
	var drifted, inSync []string
	for _, s := range statuses {
		if s.InSync {
			inSync = append(inSync, s.SchedulerName)
		} else {
			drifted = append(drifted, fmt.Sprintf("%s: %s", s.SchedulerName, s.Message))
		}
	}
	// By name, whatever order the entries are stored in (a server-side apply appends new ones).
	sort.Strings(drifted)
	sort.Strings(inSync)
	if len(drifted) > 0 {
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, grovev1alpha1.ReasonTopologyDrift, strings.Join(drifted, "; ")
		return cond
	}
	cond.Status, cond.Reason = metav1.ConditionFalse, grovev1alpha1.ReasonInSync
	cond.Message = fmt.Sprintf("the topology objects of %s match the levels", strings.Join(inSync, ", "))
	return cond
}

// bindingsReferencing maps a topology object to the bindings whose schedulerTopologyBindings
// name it for this backend.
func (r *Reconciler) bindingsReferencing(ctx context.Context, obj client.Object) []reconcile.Request {
	list := &grovev1alpha1.ClusterTopologyBindingList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{fieldindex.BindingsOfTopologyObject: fieldindex.TopologyObjectKey(r.Backend, obj.GetName())}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}
