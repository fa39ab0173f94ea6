package compatintegration

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kaiv2 "github.com/kubegrove/grove/apis/kai/v2"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
)

// The KAI types are local copies whose CRDs the local cluster installs (config/thirdparty/kai,
// generated from them); writing every field through those CRDs with strict field validation and
// reading it back unchanged proves the markers keep every field the backend writes. That the
// generated CRDs match KAI's published ones is the upstream corpus tier's check
// (config/thirdparty).
func TestKAILocalTypesRoundTripThroughTheInstalledCRDs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)

	queue := &kaiv2.Queue{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-queue"},
		Spec: kaiv2.QueueSpec{
			DisplayName: "team", ParentQueue: "root", Priority: ptr.To(10),
			PreemptMinRuntime: ptr.To("5m"), ReclaimMinRuntime: ptr.To("10m"),
			Resources: &kaiv2.QueueResources{
				CPU:    &kaiv2.ResourceQuota{Quota: -1, Limit: -1, OverQuotaWeight: 1},
				GPU:    &kaiv2.ResourceQuota{Quota: 8, Limit: 16, OverQuotaWeight: 2},
				Memory: &kaiv2.ResourceQuota{Quota: 0, Limit: -1, OverQuotaWeight: 1},
			},
		},
	}
	require.NoError(t, env.Client.Create(ctx, queue, client.FieldValidation(metav1.FieldValidationStrict)))
	gotQueue := &kaiv2.Queue{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(queue), gotQueue))
	assert.Equal(t, queue.Spec, gotQueue.Spec)

	topology := &kaiv2alpha2.TopologyConstraint{Topology: "grove-topology", RequiredTopologyLevel: "topology.kubernetes.io/rack", PreferredTopologyLevel: "kubernetes.io/hostname"}
	pg := &kaiv2alpha2.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "gang", Namespace: ns},
		Spec: kaiv2alpha2.PodGroupSpec{
			MinSubGroup: ptr.To[int32](2), Queue: queue.Name, PriorityClassName: "high",
			Preemptibility: "non-preemptible", MarkUnschedulable: ptr.To(true), SchedulingBackoff: ptr.To[int32](1),
			TopologyConstraint: topology,
			SubGroups: []kaiv2alpha2.SubGroup{
				{Name: "prefill", MinSubGroup: ptr.To[int32](1)},
				{Name: "prefill-0-leader", Parent: ptr.To("prefill"), MinMember: ptr.To[int32](1), TopologyConstraint: topology},
				{Name: "router", MinMember: ptr.To[int32](1)},
			},
		},
	}
	require.NoError(t, env.Client.Create(ctx, pg, client.FieldValidation(metav1.FieldValidationStrict)))
	gotPG := &kaiv2alpha2.PodGroup{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(pg), gotPG))
	assert.Equal(t, pg.Spec, gotPG.Spec)

	bad := pg.DeepCopy()
	bad.Name = "bad"
	bad.ResourceVersion = ""
	bad.Spec.SubGroups[0].Name = "Not_A_Label"
	err := env.Client.Create(ctx, bad)
	require.Error(t, err, "KAI's schema validates subgroup names; our types must reach it")
	assert.Contains(t, err.Error(), "spec.subGroups[0].name")
}
