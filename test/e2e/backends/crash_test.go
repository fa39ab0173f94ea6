package backendse2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// backendWrites returns the writes the backend-controllers made in a namespace after a moment.
func backendWrites(t *testing.T, ns string, after time.Time) []cluster.AuditEvent {
	t.Helper()
	events, err := cluster.Current.AuditEvents(func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Namespace == ns && ev.StageTimestamp.After(after) &&
			strings.HasPrefix(ev.User.Username, "system:serviceaccount:grove-system:backend-controller")
	})
	require.NoError(t, err)
	return events
}

// TestBackendControllersSurviveKillsAndRestAfterwards kills the kube-scheduler backend-controller
// right after a PodCliqueSet is created and again once its gang is placed: the gang is placed
// whole, its Workload API objects are never recreated, and once everything has settled no
// backend-controller writes anything. It kills a shared process, so it does not run in parallel.
func TestBackendControllersSurviveKillsAndRestAfterwards(t *testing.T) {
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, 0, 2)

	kai := podCliqueSet(ns, "kai-rest", clique(ns, "w", 2, 1, kaiv2alpha2.SchedulerName))
	require.NoError(t, k8s().Create(ctx, kai))
	pcs := podCliqueSet(ns, "crash", clique(ns, "leader", 1, 4, ""), clique(ns, "worker", 3, 4, ""))
	require.NoError(t, k8s().Create(ctx, pcs))
	require.Eventually(t, func() bool { // the PodGang is there; its sync may have begun or not
		return k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "crash-0"}, &schedulerv1alpha1.PodGang{}) == nil
	}, time.Minute, 10*time.Millisecond, "the operator creates the PodGang")
	kubeBackend.Kill()
	var err error
	kubeBackend, err = startBackend(cluster.Current, "kube-scheduler", "backend-controller-kube", "backend-controller-kube-2")
	require.NoError(t, err)
	waitBound(t, ns, "crash", 4)
	waitUngated(t, ns, "kai-rest", 2)

	key := client.ObjectKey{Namespace: ns, Name: "crash-0"}
	workload, group := &schedulingv1beta1.Workload{}, &schedulingv1beta1.PodGroup{}
	require.NoError(t, k8s().Get(ctx, key, workload))
	require.NoError(t, k8s().Get(ctx, key, group))

	kubeBackend.Kill()
	kubeBackend, err = startBackend(cluster.Current, "kube-scheduler", "backend-controller-kube", "backend-controller-kube-3")
	require.NoError(t, err)
	// The window starts once the restarted controller leads and has gone through every PodGang.
	kubeBackend.WaitIdle(t, 2*time.Second, time.Minute)
	settled := time.Now()
	time.Sleep(15 * time.Second) // the observation window

	writes := backendWrites(t, ns, settled)
	for _, w := range writes {
		t.Logf("write at rest: %s %s %s/%s by %s", w.Verb, w.ObjectRef.Resource, w.ObjectRef.Subresource, w.ObjectRef.Name, w.User.Username)
	}
	assert.Empty(t, writes, "no backend-controller writes with nothing changing, also right after a restart")

	again := &schedulingv1beta1.PodGroup{}
	require.NoError(t, k8s().Get(ctx, key, again))
	assert.Equal(t, group.UID, again.UID, "a restart does not recreate the gang's PodGroup")
	againWorkload := &schedulingv1beta1.Workload{}
	require.NoError(t, k8s().Get(ctx, key, againWorkload))
	assert.Equal(t, workload.UID, againWorkload.UID, "nor its Workload")
	all := backendWrites(t, ns, time.Time{})
	t.Logf("backend-controller writes for two gangs (6 pods) across two kills: %d", len(all))
}
