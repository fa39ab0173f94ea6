package backendsintegration

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/coherent"
)

// midUpdate is a replica's PodGangMap halfway through a Coherent update: the bootstrap anchor
// and tail at the old revision, and the first step's anchor at the new one, which waits for the
// old anchor's gang.
var midUpdate = []coherent.Entry{
	{Epoch: "1000", PodCliqueSetGenerationHash: "old", Role: grovev1alpha1.PodGangRoleAnchor,
		PodCliques: map[string]int32{"router": 1}, PCSGReplicaIndices: map[string][]int32{"prefill": {1}}},
	{Epoch: "1001", PodCliqueSetGenerationHash: "old", Role: grovev1alpha1.PodGangRoleTail,
		PCSGReplicaIndices: map[string][]int32{"prefill": {2}}},
	{Epoch: "2000", PodCliqueSetGenerationHash: "new", Role: grovev1alpha1.PodGangRoleAnchor,
		PCSGReplicaIndices: map[string][]int32{"prefill": {0}}, DependsOn: []string{"1000"}},
}

// TestEveryBackendMakesTheSchedulerObjectsOfGangsNamedByEpoch creates, for each backend the
// backend-controller syncs here, PodGangs under the names and labels a replica's PodGangMap gives
// them mid-update (coherent.Gangs: epochs, roles, the revision; their pod groups laid out here as
// grove-operator lays them out): every gang, the update's new anchor as much as the bootstrap
// ones, gets its scheduler's gang object of its own name with its minimum — no backend depends on
// the names and labels of the other strategies' gangs. (How each scheduler then places a step's
// gang: the coherent e2e tier for kube-scheduler, KAI's stand-in and coscheduling, the kueue tier
// for Kueue; no Volcano scheduler runs here.)
func TestEveryBackendMakesTheSchedulerObjectsOfGangsNamedByEpoch(t *testing.T) {
	cases := []struct {
		backend configv1alpha1.SchedulerName
		labels  map[string]string
		prepare func(t *testing.T, ns string, pg *schedulerv1alpha1.PodGang)
		// minMember reads the scheduler's gang object of the PodGang's name.
		minMember func(ctx context.Context, key client.ObjectKey) (int32, error)
	}{
		{
			backend: configv1alpha1.SchedulerNameKAI,
			labels:  map[string]string{kaiv2alpha2.QueueLabel: "team-a"},
			minMember: func(ctx context.Context, key client.ObjectKey) (int32, error) {
				got := &kaiv2alpha2.PodGroup{}
				err := env.Client.Get(ctx, key, got)
				return ptr.Deref(got.Spec.MinMember, 0), err
			},
		},
		{
			backend: configv1alpha1.SchedulerNamePlugins,
			minMember: func(ctx context.Context, key client.ObjectKey) (int32, error) {
				got := &schedv1alpha1.PodGroup{}
				err := env.Client.Get(ctx, key, got)
				return got.Spec.MinMember, err
			},
		},
		{
			backend: configv1alpha1.SchedulerNameVolcano,
			prepare: func(t *testing.T, ns string, pg *schedulerv1alpha1.PodGang) {
				pg.Spec.SchedulerQueueName = "coherent-" + ns
			},
			minMember: func(ctx context.Context, key client.ObjectKey) (int32, error) {
				got := &volcanov1beta1.PodGroup{}
				err := env.Client.Get(ctx, key, got)
				return got.Spec.MinMember, err
			},
		},
	}
	for _, tc := range cases {
		t.Run(string(tc.backend), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			ns := newNamespace(t)
			if tc.backend == configv1alpha1.SchedulerNameVolcano {
				volcanoQueue(t, "coherent-"+ns, volcanov1beta1.QueueStateOpen)
			}
			gangs := coherent.Gangs("svc", 0, midUpdate)
			require.Len(t, gangs, 3, "two bootstrap gangs and the step's anchor")
			for _, g := range gangs {
				labels := map[string]string{
					grovev1alpha1.LabelEpoch:                      g.Entry.Epoch,
					grovev1alpha1.LabelPodGangRole:                string(g.Entry.Role),
					grovev1alpha1.LabelPodCliqueSetGenerationHash: g.Entry.PodCliqueSetGenerationHash,
				}
				for k, v := range tc.labels {
					labels[k] = v
				}
				pg := coherentGang(ns, g, tc.backend, labels)
				if tc.prepare != nil {
					tc.prepare(t, ns, pg)
				}
				require.NoError(t, env.Client.Create(ctx, pg), "PodGang %s", pg.Name)
				backendAcknowledged(t, pg)
				got, err := tc.minMember(ctx, client.ObjectKeyFromObject(pg))
				if assert.NoError(t, err, "the gang object of PodGang %s", pg.Name) {
					assert.Equal(t, pg.Spec.MinMember(), got, "the gang object of PodGang %s asks for its minimum", pg.Name)
				}
			}
		})
	}
}

// coherentGang is the PodGang of g with one pod group per standalone clique and per scaling-group
// replica's clique (a leader and two workers), as grove-operator lays them out.
func coherentGang(ns string, g coherent.Gang, backend configv1alpha1.SchedulerName, labels map[string]string) *schedulerv1alpha1.PodGang {
	pg := &schedulerv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: g.Name, Labels: labels}}
	pg.Labels[grovev1alpha1.LabelSchedulerName] = string(backend)
	for clique, n := range g.Standalone {
		pg.Spec.PodGroups = append(pg.Spec.PodGroups, schedulerv1alpha1.PodGroup{Name: "svc-0-" + clique, MinReplicas: n, PodReferences: []schedulerv1alpha1.NamespacedName{}})
	}
	for group, indices := range g.Groups {
		for _, i := range indices {
			prefix := "svc-0-" + group + "-" + strconv.Itoa(int(i))
			pg.Spec.PodGroups = append(pg.Spec.PodGroups,
				schedulerv1alpha1.PodGroup{Name: prefix + "-leader", MinReplicas: 1, PodReferences: []schedulerv1alpha1.NamespacedName{}},
				schedulerv1alpha1.PodGroup{Name: prefix + "-worker", MinReplicas: 2, PodReferences: []schedulerv1alpha1.NamespacedName{}})
		}
	}
	return pg
}
