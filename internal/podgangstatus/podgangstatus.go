// Package podgangstatus writes a binary's own part of a PodGang's status by server-side apply:
// the grove-operator its Initialized condition (and the phase while nobody else set one), a
// backend-controller its SchedulerBackendReady, each with a field manager of its own. The API
// server merges the conditions by type (listType=map), so neither write can conflict with or
// overwrite the other's, whatever either binary's cache shows.
package podgangstatus

import (
	"context"

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

// Apply makes manager the owner of exactly this condition, and of the phase when phase is set, on
// the PodGang's status; what other managers own is left alone. pg is updated to what the API
// server stored.
func Apply(ctx context.Context, c client.Client, pg *schedulerv1alpha1.PodGang, manager string, phase schedulerv1alpha1.PodGangPhase, cond metav1.Condition) error {
	status, err := conditionStatus(cond)
	if err != nil {
		return err
	}
	if phase != "" {
		status["phase"] = string(phase)
	}
	return apply(ctx, c, pg, manager, status)
}

// ApplyBackend makes a backend-controller's manager the owner of exactly its condition and of
// the scheduling groups it assigned (none: whatever it assigned before is removed).
func ApplyBackend(ctx context.Context, c client.Client, pg *schedulerv1alpha1.PodGang, manager string, cond metav1.Condition, groups []schedulerv1alpha1.SchedulingGroup) error {
	status, err := conditionStatus(cond)
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

func conditionStatus(cond metav1.Condition) (map[string]any, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&cond)
	if err != nil {
		return nil, err
	}
	return map[string]any{"conditions": []any{m}}, nil
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
