package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kubegrove/grove/test/cluster"
)

// TestDeletingTheNamespaceMakesTheBinariesCreateNothing deletes the namespace of a running
// PodCliqueSet (replicas, a scaling group, Services, PodGangs): the namespace controller removes
// the pods before their PodCliques, and an operator recreating them would be refused (403,
// NamespaceTerminating) once per pod and pass (170 for these 14 pods before the fix). Neither the
// operator nor the backend-controller sends a create there once the namespace is being deleted.
func TestDeletingTheNamespaceMakesTheBinariesCreateNothing(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := disaggregated(ns, "gone", 2)
	pcs.Spec.Replicas = 2
	require.NoError(t, k8s().Create(context.Background(), pcs))
	waitRunning(t, ns, "gone", 14, 2*time.Minute)

	took, refused := cluster.Current.DeleteNamespace(t, ns, operatorUser, backendUser)
	t.Logf("namespace deleted in %s", took.Round(100*time.Millisecond))
	assert.Empty(t, refused, "creates refused because the namespace was being deleted")
}
