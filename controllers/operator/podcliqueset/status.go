package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/internal/reconcile/conditionlog"
	"github.com/kubegrove/grove/internal/reconcile/requeue"
)

// updateStatus derives the status from the observed children and writes it only if it changed.
func (r *Reconciler) updateStatus(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed, ro *rollout, cp *coherentPass, errs []error) error {
	st := *pcs.Status.DeepCopy()
	st.ObservedGeneration = &pcs.Generation
	selector := labels.SelectorFromSet(labels.Set{grovev1alpha1.LabelPartOf: pcs.Name, grovev1alpha1.LabelManagedBy: grovev1alpha1.LabelManagedByValue}).String()
	st.Selector = &selector
	if st.Phase == "" {
		st.Phase = grovev1alpha1.PodCliqueSetPhasePending
	}

	st.Replicas, st.AvailableReplicas, st.UpdatedReplicas = countReplicas(pcs, obs, ro)
	st.ScaledReplicasToRestore = restoredScaledReplicas(pcs, st.ScaledReplicasToRestore, obs)
	if st.AvailableReplicas > 0 && st.Phase == grovev1alpha1.PodCliqueSetPhasePending {
		st.Phase = grovev1alpha1.PodCliqueSetPhaseRunning
	}
	if children.IsTraining(pcs) {
		trainingPhase(pcs, &st, obs, r.clock().Now())
		st.CliqueStatuses = cliqueStatuses(pcs, obs)
		st.RestartsInProgress = finishedRestarts(st.RestartsInProgress, obs)
	}

	var cond metav1.Condition
	st.PodGangStatuses, cond = podGangsSchedulable(pcs, obs)
	meta.SetStatusCondition(&st.Conditions, cond)
	if backend := r.Backends.ForPodCliqueSet(pcs); backend != nil {
		meta.SetStatusCondition(&st.Conditions, honouredCondition(pcs, backend, obs.gangs))
	}
	if c := obs.topology.condition(pcs); c != nil {
		meta.SetStatusCondition(&st.Conditions, *c)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, grovev1alpha1.ConditionTopologyLevelsUnavailable)
	}

	if c := queueAdmitted(pcs, obs); c != nil {
		meta.SetStatusCondition(&st.Conditions, *c)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, grovev1alpha1.ConditionQueueAdmitted)
	}
	meta.SetStatusCondition(&st.Conditions, collisionCondition(pcs, obs.collisions))
	setDispatched(pcs, &st, r.ClusterName)
	trackUpdate(pcs, &st, ro, obs, metav1.NewTime(r.clock().Now()), cp)

	st.LastErrors = lastErrors(pcs.Status.LastErrors, errs, r.clock().Now())
	if equality.Semantic.DeepEqual(st, pcs.Status) {
		return nil
	}
	old := pcs.Status
	pcs.Status = st
	if err := r.Client.Status().Update(ctx, pcs); err != nil {
		return err
	}
	r.statusWritten(ctx, pcs, old)
	return nil
}

// stepError is the error of one reconcile step, with the code status.lastErrors shows for it.
type stepError struct {
	code grovev1alpha1.ErrorCode
	err  error
}

func (e *stepError) Error() string { return e.err.Error() }
func (e *stepError) Unwrap() error { return e.err }

// step tags a step's error with its code; nil stays nil.
func step(code grovev1alpha1.ErrorCode, err error) error {
	if err == nil {
		return nil
	}
	return &stepError{code: code, err: err}
}

