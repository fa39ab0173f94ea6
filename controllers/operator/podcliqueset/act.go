package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/gangtermination"
	"github.com/kubegrove/grove/controllers/operator/internal/slowstart"
	"github.com/kubegrove/grove/internal/contract/podgangstatus"
	"github.com/kubegrove/grove/internal/reconcile/conditionlog"
	"github.com/kubegrove/grove/internal/reconcile/terminating"
)

// act carries out a plan: its decision recorded first (an error there means nothing was acted
// on, and is returned as err), then the transitions' deletions, the PodCliqueSet's claims and
// ComputeDomains, the replicas' children, what no replica wants, and the PodGangs' status. It
// returns each failing step's error in errs.
func (r *Reconciler) act(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed, p *plan) (errs []error, err error) {
	if p.record != nil {
		if err := r.record(ctx, pcs, *p.record); err != nil {
			return nil, err
		}
		for _, t := range p.transitions {
			if t.kind == restarted || t.kind == failing {
				r.tell(ctx, pcs, t)
			}
		}
	}
	for _, t := range p.transitions {
		deleted, err := r.deleteAll(ctx, t.deletes)
		if err != nil {
			errs = append(errs, step(grovev1alpha1.ErrorCodeGangTermination, err))
		}
		if deleted && t.kind != restarted && t.kind != failing {
			r.tell(ctx, pcs, t)
		}
	}
	if p.settled || p.endPass {
		return errs, nil
	}
	// Claims before the children whose pods reference them.
	if err := r.syncResourceClaims(ctx, pcs); err != nil {
		errs = append(errs, step(grovev1alpha1.ErrorCodeResourceClaims, err))
	}
	if err := r.syncComputeDomains(ctx, pcs); err != nil {
		errs = append(errs, step(grovev1alpha1.ErrorCodeComputeDomains, err))
	}
	if obs.backend == "" {
		errs = append(errs, step(grovev1alpha1.ErrorCodeSyncReplica, fmt.Errorf("PodGangs: %w", obs.backendErr)))
	}
	if err := r.applyMaps(ctx, pcs, obs, p); err != nil {
		// The children follow what the maps record: none is touched before they are written.
		return append(errs, step(grovev1alpha1.ErrorCodeSyncReplica, err)), nil
	}
	failed := r.applyChanges(ctx, pcs, obs, p.changes)
	var replicaErrs, autoscalerErrs []error
	for i, err := range failed {
		if err == nil || errors.Is(err, errNotTried) {
			continue
		}
		if _, ok := p.changes[i].obj.(*autoscalingv2.HorizontalPodAutoscaler); ok {
			autoscalerErrs = append(autoscalerErrs, err)
		} else {
			replicaErrs = append(replicaErrs, err)
		}
	}
	errs = append(errs, step(grovev1alpha1.ErrorCodeSyncReplica, errors.Join(replicaErrs...)), step(grovev1alpha1.ErrorCodeSyncAutoscalers, errors.Join(autoscalerErrs...)))
	if _, err := r.deleteAll(ctx, p.deletes); err != nil {
		errs = append(errs, step(grovev1alpha1.ErrorCodeDeleteChildren, err))
	}
	errs = append(errs, step(grovev1alpha1.ErrorCodeSyncReplica, r.applyGangStatus(ctx, p.gangStatus, p.changes, failed)))
	return slices.DeleteFunc(errs, func(err error) bool { return err == nil }), nil
}

// record writes the status carrying the pass's decision; until the cache shows the write, a pass
// waits rather than act without it. Its events and log lines follow the write.
func (r *Reconciler) record(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, st grovev1alpha1.PodCliqueSetStatus) error {
	updated := pcs.DeepCopy()
	updated.Status = st
	replaced := pcs.ResourceVersion
	if err := r.Client.Status().Update(ctx, updated); err != nil {
		return err
	}
	old := pcs.Status
	*pcs = *updated
	r.expectations.ExpectWrite(client.ObjectKeyFromObject(pcs), replaced)
	log.FromContext(ctx).V(1).Info("recorded the pass's decision in status", "restartCount", st.RestartCount, "scaledReplicasToRestore", len(st.ScaledReplicasToRestore), "phase", st.Phase)
	r.statusWritten(ctx, pcs, old)
	return nil
}

