package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/cluster"
)

// TestDeletingTheNamespaceMakesTheOperatorCreateNothing deletes the namespace of a running
// PodCliqueSet (replicas, a scaling group, Services, PodGangs): the namespace controller removes
// the pods before their PodCliques, and an operator recreating them would be refused (403,
// NamespaceTerminating) once per pod and pass (170 for these 14 pods before the fix). Neither the
// operator nor the backend-controller sends a create there once the namespace is being deleted.
func TestDeletingTheNamespaceMakesTheBinariesCreateNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := disaggregated(ns, "gone", 2)
	pcs.Spec.Replicas = 2
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "gone", 14, 2*time.Minute)

	namespace := &corev1.Namespace{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Name: ns}, namespace))
	require.NoError(t, k8s().Delete(ctx, namespace))
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Name: ns}, namespace))
	deleting := namespace.DeletionTimestamp.Time
	start := time.Now()
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s().Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}))
	}, 3*time.Minute, 250*time.Millisecond, "the namespace goes")
	t.Logf("namespace deleted in %s", time.Since(start).Round(100*time.Millisecond))

	writes, err := cluster.Current.AuditEvents(func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Namespace == ns && (ev.User.Username == operatorUser || ev.User.Username == backendUser) && ev.Verb == "create" &&
			!ev.StageTimestamp.Before(deleting.Add(-time.Second).Truncate(time.Second))
	})
	require.NoError(t, err)
	refused := 0
	for _, w := range writes {
		if w.ResponseStatus.Code == 403 {
			refused++
		}
		t.Logf("create after the deletion began: %s %s/%s by %s → %d", w.ObjectRef.Resource, w.ObjectRef.Namespace, w.ObjectRef.Name, w.User.Username, w.ResponseStatus.Code)
	}
	assert.Zero(t, refused, "creates refused because the namespace was being deleted")
}
