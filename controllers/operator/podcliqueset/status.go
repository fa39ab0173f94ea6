package podcliqueset

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/operator/expand"
	"github.com/kubegrove/grove/controllers/operator/podclique"
)

// PodCliqueSet condition telling whether every PodGang may be scheduled.
const (
	// ConditionPodGangsSchedulable is False while a PodGang is not created yet or its scheduler
	// backend has not acknowledged it, whose pods then wait (gated); the message names the
	// PodGang and why.
	ConditionPodGangsSchedulable   = "PodGangsSchedulable"
	ReasonAllPodGangsSchedulable   = "AllPodGangsSchedulable"
	ReasonPodGangPending           = "PodGangPending"
	ReasonSchedulerBackendNotReady = "SchedulerBackendNotReady"
	// ConditionSchedulingConstraintsHonored is False when the scheduler backend admitted
	// something it does not do (a preferred topology level, a gang on a backend without gangs);
	// the message lists what.
	ConditionSchedulingConstraintsHonored = "SchedulingConstraintsHonored"
	ReasonAllConstraintsHonored           = "AllConstraintsHonored"
	ReasonConstraintsNotHonored           = "ConstraintsNotHonored"
	// ErrorCodeReconcile marks a failed reconcile step in status.lastErrors.
	ErrorCodeReconcile grovev1alpha1.ErrorCode = "ERR_RECONCILE"
)

// updateStatus derives the status from the observed children and writes it only if it changed.
func (r *Reconciler) updateStatus(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet, obs *observed, ro *rollout, errs []error) error {
	st := *pcs.Status.DeepCopy()
	st.ObservedGeneration = &pcs.Generation
	selector := labels.SelectorFromSet(labels.Set{grovev1alpha1.LabelPartOf: pcs.Name, grovev1alpha1.LabelManagedBy: grovev1alpha1.LabelManagedByValue}).String()
	st.Selector = &selector
	if st.Phase == "" {
		st.Phase = grovev1alpha1.PodCliqueSetPhasePending
	}

	replicas, available, updated := map[int]bool{}, map[int]bool{}, map[int]bool{}
	for i := 0; i < int(pcs.Spec.Replicas); i++ {
		available[i], updated[i] = true, ro.replicaRolledOut(i, obs)
	}
	for _, pclq := range obs.cliques {
		i, err := strconv.Atoi(pclq.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex])
		if err != nil || i >= int(pcs.Spec.Replicas) {
			continue
		}
		replicas[i] = true
		if pclq.Status.ReadyReplicas < minAvailable(pclq) {
			available[i] = false
		}
	}
	st.Replicas, st.AvailableReplicas, st.UpdatedReplicas = 0, 0, 0
	for i := range replicas {
		st.Replicas++
		if available[i] {
			st.AvailableReplicas++
		}
		if updated[i] {
			st.UpdatedReplicas++
		}
	}
	if st.AvailableReplicas > 0 && st.Phase == grovev1alpha1.PodCliqueSetPhasePending {
		st.Phase = grovev1alpha1.PodCliqueSetPhaseRunning
	}
	if expand.IsTraining(pcs) {
		r.trainingPhase(pcs, &st, obs)
		st.RestartsInProgress = finishedRestarts(st.RestartsInProgress, obs)
		if len(st.RestartsInProgress) == 0 {
			st.RestartsInProgress = nil
		}
	}

	st.PodGangStatuses = nil
	var waiting []string
	reason := ReasonAllPodGangsSchedulable
	names := make([]string, 0, len(obs.wantGangs))
	for name := range obs.wantGangs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		pg := obs.gangs[name]
		if pg == nil {
			waiting = append(waiting, name+": not created yet")
			if reason == ReasonAllPodGangsSchedulable {
				reason = ReasonPodGangPending
			}
			continue
		}
		// A PodGang is Pending until a scheduler says otherwise; its status is empty only until
		// the operator's first status write, which mirrored would cost a PodCliqueSet write.
		gs := grovev1alpha1.PodGangStatus{Name: name, Phase: string(schedulerv1alpha1.PodGangPhasePending)}
		if pg.Status.Phase != "" {
			gs.Phase = string(pg.Status.Phase)
		}
		if c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady); c != nil {
			gs.Conditions = []metav1.Condition{*c}
		}
		st.PodGangStatuses = append(st.PodGangStatuses, gs)
		if podclique.PodGangSchedulable(pg) {
			continue
		}
		waiting = append(waiting, fmt.Sprintf("%s: scheduler backend %q has not acknowledged generation %d (is its backend-controller running?)",
			name, pg.Labels[grovev1alpha1.LabelSchedulerName], pg.Generation))
		reason = ReasonSchedulerBackendNotReady
	}
	cond := metav1.Condition{Type: ConditionPodGangsSchedulable, Status: metav1.ConditionTrue, Reason: reason,
		Message: "every PodGang is acknowledged by its scheduler backend", ObservedGeneration: pcs.Generation}
	if len(waiting) > 0 {
		cond.Status, cond.Message = metav1.ConditionFalse, strings.Join(waiting, "; ")
	}
	meta.SetStatusCondition(&st.Conditions, cond)
	if backend := r.Backends.ForPodCliqueSet(pcs); backend != nil {
		meta.SetStatusCondition(&st.Conditions, honouredCondition(pcs, backend))
	}
	if c := obs.topology.condition(pcs); c != nil {
		meta.SetStatusCondition(&st.Conditions, *c)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, ConditionTopologyLevelsUnavailable)
	}

	r.trackUpdate(pcs, &st, ro.hash)

	st.LastErrors = nil
	for _, err := range errs {
		st.LastErrors = append(st.LastErrors, grovev1alpha1.LastError{Code: ErrorCodeReconcile, Description: err.Error(), ObservedAt: metav1.Now()})
	}
	if equality.Semantic.DeepEqual(st, pcs.Status) {
		return nil
	}
	pcs.Status = st
	return r.Client.Status().Update(ctx, pcs)
}