// lastErrors lists one entry per failing step, with its code. An error already recorded (same
// code and description) keeps the time it was first observed: a step that keeps failing leaves the
// status as it is, so it writes nothing and is retried with the controller's back-off instead of
// being woken by its own status write.
func lastErrors(recorded []grovev1alpha1.LastError, errs []error, now time.Time) []grovev1alpha1.LastError {
	var out []grovev1alpha1.LastError
	for _, err := range errs {
		if requeue.Transient(err) {
			continue // a conflict or an object gone only means: read again (internal/reconcile/requeue)
		}
		code := grovev1alpha1.ErrorCodeReconcile
		var se *stepError
		if errors.As(err, &se) {
			code = se.code
		}
		e := grovev1alpha1.LastError{Code: code, Description: err.Error(), ObservedAt: metav1.NewTime(now)}
		for _, r := range recorded {
			if r.Code == e.Code && r.Description == e.Description {
				e.ObservedAt = r.ObservedAt
			}
		}
		out = append(out, e)
	}
	return out
}

// statusWritten tells, once the status write succeeded, what it recorded: events, metrics and
// log lines for the transitions, never repeated by a write that lost a conflict.
func (r *Reconciler) statusWritten(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, old grovev1alpha1.PodCliqueSetStatus) {
	log := logf.FromContext(ctx)
	st := pcs.Status
	if st.Phase != old.Phase && children.IsTraining(pcs) {
		trainingPhases.WithLabelValues(string(st.Phase)).Inc()
		if st.Phase == grovev1alpha1.PodCliqueSetPhaseFailed {
			trainingFailures.WithLabelValues(failureReason(st.Conditions)).Inc()
		}
		log.Info("training phase changed", "from", old.Phase, "to", st.Phase)
		if st.Phase == grovev1alpha1.PodCliqueSetPhaseSucceeded {
			r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, EventWorkloadSucceeded, "Succeed", "%s", successMessage(pcs))
		}
	}
	if p := st.UpdateProgress; p != nil && (old.UpdateProgress == nil || !old.UpdateProgress.UpdateStartedAt.Equal(&p.UpdateStartedAt)) {
		log.Info("rolling update started", "generationHash", *st.CurrentGenerationHash, "strategy", children.UpdateStrategy(pcs))
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, "UpdateStarted", "Update", "rolling replicas to generation %s (%s)", *st.CurrentGenerationHash, children.UpdateStrategy(pcs))
	}
	if p := st.UpdateProgress; p != nil && p.UpdateEndedAt != nil && (old.UpdateProgress == nil || old.UpdateProgress.UpdateEndedAt == nil) {
		log.Info("rolling update completed", "generationHash", ptr.Deref(st.CurrentGenerationHash, ""))
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeNormal, "UpdateCompleted", "Update", "every replica runs generation %s", ptr.Deref(st.CurrentGenerationHash, ""))
	}
	if d, ended := updateEnded(&old, &st); ended {
		updateDuration.WithLabelValues(string(children.UpdateStrategy(pcs))).Observe(d.Seconds())
	}
	conditionlog.Transitions(log, old.Conditions, st.Conditions)
	coherentWaitingChanged(ctx, r, pcs, old)
	if c := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionPodGangsSchedulable); c != nil && c.Reason == grovev1alpha1.ReasonPodGangUnschedulable {
		if o := meta.FindStatusCondition(old.Conditions, grovev1alpha1.ConditionPodGangsSchedulable); o == nil || o.Reason != c.Reason {
			r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, grovev1alpha1.ReasonPodGangUnschedulable, "Schedule", "%s", c.Message)
		}
	}
	if c := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionUpdateInProgress); c != nil && c.Reason == grovev1alpha1.ReasonProgressDeadlineExceeded {
		if o := meta.FindStatusCondition(old.Conditions, grovev1alpha1.ConditionUpdateInProgress); o == nil || o.Reason != c.Reason {
			r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, grovev1alpha1.ReasonProgressDeadlineExceeded, "Update", "the update is not progressing: %s", c.Message)
		}
	}
	if c := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionNameCollision); c != nil && c.Status == metav1.ConditionTrue &&
		!meta.IsStatusConditionTrue(old.Conditions, grovev1alpha1.ConditionNameCollision) {
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, grovev1alpha1.ConditionNameCollision, "Create", "%s", c.Message)
	}
	if c := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionQueueAdmitted); c != nil {
		if o := meta.FindStatusCondition(old.Conditions, grovev1alpha1.ConditionQueueAdmitted); o == nil || o.Reason != c.Reason {
			kind := corev1.EventTypeNormal
			switch c.Reason {
			case schedulerv1alpha1.ReasonLocalQueueNotFound, schedulerv1alpha1.ReasonQueueInadmissible, schedulerv1alpha1.ReasonQueueEvicted, schedulerv1alpha1.ReasonWorkloadSyncFailed:
				kind = corev1.EventTypeWarning
			}
			r.Recorder.Eventf(pcs, nil, kind, "Queue"+c.Reason, "Queue", "%s", c.Message)
		}
	}
	for _, e := range st.LastErrors {
		log.Info("reconcile step failed", "code", e.Code, "error", e.Description)
	}
}

