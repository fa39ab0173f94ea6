package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// podGroupsOf lists the pod groups of a PodGang by name (nil when it does not exist).
func podGroupsOf(t *testing.T, ns, name string) []string {
	t.Helper()
	pg := &schedulerv1alpha1.PodGang{}
	if err := k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pg); err != nil {
		return nil
	}
	var out []string
	for _, g := range pg.Spec.PodGroups {
		out = append(out, g.Name)
	}
	return out
}

// A cache clique at 0 replicas that the frontend starts after: the workload runs without it (the
// cache is not in the gang, not breached, holds the frontend back for nothing), and scaled up
// the cache rejoins its gang and runs.
func TestAComponentAtZeroReplicasIsIdleAndRejoinsItsGangWhenScaledUp(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := &grovev1alpha1.PodCliqueSet{ObjectMeta: pcsMeta(ns, "idle"), Spec: grovev1alpha1.PodCliqueSetSpec{Replicas: 1,
		Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			StartupType: ptr.To(grovev1alpha1.CliqueStartupTypeExplicit),
			Cliques:     []*grovev1alpha1.PodCliqueTemplateSpec{clique("cache", 0), clique("frontend", 1, "cache")},
		}}}
	require.NoError(t, k8s().Create(ctx, pcs))

	waitRunning(t, ns, "idle", 1, 60*time.Second)
	require.Eventually(t, func() bool {
		return k8s().Get(ctx, client.ObjectKeyFromObject(pcs), pcs) == nil && pcs.Status.AvailableReplicas == 1
	}, 30*time.Second, 200*time.Millisecond, "the replica is available without the idle cache")
	assert.Equal(t, []string{"idle-0-frontend"}, podGroupsOf(t, ns, "idle-0"), "the idle cache has no pod group")
	cache := &grovev1alpha1.PodClique{}
	require.Eventually(t, func() bool {
		return k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "idle-0-cache"}, cache) == nil &&
			meta.FindStatusCondition(cache.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached) != nil
	}, 30*time.Second, 200*time.Millisecond)
	breached := meta.FindStatusCondition(cache.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
	assert.Equal(t, metav1.ConditionFalse, breached.Status)
	assert.Equal(t, grovev1alpha1.ReasonIdle, breached.Reason, breached.Message)

	update(t, pcs, func() { pcs.Spec.Template.Cliques[0].Spec.Replicas = 2 })
	waitRunning(t, ns, "idle", 3, 90*time.Second)
	assert.ElementsMatch(t, []string{"idle-0-cache", "idle-0-frontend"}, podGroupsOf(t, ns, "idle-0"), "scaled up, the cache is in its gang again")
	require.Eventually(t, func() bool {
		if k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "idle-0-cache"}, cache) != nil {
			return false
		}
		c := meta.FindStatusCondition(cache.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
		return c != nil && c.Reason == grovev1alpha1.ReasonSufficientReadyPods
	}, 30*time.Second, 200*time.Millisecond, "the cache counts its Ready pods again")
}
