// Package podgangstatus writes a binary's own part of a PodGang's status by server-side apply:
// the grove-operator its phase, Initialized, Scheduled and Ready conditions and their times, a
// backend-controller its SchedulerBackendReady, each with a field manager of its own. The API
// server merges the conditions by type (listType=map), so neither write can conflict with or
// overwrite the other's, whatever either binary's cache shows.
package podgangstatus

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
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
// phase and times when set; what other managers own is left alone. pg is updated to what the API
// server stored.
func Apply(ctx context.Context, c client.Client, pg *schedulerv1alpha1.PodGang, manager string, part Part) error {
	status, err := conditionsStatus(part.Conditions...)
	if err != nil {
		return err
	}
	if part.Phase != "" {
		status["phase"] = string(part.Phase)
	}
	for key, t := range map[string]*metav1.Time{"lastScheduled": part.LastScheduled, "lastReady": part.LastReady} {
		if t != nil {
			status[key] = t.UTC().Format(time.RFC3339)
		}
	}
	return apply(ctx, c, pg, manager, status)
}

// ApplyBackend makes a backend-controller's manager the owner of exactly its condition and of
// the scheduling groups it assigned (none: whatever it assigned before is removed).
func ApplyBackend(ctx context.Context, c client.Client, pg *schedulerv1alpha1.PodGang, manager string, cond metav1.Condition, groups []schedulerv1alpha1.SchedulingGroup) error {
	status, err := conditionsStatus(cond)
	if err != nil {
		return err
	}
	if len(groups) > 0 {
		list := make([]any, 0, len(groups))
		for _, g := range groups {
			list = append(list, map[string]any{"podGroup": g.PodGroup, "name": g.Name})
		}
		status["schedulingGroups"] = list
	}
	return apply(ctx, c, pg, manager, status)
}

func conditionsStatus(conds ...metav1.Condition) (map[string]any, error) {
	list := make([]any, 0, len(conds))
	for i := range conds {
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&conds[i])
		if err != nil {
			return nil, err
		}
		list = append(list, m)
	}
	return map[string]any{"conditions": list}, nil
}

func apply(ctx context.Context, c client.Client, pg *schedulerv1alpha1.PodGang, manager string, status map[string]any) error {
	u := &unstructured.Unstructured{Object: map[string]any{"status": status}}
	u.SetGroupVersionKind(schedulerv1alpha1.GroupVersion.WithKind("PodGang"))
	u.SetNamespace(pg.Namespace)
	u.SetName(pg.Name)
	if err := c.Status().Patch(ctx, u, client.Apply, client.FieldOwner(manager), client.ForceOwnership); err != nil {
		return err
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, pg)
}
