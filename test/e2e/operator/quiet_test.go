package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// writesIn returns the writes the operator and the backend-controller made in a namespace after
// a moment.
func writesIn(t *testing.T, ns string, after time.Time) []cluster.AuditEvent {
	t.Helper()
	events, err := cluster.Current.AuditEvents(func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Namespace == ns && ev.StageTimestamp.After(after) &&
			(ev.User.Username == operatorUser || ev.User.Username == backendUser)
	})
	require.NoError(t, err)
	return events
}

func TestOperatorMakesNoWritesAtRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := disaggregated(ns, "quiet", 2)
	pcs.Spec.Replicas = 2
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "quiet", 14, 2*time.Minute)
	require.Eventually(t, func() bool {
		got := &grovev1alpha1.PodCliqueSet{}
		return k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) == nil && got.Status.AvailableReplicas == 2 && got.Status.UpdatedReplicas == 2
	}, time.Minute, 200*time.Millisecond)
	time.Sleep(3 * time.Second) // let the last status writes land
	settled := time.Now()
	time.Sleep(30 * time.Second)

	writes := writesIn(t, ns, settled)
	for _, w := range writes {
		t.Logf("write at rest: %s %s %s/%s by %s", w.Verb, w.ObjectRef.Resource, w.ObjectRef.Subresource, w.ObjectRef.Name, w.User.Username)
	}
	assert.Empty(t, writes, "no writes in 30s with nothing changing")
	all := writesIn(t, ns, time.Time{})
	t.Logf("writes to converge a 14-pod PodCliqueSet: %d (%.1f per pod)", len(all), float64(len(all))/14)
}