// countReplicas counts the replicas that have PodCliques, those whose every PodClique has
// minAvailable ready pods, and those entirely at the newest template.
func countReplicas(pcs *grovev1alpha1.PodCliqueSet, obs *observed, ro *rollout) (total, avail, upd int32) {
	replicas, available, updated := map[int]bool{}, map[int]bool{}, map[int]bool{}
	for i := 0; i < int(pcs.Spec.Replicas); i++ {
		available[i], updated[i] = true, ro.replicaRolledOut(i, obs)
	}
	for _, pclq := range obs.cliques {
		i, ok := grovev1alpha1.ReplicaIndexOf(pclq)
		if !ok || i >= int(pcs.Spec.Replicas) {
			continue
		}
		replicas[i] = true
		if pclq.Spec.Replicas > 0 && pclq.Status.ReadyReplicas < minAvailable(pclq) { // an idle clique counts as available
			available[i] = false
		}
	}
	for i := range replicas {
		total++
		if available[i] {
			avail++
		}
		if updated[i] {
			upd++
		}
	}
	return total, avail, upd
}

// podGangsSchedulable mirrors each wanted PodGang's phase and backend acknowledgement, and says
// whether every PodGang may be scheduled, naming those that wait and for what.
func podGangsSchedulable(pcs *grovev1alpha1.PodCliqueSet, obs *observed) ([]grovev1alpha1.PodGangStatus, metav1.Condition) {
	var statuses []grovev1alpha1.PodGangStatus
	var waiting, unplaced []string
	reason := grovev1alpha1.ReasonAllPodGangsSchedulable
	names := wantedGangNames(obs)
	for _, name := range names {
		pg := obs.gangs[name]
		if pg == nil {
			waiting = append(waiting, name+": not created yet")
			if reason == grovev1alpha1.ReasonAllPodGangsSchedulable {
				reason = grovev1alpha1.ReasonPodGangPending
			}
			continue
		}
		// A PodGang's status is empty only until the operator's first status write, once all its
		// pods exist: until then it is Pending, said here without costing a PodCliqueSet write.
		gs := grovev1alpha1.PodGangStatus{Name: name, Phase: string(schedulerv1alpha1.PodGangPhasePending)}
		if pg.Status.Phase != "" {
			gs.Phase = string(pg.Status.Phase)
		}
		for _, t := range []string{schedulerv1alpha1.ConditionSchedulerBackendReady, schedulerv1alpha1.ConditionQueueAdmitted} {
			if c := meta.FindStatusCondition(pg.Status.Conditions, t); c != nil {
				gs.Conditions = append(gs.Conditions, *c)
			}
		}
		statuses = append(statuses, gs)
		if pg.Acknowledged() {
			if c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionScheduled); c != nil &&
				c.Status == metav1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				unplaced = append(unplaced, fmt.Sprintf("%s: not placed: %s", name, c.Message))
			}
			continue
		}
		waiting = append(waiting, fmt.Sprintf("%s: scheduler backend %q has not acknowledged generation %d (is its backend-controller running?)",
			name, pg.Labels[grovev1alpha1.LabelSchedulerName], pg.Generation))
		reason = grovev1alpha1.ReasonSchedulerBackendNotReady
	}
	if len(unplaced) > 0 && reason == grovev1alpha1.ReasonAllPodGangsSchedulable {
		reason = grovev1alpha1.ReasonPodGangUnschedulable
	}
	waiting = append(waiting, firstNames(unplaced, 3)...)
	cond := metav1.Condition{Type: grovev1alpha1.ConditionPodGangsSchedulable, Status: metav1.ConditionTrue, Reason: reason,
		Message: "every PodGang is acknowledged by its scheduler backend", ObservedGeneration: pcs.Generation}
	if len(waiting) > 0 {
		cond.Status, cond.Message = metav1.ConditionFalse, strings.Join(waiting, "; ")
	}
	return statuses, cond
}