// honouredCondition says whether the backend does everything the PodCliqueSet asks for.
func honouredCondition(pcs *grovev1alpha1.PodCliqueSet, backend backends.SchedulerBackend) metav1.Condition {
	cond := metav1.Condition{Type: ConditionSchedulingConstraintsHonored, Status: metav1.ConditionTrue, Reason: ReasonAllConstraintsHonored,
		Message: fmt.Sprintf("scheduler backend %s honours every scheduling constraint", backend.Name()), ObservedGeneration: pcs.Generation}
	missing := backend.NotHonoured(pcs)
	if backend.GangScheduling() && hasStartupOrder(pcs) {
		missing = append(missing, "startup ordering: a gang is placed and started whole, so cliques do not wait for the ones they start after")
	}
	if len(missing) > 0 {
		cond.Status, cond.Reason = metav1.ConditionFalse, ReasonConstraintsNotHonored
		cond.Message = fmt.Sprintf("scheduler backend %s does not honour: %s", backend.Name(), strings.Join(missing, "; "))
	}
	return cond
}

// hasStartupOrder reports whether any clique waits for another.
func hasStartupOrder(pcs *grovev1alpha1.PodCliqueSet) bool {
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && len(expand.ParentCliques(pcs, c.Name)) > 0 {
			return true
		}
	}
	return false
}

// trackUpdate records a rollout in status: an update starts when the template's generation hash
// changes (creating the PodCliqueSet is not an update) and ends when every replica runs the
// newest template.
func (r *Reconciler) trackUpdate(pcs *grovev1alpha1.PodCliqueSet, st *grovev1alpha1.PodCliqueSetStatus, hash string) {
	now := metav1.Now()
	switch {
	case st.CurrentGenerationHash == nil:
		st.CurrentGenerationHash = &hash
	case *st.CurrentGenerationHash != hash:
		r.Recorder.Eventf(pcs, nil, "Normal", "UpdateStarted", "Update", "rolling replicas to generation %s (%s)", hash, expand.UpdateStrategy(pcs))
		st.CurrentGenerationHash = &hash
		st.UpdateProgress = &grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: now}
	}
	inProgress := st.UpdateProgress != nil && st.UpdateProgress.UpdateEndedAt == nil
	if inProgress && st.UpdatedReplicas >= pcs.Spec.Replicas {
		st.UpdateProgress.UpdateEndedAt = &now
		r.Recorder.Eventf(pcs, nil, "Normal", "UpdateCompleted", "Update", "every replica runs generation %s", hash)
		inProgress = false
	}
	cond := metav1.Condition{Type: grovev1alpha1.ConditionUpdateInProgress, Status: metav1.ConditionFalse, Reason: "NoUpdateInProgress",
		Message: "every replica runs the current template", ObservedGeneration: pcs.Generation}
	if inProgress {
		cond.Status, cond.Reason = metav1.ConditionTrue, grovev1alpha1.ReasonUpdateInProgress
		cond.Message = fmt.Sprintf("%d of %d replicas run the current template", st.UpdatedReplicas, pcs.Spec.Replicas)
	}
	meta.SetStatusCondition(&st.Conditions, cond)
}