// tell logs a transition, counts it and emits its events.
func (r *Reconciler) tell(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, t transition) {
	logger := log.FromContext(ctx)
	switch t.kind {
	case terminated:
		logger.Info("gang termination: replica terminated, its PodCliques are recreated", "replica", t.replica,
			"reason", t.why+" below minAvailable for longer than terminationDelay", "podCliques", len(t.deletes))
		gangtermination.Terminated(gangtermination.LevelPodCliqueSet)
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, string(terminated), "Terminate",
			"replica %d terminated: %s below minAvailable for longer than its terminationDelay; all its PodCliques are recreated", t.replica, t.why)
	case restarted:
		logger.Info("training restart: replica restarted, its PodCliques are deleted and recreated", "replica", t.replica,
			"reason", t.why, "restart", t.restart, "maxRestarts", maxRestarts(pcs))
		trainingRestarts.Inc()
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, EventPodCliqueFailed, "Restart", "replica %d: %s", t.replica, t.why)
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, EventReplicaRestarting, "Restart",
			"restarting replica %d (%s): restart %d of %d", t.replica, t.why, t.restart, maxRestarts(pcs))
	case failing:
		logger.Info("training workload failed: every pod is terminated, then its phase is Failed", "reason", t.reason, "message", t.message, "podCliques", len(t.deletes))
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, t.event, "Fail", "%s", t.message)
		if t.why != "" {
			r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, EventPodCliqueFailed, "Fail", "replica %d: %s", t.replica, t.why)
		}
	case finishing:
		names := make([]string, 0, len(t.deletes))
		for _, d := range t.deletes {
			names = append(names, d.obj.GetName())
		}
		logger.Info("training workload succeeded by its success policy: deleted the PodCliques still running", "podCliques", names)
	default:
		logger.V(1).Info("deleting what a recorded decision removes", "step", t.kind, "replica", t.replica, "objects", len(t.deletes))
	}
}

// deleteAll deletes the objects in order, each with its UID as precondition — so a stale view
// never deletes a replacement — and its dependents in the background. It reports whether any was
// deleted by this call; one gone or replaced already is no error.
func (r *Reconciler) deleteAll(ctx context.Context, deletes []change) (bool, error) {
	deleted := false
	var errs []error
	for _, d := range deletes {
		uid := d.obj.GetUID()
		err := r.Client.Delete(ctx, d.obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		switch {
		case err == nil:
			deleted = true
			log.FromContext(ctx).Info("deleted", "kind", kindOf(d.obj), "object", klog.KObj(d.obj), "reason", d.reason)
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		default:
			errs = append(errs, fmt.Errorf("deleting %s %s: %w", kindOf(d.obj), d.obj.GetName(), err))
		}
	}
	return deleted, errors.Join(errs...)
}

// applyChanges creates and updates children replica by replica, as they come in the plan: inside
// a replica in batches that double — slowstart.InitialBatch writes (a new replica's children in
// one round trip), then twice as many (a scaling group scaled out by 50 replicas gets its 50
// PodGangs in a few round trips) — while every write of a batch succeeds; a replica that cannot
// write stops after one batch. Replicas go one after another: a thousand replicas written at once
// overran the API server on two cores and starved the operator's lease renewal (it exited). Which
// writes are tried depends only on which fail, never on timing, so a step that keeps failing
// reports the same errors every pass and writes no status. It returns each change's error at the
// change's place (nil where it succeeded, errNotTried where a failing batch before it stopped its
// replica).
func (r *Reconciler) applyChanges(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed, changes []change) []error {
	errs := make([]error, len(changes))
	var order []string
	groups := map[string][]int{}
	for i, c := range changes {
		key := c.obj.GetLabels()[grovev1alpha1.LabelPodCliqueSetReplicaIndex]
		if _, seen := groups[key]; !seen {
			order = append(order, key)
		}
		groups[key] = append(groups[key], i)
	}
	for _, key := range order {
		group := groups[key]
		for start, size := 0, slowstart.InitialBatch; start < len(group); start, size = start+size, size*2 {
			batch := group[start:min(start+size, len(group))]
			var wg sync.WaitGroup
			for _, i := range batch {
				wg.Go(func() { errs[i] = r.apply(ctx, pcs, obs, changes[i]) })
			}
			wg.Wait()
			if slices.ContainsFunc(batch, func(i int) bool { return errs[i] != nil }) {
				for _, i := range group[min(start+size, len(group)):] {
					errs[i] = errNotTried
				}
				break
			}
		}
	}
	return errs
}

// apply makes one change, its error naming the child.
func (r *Reconciler) apply(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed, c change) error {
	var err error
	if c.verb == create {
		err = r.create(ctx, pcs, c.obj, obs)
	} else {
		err = r.update(ctx, c.obj, c.reason)
	}
	if err != nil {
		return fmt.Errorf("%s %s %s: %w", c.verb, kindOf(c.obj), c.obj.GetName(), err)
	}
	return nil
}

// errNotTried marks a change left for the next pass because an earlier one in its window
// failed; it is not reported on its own.
var errNotTried = errors.New("not tried: an earlier write failed")

// applyGangStatus writes the operator's part of each PodGang's status — Initialized, Scheduled,
// Ready, their times and the phase — onto the PodGang as this pass left it; a PodGang whose
// create or update failed, or was not made, waits for the next pass. A write that records the
// gang's first placement or readiness observes its wait (gp.pg is the gang before the write).
func (r *Reconciler) applyGangStatus(ctx context.Context, parts []gangPart, changes []change, failed []error) error {
	skip := map[client.Object]bool{}
	for i, c := range changes {
		if failed[i] != nil {
			skip[c.obj] = true
		}
	}
	errs := make([]error, len(parts))
	_, _ = slowstart.Run(ctx, len(parts), func(ctx context.Context, i int) error {
		gp := parts[i]
		if skip[gp.pg] || gp.pg.ResourceVersion == "" {
			return nil
		}
		before := gp.pg.Status.Conditions
		pg := gp.pg.DeepCopy()
		if err := podgangstatus.Apply(ctx, r.Client, pg, podgangstatus.ManagerOperator, gp.part); err != nil {
			errs[i] = fmt.Errorf("PodGang %s: %w", pg.Name, err)
			return err
		}
		conditionlog.Transitions(log.FromContext(ctx).WithValues("podGang", klog.KObj(pg)), before, pg.Status.Conditions)
		observeGangFirsts(gp.pg, gp.part)
		if gp.replaced != "" {
			r.expectations.ExpectWrite(client.ObjectKeyFromObject(pg), gp.replaced)
		}
		return nil
	})
	return errors.Join(errs...)
}

// create creates a child (an earlier pass's creation or another owner's object the cache does
// not show yet is fine: the next pass's findCollisions tells which), counted so the status waits
// for it.
func (r *Reconciler) create(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obj client.Object, obs *observed) error {
	if terminating.Namespace(ctx, r.Client, obj.GetNamespace()) {
		return nil // the namespace controller is removing everything here; a create is refused
	}
	err := r.Client.Create(ctx, obj)
	switch {
	case terminating.Refused(err):
		log.FromContext(ctx).V(1).Info("namespace is being deleted: not created", "kind", kindOf(obj), "object", klog.KObj(obj))
		return nil
	case apierrors.IsAlreadyExists(err):
		log.FromContext(ctx).V(1).Info("already exists", "kind", kindOf(obj), "object", klog.KObj(obj))
		return nil
	case err != nil:
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, "CreateFailed", "Create", "creating %s %s: %v", kindOf(obj), obj.GetName(), err)
		return err
	}
	log.FromContext(ctx).Info("created", "kind", kindOf(obj), "object", klog.KObj(obj))
	obs.created.Add(1)
	r.expectations.Expect(pcs.UID, kindOf(obj)+"/"+obj.GetName())
	return nil
}

