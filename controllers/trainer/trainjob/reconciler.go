// Package trainjob is the trainer-controller: it turns each TrainJob into the workload its runtime
// names (a JobSet, as Kubeflow Trainer does, or a Training PodCliqueSet), maps the workload's
// outcome back, and enforces KEP-2899's activeDeadlineSeconds and ttlSecondsAfterFinished.
// Every timer is recomputed from the API on each reconcile; nothing lives only in memory.
package trainjob

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
	"github.com/kubegrove/grove/internal/reconcile/conditionlog"
)

// FieldOwner is the server-side apply field manager of everything the controller declares.
const FieldOwner = "trainer-controller"

// Event reasons, one per transition.
const (
	EventRuntimeNotFound     = "TrainingRuntimeNotFound"
	EventRuntimeNotSupported = "TrainingRuntimeNotSupported"
	EventCreated             = "Created"
	EventSuspended           = "Suspended"
	EventResumed             = "Resumed"
	EventCompleted           = "Completed"
	EventFailed              = "Failed"
	EventDeadlineExceeded    = "DeadlineExceeded"
	EventTTLExpired          = "TTLExpired"
	// EventDeletionStalled says a workload deleted in the foreground outlived foregroundStall and
	// was deleted again in the background.
	EventDeletionStalled = "WorkloadDeletionStalled"
	// ReasonBuildFailed says the TrainJob's workload cannot be built from its runtime as edited;
	// it is the reason of both the Running condition and the event.
	ReasonBuildFailed = "BuildFailed"
)

// Owner references that block deletion need update on the owner's finalizers (enforced where
// the OwnerReferencesPermissionEnforcement admission plugin is on).
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainjobs/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=trainer.kubeflow.org,resources=trainingruntimes;clustertrainingruntimes,verbs=get;list;watch
// +kubebuilder:rbac:groups=grove.io,resources=podcliquesets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=jobset.x-k8s.io,resources=jobsets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=scheduling.x-k8s.io,resources=podgroups,verbs=create;patch
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=podgroups,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles TrainJobs.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Clock is the controller's clock; tests move it.
	Clock clock.PassiveClock
	// StatusServer, when set, is where trainers report progress (server.trainerStatus): every
	// workload built wires its trainer to it. It fails while the server's CA is not on disk yet.
	StatusServer func() (*plan.StatusServer, error)
	// Coscheduling is the scheduler-plugins backend's configuration when it is enabled: the
	// PodCliqueSet path sends a coscheduling runtime's gang to it.
	Coscheduling *configv1alpha1.SchedulerPluginsConfig
	// ClusterName is this cluster's name among MultiKueue's workers (kueue.multiKueue.clusterName):
	// a TrainJob MultiKueue copied here names it in its Dispatched condition.
	ClusterName string
}

// nameCollisionRecheck is how often a TrainJob whose workload name is held by another object
// looks again: that object's deletion wakes nothing here.
const nameCollisionRecheck = 30 * time.Second

// Reconcile moves one TrainJob one step, as one pass: observe the runtime and the workload,
// decide the status, write it once, then act on what it records (create, resume, suspend or tear
// down the workload; delete the TrainJob when its TTL expires) and report. Finished jobs only
// wait for their TTL; every timer is recomputed from the API.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	tj := &trainerv1alpha1.TrainJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, tj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if tj.DeletionTimestamp.IsZero() && dispatchedByMultiKueue(tj) {
		return r.reconcileDispatched(ctx, tj)
	}
	if !tj.DeletionTimestamp.IsZero() || !managedByUs(tj) {
		return ctrl.Result{}, nil
	}
	obs, err := r.observe(ctx, tj)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := decide(tj, obs)
	setDispatched(tj, &d.status, r.ClusterName)
	if err := r.writeStatus(ctx, tj, d.status); err != nil {
		return ctrl.Result{}, err
	}
	r.report(tj, d)
	if err := r.act(ctx, tj, obs, d.act); err != nil {
		return ctrl.Result{}, err
	}
	return r.next(ctx, tj, obs, d)
}

