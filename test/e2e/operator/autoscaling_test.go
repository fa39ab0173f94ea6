package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

func TestAutoscalersTargetCliquesAndGroupsAndTheirReplicasStick(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := disaggregated(ns, "hpa", 1)
	pcs.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovev1alpha1.AutoScalingConfig{MaxReplicas: 4}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig = &grovev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 3}
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "hpa", 4, 2*time.Minute)

	for name, want := range map[string]autoscalingv2.CrossVersionObjectReference{
		"hpa-0-router":  {APIVersion: "grove.io/v1alpha1", Kind: "PodClique", Name: "hpa-0-router"},
		"hpa-0-prefill": {APIVersion: "grove.io/v1alpha1", Kind: "PodCliqueScalingGroup", Name: "hpa-0-prefill"},
	} {
		hpa := &autoscalingv2.HorizontalPodAutoscaler{}
		require.Eventually(t, func() bool {
			return k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, hpa) == nil
		}, 30*time.Second, 200*time.Millisecond, name)
		assert.Equal(t, want, hpa.Spec.ScaleTargetRef)
	}
	router := &autoscalingv2.HorizontalPodAutoscaler{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "hpa-0-router"}, router))
	assert.Equal(t, ptr.To[int32](1), router.Spec.MinReplicas, "minReplicas defaults to minAvailable")
	assert.Equal(t, int32(4), router.Spec.MaxReplicas)
	require.Len(t, router.Spec.Metrics, 1, "80% CPU by default")

	// What an autoscaler does — scaling the targets — sticks, also across template edits.
	scale(t, &grovev1alpha1.PodClique{ObjectMeta: pcsMeta(ns, "hpa-0-router")}, 3)
	scale(t, &grovev1alpha1.PodCliqueScalingGroup{ObjectMeta: pcsMeta(ns, "hpa-0-prefill")}, 2)
	waitRunning(t, ns, "hpa", 9, 2*time.Minute)
	update(t, pcs, func() { pcs.Spec.Template.Cliques[0].Labels = map[string]string{"tier": "front"} })
	got := &grovev1alpha1.PodClique{}
	require.Eventually(t, func() bool {
		return k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "hpa-0-router"}, got) == nil && got.Labels["tier"] == "front"
	}, time.Minute, 200*time.Millisecond, "the template edit reaches the PodClique")
	assert.Equal(t, int32(3), got.Spec.Replicas, "the autoscaler's replicas survive the template edit")
	waitRunning(t, ns, "hpa", 9, 2*time.Minute)
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "hpa-0-router"}, got))
	assert.Equal(t, int32(3), got.Spec.Replicas)
}