// honouredCondition says whether the backend does everything the PodCliqueSet asks for.
// gangs are the PodCliqueSet's PodGangs as observed: their status says how the
// backend-controller grouped their pods.
func honouredCondition(pcs *grovev1alpha1.PodCliqueSet, backend backends.PodPreparer, gangs map[string]*schedulerv1alpha1.PodGang) metav1.Condition {
	cond := metav1.Condition{Type: grovev1alpha1.ConditionSchedulingConstraintsHonored, Status: metav1.ConditionTrue, Reason: grovev1alpha1.ReasonAllConstraintsHonored,
		Message: fmt.Sprintf("scheduler backend %s honours every scheduling constraint", backend.Name()), ObservedGeneration: pcs.Generation}
	missing := backend.NotHonoured(pcs, gangs)
	missing = append(missing, queueTopology(gangs)...)
	if len(missing) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, grovev1alpha1.ReasonConstraintsNotHonored
		cond.Message = fmt.Sprintf("scheduler backend %s does not honour: %s", backend.Name(), strings.Join(missing, "; "))
	}
	return cond
}

// queueTopology reports the gangs Kueue admitted without placing all of their pack constraints
// (the backend-controller's QueueAdmitted reason AdmittedWithoutTopology, docs/kueue.md), in
// its words.
func queueTopology(gangs map[string]*schedulerv1alpha1.PodGang) []string {
	var out []string
	for name, pg := range gangs {
		if c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionQueueAdmitted); c != nil &&
			c.Reason == schedulerv1alpha1.ReasonQueueAdmittedWithoutTopology {
			out = append(out, fmt.Sprintf("topology through Kueue, gang %s: %s", name, c.Message))
		}
	}
	sort.Strings(out)
	return firstNames(out, 3)
}

// firstNames lists up to n names and how many more there are.
func firstNames(names []string, n int) []string {
	if len(names) <= n {
		return names
	}
	return append(slices.Clone(names[:n]), fmt.Sprintf("and %d more", len(names)-n))
}

