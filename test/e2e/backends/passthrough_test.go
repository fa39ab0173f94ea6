package backendse2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends/passthrough"
	"github.com/kubegrove/grove/test/cluster"
)

// TestAnLPXWorkloadIsHandedToItsSchedulerAsItIs runs a PodCliqueSet whose cliques all name
// lpx-scheduler, as NVIDIA Dynamo's LPX deployments do, under upstream's lpx-scheduler profile:
// its backend-controller acknowledges the PodGang at once, makes no scheduler object, and the
// pods leave their gate naming lpx-scheduler. No LPX scheduler runs on this cluster, so they stay
// unbound: placing them is LPX's part.
func TestAnLPXWorkloadIsHandedToItsSchedulerAsItIs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := podCliqueSet(ns, "lpx", clique(ns, "frontend", 1, 0, "lpx-scheduler"), clique(ns, "worker", 2, 1, "lpx-scheduler"))
	require.NoError(t, k8s().Create(ctx, pcs))

	pg := &schedulerv1alpha1.PodGang{}
	require.Eventually(t, func() bool {
		if k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "lpx-0"}, pg) != nil {
			return false
		}
		c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady)
		return c != nil && c.Status == "True" && c.ObservedGeneration == pg.Generation
	}, time.Minute, 200*time.Millisecond, "the lpx backend-controller acknowledges the PodGang")
	assert.Equal(t, passthrough.ReasonPassThrough, meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionSchedulerBackendReady).Reason)
	assert.Equal(t, "lpx-scheduler", pg.Labels[grovev1alpha1.LabelSchedulerName])

	got := waitUngated(t, ns, "lpx", 3)
	for _, p := range got {
		assert.Equal(t, "lpx-scheduler", p.Spec.SchedulerName, p.Name)
		assert.Empty(t, p.Spec.NodeName, "%s: no LPX scheduler runs here, and no other scheduler takes the pod", p.Name)
		assert.NotEqual(t, corev1.PodRunning, p.Status.Phase)
	}
}
