package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// writesIn returns the writes the operator and the backend-controller made in a namespace after
// a moment.
func writesIn(t *testing.T, ns string, after time.Time) []cluster.AuditEvent {
	t.Helper()
	events, err := cluster.Current.AuditEvents(func(ev cluster.AuditEvent) bool {
		return ev.StageTimestamp.After(after) && byOurBinaries(ns)(ev)
	})
	require.NoError(t, err)
	return events
}

// byOurBinaries selects the writes the operator and the backend-controller make in a namespace.
func byOurBinaries(ns string) func(cluster.AuditEvent) bool {
	return func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Namespace == ns && (ev.User.Username == operatorUser || ev.User.Username == backendUser)
	}
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
	// The window starts once the binaries have written nothing in the namespace for 2 s.
	settled := cluster.Current.WaitQuiet(t, 2*time.Second, time.Minute, byOurBinaries(ns))
	time.Sleep(30 * time.Second) // the observation window

	writes := writesIn(t, ns, settled)
	for _, w := range writes {
		t.Logf("write at rest: %s %s %s/%s by %s", w.Verb, w.ObjectRef.Resource, w.ObjectRef.Subresource, w.ObjectRef.Name, w.User.Username)
	}
	assert.Empty(t, writes, "no writes in 30s with nothing changing")
	all := writesIn(t, ns, time.Time{})
	t.Logf("writes to converge a 14-pod PodCliqueSet: %d (%.1f per pod)", len(all), float64(len(all))/14)
}

// TestAStepThatKeepsFailingWritesStatusAtMostOnceAMinute: a PodCliqueSet whose external
// ResourceClaimTemplate does not exist fails the same step on every pass. The failure is in
// status.lastErrors with its first-seen time, retried with back-off, and its status is not
// rewritten while nothing about it changes: at most one status write in 60 s (the audit log).
func TestAStepThatKeepsFailingWritesStatusAtMostOnceAMinute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := builders.PodCliqueSet(ns, "failing").Clique("worker", 1).Obj()
	pcs.Spec.Template.ResourceSharing = []grovev1alpha1.PCSResourceSharingSpec{{ResourceSharingSpec: grovev1alpha1.ResourceSharingSpec{
		Name: "deleted-template", Scope: grovev1alpha1.ResourceSharingScopeAllReplicas}}}
	require.NoError(t, k8s().Create(ctx, pcs))
	got := &grovev1alpha1.PodCliqueSet{}
	require.Eventually(t, func() bool {
		return k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) == nil && len(got.Status.LastErrors) > 0
	}, time.Minute, 200*time.Millisecond, "the failing step is reported")
	first := got.Status.LastErrors[0]
	// The window starts once the children are made: nothing but events for 2 s (the failing step
	// reports each retry, backing off).
	settled := cluster.Current.WaitQuiet(t, 2*time.Second, time.Minute, func(ev cluster.AuditEvent) bool {
		return byOurBinaries(ns)(ev) && ev.ObjectRef.Resource != "events"
	})
	time.Sleep(60 * time.Second) // the observation window

	var statusWrites []cluster.AuditEvent
	for _, w := range writesIn(t, ns, settled) {
		if w.ObjectRef.Resource == "podcliquesets" && w.ObjectRef.Subresource == "status" && w.ObjectRef.Name == "failing" {
			statusWrites = append(statusWrites, w)
		}
	}
	assert.LessOrEqual(t, len(statusWrites), 1, "status writes in 60 s while the same step keeps failing")
	require.NoError(t, k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got))
	require.NotEmpty(t, got.Status.LastErrors)
	assert.Equal(t, first.Code, got.Status.LastErrors[0].Code)
	assert.True(t, first.ObservedAt.Equal(&got.Status.LastErrors[0].ObservedAt), "the failure keeps its first-seen time")
}