// trackUpdate records a rollout in status: an update starts when the template's generation hash
// changes (creating the PodCliqueSet is not an update) and ends when every replica runs the
// newest template.
func trackUpdate(pcs *grovev1alpha1.PodCliqueSet, st *grovev1alpha1.PodCliqueSetStatus, ro *rollout, obs *observed, now metav1.Time, cp *coherentPass) {
	onDelete := children.UpdateStrategy(pcs) == grovev1alpha1.OnDeleteStrategy
	switch {
	case st.CurrentGenerationHash == nil && !createdWithAnother(ro, obs):
		st.CurrentGenerationHash = &ro.hash
	case st.CurrentGenerationHash == nil, *st.CurrentGenerationHash != ro.hash:
		// The first status is written once the first children exist: children already made from
		// an older template mean the template changed since, which is an update too.
		st.CurrentGenerationHash = &ro.hash
		st.UpdateProgress = &grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: now}
		if onDelete {
			// Nothing is left for the operator to do: pods are replaced as users delete them
			// (upstream ends an OnDelete update at once, too).
			st.UpdateProgress.UpdateEndedAt = &now
		}
	}
	inProgress := st.UpdateProgress != nil && st.UpdateProgress.UpdateEndedAt == nil
	if inProgress && st.UpdatedReplicas >= pcs.Spec.Replicas && (cp == nil || cp.turn < 0) {
		st.UpdateProgress.UpdateEndedAt = &now
		inProgress = false
		// Upstream's scope names what the update changed, while it runs.
		st.UpdateProgress.InScopeStandalonePodCliques, st.UpdateProgress.InScopePodCliqueScalingGroups = nil, nil
	}
	if p := st.UpdateProgress; p != nil {
		before := p.UpdatedPodCliquesCount + p.UpdatedPodCliqueScalingGroupsCount
		countUpdated(pcs, p, ro, obs)
		var updating []grovev1alpha1.PodCliqueSetReplicaUpdateProgress
		switch {
		case inProgress && cp != nil:
			updating = coherentUpdating(cp, p, now)
		case inProgress && ro.rolling:
			updating = currentlyUpdating(pcs, ro, obs, p, now)
		}
		p.CurrentlyUpdating = updating
		switch {
		case !inProgress:
			p.LastProgressedAt = nil
		case p.LastProgressedAt == nil || p.UpdatedPodCliquesCount+p.UpdatedPodCliqueScalingGroupsCount > before:
			p.LastProgressedAt = &now
		}
	}
	meta.SetStatusCondition(&st.Conditions, updateCondition(pcs, obs, inProgress))
}

// updateCondition is the PodCliqueSet's UpdateInProgress, as upstream aggregates it: True
// (Progressing) while its update runs or a child still rolls, Unknown (ProgressDeadlineExceeded)
// when a rolling standalone PodClique or scaling group passed its progress deadline, False
// (NoActiveUpdate) otherwise.
func updateCondition(pcs *grovev1alpha1.PodCliqueSet, obs *observed, inProgress bool) metav1.Condition {
	var rollingCliques, stuckCliques, rollingGroups, stuckGroups int
	tally := func(conds []metav1.Condition, rolling, stuck *int) {
		c := meta.FindStatusCondition(conds, grovev1alpha1.ConditionUpdateInProgress)
		if c == nil || c.Status == metav1.ConditionFalse {
			return
		}
		*rolling++
		if c.Status == metav1.ConditionUnknown {
			*stuck++
		}
	}
	for _, pclq := range obs.cliques {
		if pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] == "" {
			tally(pclq.Status.Conditions, &rollingCliques, &stuckCliques)
		}
	}
	for _, pcsg := range obs.groups {
		tally(pcsg.Status.Conditions, &rollingGroups, &stuckGroups)
	}
	cond := metav1.Condition{Type: grovev1alpha1.ConditionUpdateInProgress, Status: metav1.ConditionFalse,
		Reason: grovev1alpha1.ReasonNoActiveUpdate, Message: "No rolling update is in progress", ObservedGeneration: pcs.Generation}
	switch {
	case stuckCliques+stuckGroups > 0:
		var parts []string
		if stuckCliques > 0 {
			parts = append(parts, fmt.Sprintf("%d/%d PodCliques stuck", stuckCliques, rollingCliques))
		}
		if stuckGroups > 0 {
			parts = append(parts, fmt.Sprintf("%d/%d PodCliqueScalingGroups stuck", stuckGroups, rollingGroups))
		}
		cond.Status, cond.Reason, cond.Message = metav1.ConditionUnknown, grovev1alpha1.ReasonProgressDeadlineExceeded, strings.Join(parts, ", ")
	case inProgress || rollingCliques+rollingGroups > 0:
		cond.Status, cond.Reason, cond.Message = metav1.ConditionTrue, grovev1alpha1.ReasonProgressing, "Rolling update is in progress"
	}
	return cond
}