// update writes a child brought back to what the PodCliqueSet wants. A PodGang's write is
// expected: until the cache shows it, no pass writes from the older view.
func (r *Reconciler) update(ctx context.Context, obj client.Object, reason string) error {
	replaced := obj.GetResourceVersion()
	if err := r.Client.Update(ctx, obj); err != nil {
		return err
	}
	switch obj.(type) {
	case *schedulerv1alpha1.PodGang, *grovev1alpha1.PodGangMap:
		r.expectations.ExpectWrite(client.ObjectKeyFromObject(obj), replaced)
	}
	log.FromContext(ctx).Info("updated to the template", "kind", kindOf(obj), "object", klog.KObj(obj), "reason", reason)
	return nil
}

// applyMaps writes, under Coherent, the replicas' PodGangMaps the pass decided, before any child:
// a step of an update is recorded before the pods it replaces go. The step taken is logged and
// told once its map is written.
func (r *Reconciler) applyMaps(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed, p *plan) error {
	var errs []error
	for _, c := range p.maps {
		if err := r.apply(ctx, pcs, obs, c); err != nil {
			errs = append(errs, err)
			continue
		}
		cp := p.coherent
		if cp == nil || cp.turn < 0 || cp.step.Step == "" || c.obj.GetName() != grovev1alpha1.PodGangMapName(pcs.Name, cp.turn) {
			continue
		}
		d := cp.step
		log.FromContext(ctx).Info("coherent update: step taken", "replica", cp.turn, "step", d.Number, "of", d.Steps, "kind", d.Step, "epochs", d.InFlight, "groupReplicasTaken", d.Taken)
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, EventCoherentStep, "Update", "%s", stepMessage(cp.turn, d))
	}
	return errors.Join(errs...)
}