// observation is what one pass reads of the API.
type observation struct {
	now time.Time
	// rt is the runtime the TrainJob runs on: its snapshot, or before the TrainJob started the
	// live runtime (snapshotted is then false). Nil when it cannot be resolved.
	rt          *plan.Runtime
	snapshotted bool
	// Why a TrainJob that has not started cannot: its runtime is missing, cannot be run by this
	// controller, or cannot build this TrainJob (a runtime patch naming a job it lacks).
	missing     *runtimeNotFoundError
	unsupported error
	buildFailed error

	wl workload
	// child is the workload as read, nil when there is none; owned says the TrainJob controls it.
	child client.Object
	owned bool
	// out is the run's outcome, read from the child (or, before it exists, from the child as it
	// will be created, so the first status counts its jobs).
	out      outcome
	numNodes int32
}

// observe reads the runtime and the workload of tj.
func (r *Reconciler) observe(ctx context.Context, tj *trainerv1alpha1.TrainJob) (*observation, error) {
	o := &observation{now: r.Clock.Now()}
	rt, err := r.loadSnapshot(ctx, tj)
	if err != nil {
		return nil, err
	}
	o.rt, o.snapshotted = rt, rt != nil
	if rt == nil {
		if err := r.observeLiveRuntime(ctx, tj, o); err != nil || o.rt == nil {
			return o, err
		}
	}
	// An unsupported runtime is an observation, not a failed pass: decide() reports it.
	if o.wl, o.unsupported = workloadFor(o.rt); o.wl == nil {
		return o, nil
	}
	child, found, err := r.getChild(ctx, tj, o.wl)
	if err != nil {
		return nil, err
	}
	if found {
		o.child = child
		owner := metav1.GetControllerOf(child)
		o.owned = owner != nil && owner.UID == tj.UID
	}
	if finished(tj) != nil || o.blocked() {
		return o, nil
	}
	if child == nil {
		// The first status is written before the child exists: it counts the jobs as they will be.
		if child, _, err = o.wl.build(tj, o.rt, false, plan.Options{Coscheduling: r.Coscheduling}); err != nil {
			return nil, err
		}
	}
	if o.out, err = o.wl.observe(ctx, r.Client, child); err != nil {
		return nil, err
	}
	p, err := plan.NewPlan(tj, o.rt)
	if err != nil {
		return nil, err
	}
	o.numNodes = p.NumNodes
	return o, nil
}

// observeLiveRuntime resolves the runtime of a TrainJob that has not started and checks that
// this controller can build the TrainJob's workload from it.
func (r *Reconciler) observeLiveRuntime(ctx context.Context, tj *trainerv1alpha1.TrainJob, o *observation) error {
	rt, err := r.resolveRuntime(ctx, tj)
	var missing *runtimeNotFoundError
	switch {
	case errors.As(err, &missing):
		o.missing = missing
		return nil
	case isUnsupported(err):
		o.unsupported = err
		return nil
	case err != nil:
		return err
	}
	o.rt = rt
	if finished(tj) != nil {
		return nil // only its TTL matters
	}
	wl, err := workloadFor(rt)
	if err == nil {
		_, _, err = wl.build(tj, rt, true, plan.Options{Coscheduling: r.Coscheduling})
	}
	switch {
	case isUnsupported(err):
		o.unsupported = err
	case err != nil:
		o.buildFailed = err
	}
	return nil
}

// blocked reports whether the TrainJob cannot run on what was observed.
func (o *observation) blocked() bool {
	return o.missing != nil || o.unsupported != nil || o.buildFailed != nil
}

func managedByUs(tj *trainerv1alpha1.TrainJob) bool {
	return ptr.Deref(tj.Spec.ManagedBy, trainerv1alpha1.TrainJobControllerManagedBy) == trainerv1alpha1.TrainJobControllerManagedBy
}

// isUnsupported reports whether err says the runtime is one this controller cannot run.
func isUnsupported(err error) bool {
	var ns *notSupportedError
	var us *plan.UnsupportedError
	return errors.As(err, &ns) || errors.As(err, &us)
}

// report emits the events and metrics of the transitions the status write recorded.
func (r *Reconciler) report(tj *trainerv1alpha1.TrainJob, d decision) {
	for _, e := range d.events {
		r.Recorder.Eventf(tj, nil, e.eventType, e.reason, e.action, "%s", e.message)
	}
	if d.finish != nil {
		r.recordFinish(tj, d.finish)
	}
	d.series.record()
}

