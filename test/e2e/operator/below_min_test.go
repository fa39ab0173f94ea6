package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// TestAScalingGroupScaledBelowItsMinAvailableRunsWhatItHas is upstream's RS-1 step 8: a group
// with minAvailable 2 patched from 2 replicas to 1 is admitted, runs one replica, and is neither
// breached nor gang-terminated (its effective minAvailable is the count it has).
func TestAScalingGroupScaledBelowItsMinAvailableRunsWhatItHas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := builders.PodCliqueSet(ns, "rs1").Clique("worker-a", 1).Clique("worker-b", 1).
		ScalingGroup("sga", 2, 2, "worker-b").TerminationDelay(metav1.Duration{Duration: 5 * time.Second}).Obj()
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "rs1", 3, 2*time.Minute)
	before := cliqueUIDs(t, ns, "rs1")

	group := &grovev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: grovev1alpha1.PodCliqueScalingGroupName("rs1", 0, "sga")}}
	patch := client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":1}}`))
	require.NoError(t, k8s().Patch(ctx, group, patch), "scaling below minAvailable is admitted, as upstream admits it")

	waitRunning(t, ns, "rs1", 2, time.Minute)
	require.Eventually(t, func() bool {
		if k8s().Get(ctx, client.ObjectKeyFromObject(group), group) != nil || group.Status.Replicas != 1 {
			return false
		}
		c := meta.FindStatusCondition(group.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
		return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == group.Generation
	}, time.Minute, 200*time.Millisecond, "the group runs one replica and is not breached")
	assert.Never(t, func() bool {
		after := cliqueUIDs(t, ns, "rs1")
		return after[grovev1alpha1.PodCliqueName("rs1", 0, "worker-a")] != before[grovev1alpha1.PodCliqueName("rs1", 0, "worker-a")]
	}, 10*time.Second, 500*time.Millisecond, "nothing is gang-terminated past the 5 s delay")
}