// createdWithAnother reports whether a child carries another generation hash than the newest.
func createdWithAnother(ro *rollout, obs *observed) bool {
	for _, p := range obs.cliques {
		if p.Spec.PodCliqueSetGenerationHash != "" && p.Spec.PodCliqueSetGenerationHash != ro.hash {
			return true
		}
	}
	for _, g := range obs.groups {
		if g.Spec.PodCliqueSetGenerationHash != "" && g.Spec.PodCliqueSetGenerationHash != ro.hash {
			return true
		}
	}
	return false
}

// countUpdated fills an update's counts as upstream does: the standalone PodCliques and the
// scaling groups the spec wants, and those at the newest generation hash whose pods all run it.
func countUpdated(pcs *grovev1alpha1.PodCliqueSet, p *grovev1alpha1.PodCliqueSetUpdateProgress, ro *rollout, obs *observed) {
	p.TotalPodCliquesCount, p.UpdatedPodCliquesCount, p.TotalPodCliqueScalingGroupsCount, p.UpdatedPodCliqueScalingGroupsCount = 0, 0, 0, 0
	for i := 0; i < int(pcs.Spec.Replicas); i++ {
		for _, c := range standaloneCliques(pcs) {
			p.TotalPodCliquesCount++
			if pclq := obs.cliques[grovev1alpha1.PodCliqueName(pcs.Name, i, c.Name)]; pclq != nil &&
				pclq.Spec.PodCliqueSetGenerationHash == ro.hash && cliqueRolledOut(pclq) {
				p.UpdatedPodCliquesCount++
			}
		}
		for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
			p.TotalPodCliqueScalingGroupsCount++
			name := grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, i, g.Name)
			if pcsg := obs.groups[name]; pcsg != nil && pcsg.Spec.PodCliqueSetGenerationHash == ro.hash && groupRolledOut(name, ro, obs) {
				p.UpdatedPodCliqueScalingGroupsCount++
			}
		}
	}
}

// groupRolledOut reports whether every PodClique of a scaling group is at the newest hash with
// its pods rolled out.
func groupRolledOut(group string, ro *rollout, obs *observed) bool {
	for _, pclq := range obs.cliques {
		if pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] == group && (pclq.Spec.PodCliqueSetGenerationHash != ro.hash || !cliqueRolledOut(pclq)) {
			return false
		}
	}
	return true
}

// currentlyUpdating lists the replicas being replaced now (their children carry the newest hash,
// their pods are not all replaced yet), each with the time it started, kept from the last status.
func currentlyUpdating(pcs *grovev1alpha1.PodCliqueSet, ro *rollout, obs *observed, p *grovev1alpha1.PodCliqueSetUpdateProgress, now metav1.Time) []grovev1alpha1.PodCliqueSetReplicaUpdateProgress {
	started := map[int32]metav1.Time{}
	for _, u := range p.CurrentlyUpdating {
		started[u.ReplicaIndex] = u.UpdateStartedAt
	}
	var out []grovev1alpha1.PodCliqueSetReplicaUpdateProgress
	for i := 0; i < int(pcs.Spec.Replicas); i++ {
		if exists, atHash, done := ro.replicaState(i, obs); exists && atHash && !done {
			u := grovev1alpha1.PodCliqueSetReplicaUpdateProgress{ReplicaIndex: int32(i), UpdateStartedAt: now}
			if t, ok := started[int32(i)]; ok {
				u.UpdateStartedAt = t
			}
			out = append(out, u)
		}
	}
	return out
}

