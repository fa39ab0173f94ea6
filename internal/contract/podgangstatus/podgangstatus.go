// Package podgangstatus writes a binary's own part of a PodGang's status by server-side apply:
// the grove-operator its phase, Initialized, Scheduled and Ready conditions and their times, a
// backend-controller its SchedulerBackendReady, each with a field manager of its own. The API
// server merges the conditions by type (listType=map), so neither write can conflict with or
// overwrite the other's, whatever either binary's cache shows.
package podgangstatus

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	schedulerac "github.com/kubegrove/grove/apis/scheduler/v1alpha1/applyconfiguration/scheduler/v1alpha1"
)

// Field managers of the PodGang status: one for the operator, one per backend-controller.
const (
	ManagerOperator      = "grove-operator"
	ManagerBackendPrefix = "backend-controller-"
)

// Part is one manager's part of a PodGang's status; what it leaves empty the manager does not own.
type Part struct {
	Phase                    schedulerv1alpha1.PodGangPhase
	Conditions               []metav1.Condition
	LastScheduled, LastReady *metav1.Time
}

// Apply makes manager the owner of exactly part on the PodGang's status — its conditions, and the
// phase and times when set; what other managers own is left alone. Once the write stood, pg's
// status shows part over what pg showed of the others' (what a caller logs as its transitions).
func Apply(ctx context.Context, c client.Client, pg *schedulerv1alpha1.PodGang, manager string, part Part) error {
	status := schedulerac.PodGangStatus().WithConditions(conditions(part.Conditions...)...)
	if part.Phase != "" {
		status.WithPhase(part.Phase)
	}
	if part.LastScheduled != nil {
		status.WithLastScheduled(*part.LastScheduled)
	}
	if part.LastReady != nil {
		status.WithLastReady(*part.LastReady)
	}
	if err := apply(ctx, c, pg, manager, status); err != nil {
		return err
	}
	// A new slice: a caller's copy of the conditions before (what it logs as the transitions
	// from) must not change under it.
	pg.Status.Conditions = slices.Clone(pg.Status.Conditions)
	for _, cond := range part.Conditions {
		meta.SetStatusCondition(&pg.Status.Conditions, cond)
	}
	if part.Phase != "" {
		pg.Status.Phase = part.Phase
	}
	if part.LastScheduled != nil {
		pg.Status.LastScheduled = part.LastScheduled.DeepCopy()
	}
	if part.LastReady != nil {
		pg.Status.LastReady = part.LastReady.DeepCopy()
	}
	return nil
}

// ApplyBackend makes a backend-controller's manager the owner of exactly its condition and of
// the scheduling groups it assigned (none: whatever it assigned before is removed).
func ApplyBackend(ctx context.Context, c client.Client, pg *schedulerv1alpha1.PodGang, manager string, cond metav1.Condition, groups []schedulerv1alpha1.SchedulingGroup) error {
	status := schedulerac.PodGangStatus().WithConditions(conditions(cond)...)
	for _, g := range groups {
		status.WithSchedulingGroups(schedulerac.SchedulingGroup().WithPodGroup(g.PodGroup).WithName(g.Name))
	}
	if err := apply(ctx, c, pg, manager, status); err != nil {
		return err
	}
	pg.Status.Conditions = slices.Clone(pg.Status.Conditions) // as in Apply
	meta.SetStatusCondition(&pg.Status.Conditions, cond)
	pg.Status.SchedulingGroups = slices.Clone(groups)
	return nil
}

// conditions are conds as apply configurations, with what each sets (an unset observed
// generation or transition time is left out rather than owned as zero).
func conditions(conds ...metav1.Condition) []*metav1ac.ConditionApplyConfiguration {
	out := make([]*metav1ac.ConditionApplyConfiguration, 0, len(conds))
	for _, c := range conds {
		ac := metav1ac.Condition().WithType(c.Type).WithStatus(c.Status).WithReason(c.Reason).WithMessage(c.Message)
		if c.ObservedGeneration != 0 {
			ac.WithObservedGeneration(c.ObservedGeneration)
		}
		if !c.LastTransitionTime.IsZero() {
			ac.WithLastTransitionTime(c.LastTransitionTime)
		}
		out = append(out, ac)
	}
	return out
}

// apply writes status as manager's. The response is not read back: the client decodes it into
// the apply configuration, reusing what was sent (a condition of one type could keep fields of
// another), so Apply and ApplyBackend update pg from what they applied.
func apply(ctx context.Context, c client.Client, pg *schedulerv1alpha1.PodGang, manager string, status *schedulerac.PodGangStatusApplyConfiguration) error {
	return c.Status().Apply(ctx, schedulerac.PodGang(pg.Name, pg.Namespace).WithStatus(status), client.FieldOwner(manager), client.ForceOwnership)
}