// next is when the TrainJob needs the next pass: at its deadline while it runs, at its TTL once
// it finished (deleting it when that has passed) or sooner when its workload's deletion may
// stall, and soon while its name is held.
func (r *Reconciler) next(ctx context.Context, tj *trainerv1alpha1.TrainJob, o *observation, d decision) (ctrl.Result, error) {
	if finished(tj) != nil {
		res, err := r.expire(ctx, tj, o.rt)
		if d.recheck > 0 && (res.RequeueAfter == 0 || d.recheck < res.RequeueAfter) && err == nil {
			res.RequeueAfter = d.recheck
		}
		return res, err
	}
	if d.recheck > 0 {
		return ctrl.Result{RequeueAfter: d.recheck}, nil
	}
	if dl, ok := deadline(tj); ok && d.act == actRun {
		return ctrl.Result{RequeueAfter: untilTime(dl, o.now)}, nil
	}
	return ctrl.Result{}, nil
}

// expire deletes a finished TrainJob once its TTL expired, or waits for it. A workload still
// marked for deletion in the foreground was released by this pass's act (decision.release).
func (r *Reconciler) expire(ctx context.Context, tj *trainerv1alpha1.TrainJob, rt *plan.Runtime) (ctrl.Result, error) {
	if rt == nil {
		return ctrl.Result{}, nil // no runtime: no TTL
	}
	done := finished(tj)
	at, ok := expiry(tj, rt.Spec.TTLSecondsAfterFinished)
	if !ok {
		return ctrl.Result{}, nil
	}
	if now := r.Clock.Now(); now.Before(at) {
		return ctrl.Result{RequeueAfter: untilTime(at, now)}, nil
	}
	if err := r.Client.Delete(ctx, tj, client.Preconditions{UID: ptr.To(tj.UID)}, client.PropagationPolicy(metav1.DeletePropagationBackground)); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("TTL deletion: deleted the finished TrainJob", "finished", done.Type, "reason", done.Reason,
		"ttlSecondsAfterFinished", *rt.Spec.TTLSecondsAfterFinished)
	r.Recorder.Eventf(tj, nil, corev1.EventTypeNormal, EventTTLExpired, "Delete", "deleted: finished %s ago, ttlSecondsAfterFinished is %ds",
		r.Clock.Since(done.LastTransitionTime.Time).Round(time.Second), *rt.Spec.TTLSecondsAfterFinished)
	ttlDeletions.Inc()
	return ctrl.Result{}, nil
}

// recordFinish emits the terminal event and counts the job by reason.
func (r *Reconciler) recordFinish(tj *trainerv1alpha1.TrainJob, done *metav1.Condition) {
	reason, eventType := EventCompleted, corev1.EventTypeNormal
	if done.Type == trainerv1alpha1.TrainJobFailed {
		reason, eventType = EventFailed, corev1.EventTypeWarning
		if done.Reason == trainerv1alpha1.TrainJobDeadlineExceededReason {
			reason = EventDeadlineExceeded
		}
		if done.Reason == trainerv1alpha1.TrainJobRuntimeNotSupportedReason {
			reason = EventRuntimeNotSupported
		}
	}
	r.Recorder.Eventf(tj, nil, eventType, reason, "Finish", "%s (%s): %s", done.Type, done.Reason, done.Message)
	finishedJobs.WithLabelValues(done.Type, done.Reason).Inc()
}

// writeStatus writes st as the TrainJob's status, only when it differs, and logs the condition
// transitions. It is the pass's one status write.
func (r *Reconciler) writeStatus(ctx context.Context, tj *trainerv1alpha1.TrainJob, st trainerv1alpha1.TrainJobStatus) error {
	if equality.Semantic.DeepEqual(st, tj.Status) {
		return nil
	}
	updated := tj.DeepCopy()
	updated.Status = st
	if err := r.Client.Status().Update(ctx, updated); err != nil {
		return err
	}
	conditionlog.Transitions(log.FromContext(ctx), tj.Status.Conditions, updated.Status.Conditions)
	*tj = *updated
	return nil
}