// coherentUpdating is, under Coherent, the replica being updated now: when it started (kept from
// the last status), the epochs its step brings up and what the step waits for.
func coherentUpdating(cp *coherentPass, p *grovev1alpha1.PodCliqueSetUpdateProgress, now metav1.Time) []grovev1alpha1.PodCliqueSetReplicaUpdateProgress {
	if cp.turn < 0 {
		return nil
	}
	u := grovev1alpha1.PodCliqueSetReplicaUpdateProgress{ReplicaIndex: int32(cp.turn), UpdateStartedAt: now, InFlightEpochs: cp.step.InFlight}
	for _, prev := range p.CurrentlyUpdating {
		if prev.ReplicaIndex == u.ReplicaIndex {
			u.UpdateStartedAt = prev.UpdateStartedAt
		}
	}
	if m := stepMessage(cp.turn, cp.step); m != "" {
		u.Message = &m
	}
	return []grovev1alpha1.PodCliqueSetReplicaUpdateProgress{u}
}

// queueWorst ranks the reasons a gang is not admitted, the one that needs a person first.
var queueWorst = []string{schedulerv1alpha1.ReasonLocalQueueNotFound, schedulerv1alpha1.ReasonQueueInadmissible,
	schedulerv1alpha1.ReasonWorkloadSyncFailed, schedulerv1alpha1.ReasonQueueEvicted, schedulerv1alpha1.ReasonQueuePending}

// queueAdmitted sums up Kueue's decision on the PodCliqueSet's gangs (docs/kueue.md): True once
// every wanted gang is admitted; otherwise False with the most pressing reason, naming the queue
// and each gang that waits with Kueue's own words. Nil when the PodCliqueSet is not queued.
func queueAdmitted(pcs *grovev1alpha1.PodCliqueSet, obs *observed) *metav1.Condition {
	queue := grovev1alpha1.QueueNameOf(pcs)
	if queue == "" {
		return nil
	}
	names := wantedGangNames(obs)
	if grovev1alpha1.AdmittedByOwner(pcs) {
		return &metav1.Condition{Type: grovev1alpha1.ConditionQueueAdmitted, Status: metav1.ConditionTrue, Reason: grovev1alpha1.ReasonAdmittedWithOwner,
			Message: fmt.Sprintf("Kueue admitted the owner as a whole in LocalQueue %s; its %d gangs hold no quota of their own", queue, len(names)), ObservedGeneration: pcs.Generation}
	}
	rank := len(queueWorst)
	var waiting []string
	for _, name := range names {
		pg := obs.gangs[name]
		c := metav1.Condition{Reason: schedulerv1alpha1.ReasonQueuePending, Message: "its Workload is not created yet"}
		if pg != nil {
			if got := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionQueueAdmitted); got != nil {
				c = *got
			}
		}
		if c.Status == metav1.ConditionTrue {
			continue
		}
		if i := slices.Index(queueWorst, c.Reason); i >= 0 && i < rank {
			rank = i
		}
		waiting = append(waiting, fmt.Sprintf("gang %s: %s", name, c.Message))
	}
	cond := &metav1.Condition{Type: grovev1alpha1.ConditionQueueAdmitted, Status: metav1.ConditionTrue, Reason: grovev1alpha1.ReasonAllGangsAdmitted,
		Message: fmt.Sprintf("Kueue admitted all %d gangs in LocalQueue %s", len(names), queue), ObservedGeneration: pcs.Generation}
	if len(waiting) > 0 {
		reason := schedulerv1alpha1.ReasonQueuePending
		if rank < len(queueWorst) {
			reason = queueWorst[rank]
		}
		cond.Status, cond.Reason = metav1.ConditionFalse, reason
		cond.Message = fmt.Sprintf("LocalQueue %s: %d of %d gangs not admitted; %s", queue, len(waiting), len(names), strings.Join(firstNames(waiting, 3), "; "))
	}
	return cond
}

// wantedGangNames are the names of the PodGangs the PodCliqueSet wants, sorted.
func wantedGangNames(obs *observed) []string {
	names := make([]string, 0, len(obs.wantGangs))
	for name := range obs.wantGangs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
