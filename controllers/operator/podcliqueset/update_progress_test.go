package podcliqueset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// rolledClique is replica i's PodClique "worker" of PodCliqueSet "inf" at hash, its one pod
// replaced and Ready when rolledOut.
func rolledClique(i, hash string, rolledOut bool) *grovev1alpha1.PodClique {
	p := builders.PodClique("ns", "inf-"+i+"-worker").OfReplica("inf", i).Replicas(1, 1).GenerationHash(hash).Obj()
	p.Status.ObservedGeneration = ptr.To(p.Generation)
	p.Status.Replicas, p.Status.UpdatedReplicas = 1, 0
	if rolledOut {
		p.Status.UpdatedReplicas, p.Status.ReadyReplicas = 1, 1
	}
	return p
}

func TestUpdateProgressIsUpstreamsFromTheFirstStatusOn(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC))
	now := metav1.NewTime(t0.Add(time.Minute))
	pcsOf := func(strategy grovev1alpha1.UpdateStrategyType) *grovev1alpha1.PodCliqueSet {
		return builders.PodCliqueSet("ns", "inf").Replicas(2).Clique("worker", 1).UpdateStrategy(strategy).Obj()
	}
	newest := newRollout(pcsOf(grovev1alpha1.RollingRecreateStrategy)).hash
	cases := []struct {
		name         string
		strategy     grovev1alpha1.UpdateStrategyType
		recorded     *string
		progress     *grovev1alpha1.PodCliqueSetUpdateProgress
		cliques      []*grovev1alpha1.PodClique
		wantProgress *grovev1alpha1.PodCliqueSetUpdateProgress
		wantUpdating bool
	}{
		{"first status, children made from the newest template: no update", grovev1alpha1.RollingRecreateStrategy, nil, nil,
			[]*grovev1alpha1.PodClique{rolledClique("0", newest, true), rolledClique("1", newest, true)}, nil, false},
		{"first status, children made from an older template: the change since is an update", grovev1alpha1.RollingRecreateStrategy, nil, nil,
			[]*grovev1alpha1.PodClique{rolledClique("0", "old", true), rolledClique("1", "old", true)},
			&grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: now, TotalPodCliquesCount: 2, LastProgressedAt: &now}, true},
		{"OnDelete: the update ends at once, counts filled", grovev1alpha1.OnDeleteStrategy, ptr.To("old"), nil,
			[]*grovev1alpha1.PodClique{rolledClique("0", newest, true), rolledClique("1", "old", true)},
			&grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: now, UpdateEndedAt: &now, TotalPodCliquesCount: 2, UpdatedPodCliquesCount: 1}, false},
		{"rolling: the replica being replaced is listed, since when it started; one more PodClique done is progress", grovev1alpha1.RollingRecreateStrategy, &newest,
			&grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: t0, LastProgressedAt: &t0, CurrentlyUpdating: []grovev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: 1, UpdateStartedAt: t0}}},
			[]*grovev1alpha1.PodClique{rolledClique("0", newest, true), rolledClique("1", newest, false)},
			&grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: t0, TotalPodCliquesCount: 2, UpdatedPodCliquesCount: 1, LastProgressedAt: &now,
				CurrentlyUpdating: []grovev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: 1, UpdateStartedAt: t0}}}, true},
		{"rolling: nothing more done keeps the time of the last progress", grovev1alpha1.RollingRecreateStrategy, &newest,
			&grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: t0, LastProgressedAt: &t0, UpdatedPodCliquesCount: 1, CurrentlyUpdating: []grovev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: 1, UpdateStartedAt: t0}}},
			[]*grovev1alpha1.PodClique{rolledClique("0", newest, true), rolledClique("1", newest, false)},
			&grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: t0, TotalPodCliquesCount: 2, UpdatedPodCliquesCount: 1, LastProgressedAt: &t0,
				CurrentlyUpdating: []grovev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: 1, UpdateStartedAt: t0}}}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := pcsOf(tc.strategy)
			obs := emptyObserved()
			for _, c := range tc.cliques {
				obs.cliques[c.Name] = c
			}
			st := grovev1alpha1.PodCliqueSetStatus{CurrentGenerationHash: tc.recorded, UpdateProgress: tc.progress}
			if tc.progress == nil && tc.recorded != nil && tc.strategy == grovev1alpha1.RollingRecreateStrategy {
				st.UpdatedReplicas = 1
			}
			trackUpdate(pcs, &st, newRollout(pcs), obs, now, nil)
			require.NotNil(t, st.CurrentGenerationHash)
			assert.Equal(t, newest, *st.CurrentGenerationHash)
			assert.Equal(t, tc.wantProgress, st.UpdateProgress)
			c := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionUpdateInProgress)
			require.NotNil(t, c)
			assert.Equal(t, tc.wantUpdating, c.Status == metav1.ConditionTrue, c.Message)
		})
	}
}

func TestAnIdleCliqueIsRolledOutWithNothingReady(t *testing.T) {
	idle := builders.PodClique("ns", "inf-0-cache").Replicas(0, 1).Obj()
	idle.Status.ObservedGeneration = ptr.To(idle.Generation)
	assert.True(t, cliqueRolledOut(idle), "a rolling update passes an idle clique")
	starting := rolledClique("0", "h", false)
	assert.False(t, cliqueRolledOut(starting))
}

func TestUpdateInProgressAggregatesTheChildren(t *testing.T) {
	withCondition := func(p *grovev1alpha1.PodClique, status metav1.ConditionStatus) *grovev1alpha1.PodClique {
		meta.SetStatusCondition(&p.Status.Conditions, metav1.Condition{Type: grovev1alpha1.ConditionUpdateInProgress, Status: status, Reason: "r"})
		return p
	}
	member := builders.PodClique("ns", "inf-0-g-0-m").OfReplica("inf", "0").OfGroupReplica("inf-0-g", "0").Obj()
	for _, tc := range []struct {
		name        string
		inProgress  bool
		cliques     []*grovev1alpha1.PodClique
		group       metav1.ConditionStatus
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
	}{
		{name: "nothing rolls", cliques: []*grovev1alpha1.PodClique{withCondition(rolledClique("0", "h", true), metav1.ConditionFalse)},
			wantStatus: metav1.ConditionFalse, wantReason: grovev1alpha1.ReasonNoActiveUpdate, wantMessage: "No rolling update is in progress"},
		{name: "the PodCliqueSet's update runs", inProgress: true,
			wantStatus: metav1.ConditionTrue, wantReason: grovev1alpha1.ReasonProgressing, wantMessage: "Rolling update is in progress"},
		{name: "a child still rolls", cliques: []*grovev1alpha1.PodClique{withCondition(rolledClique("0", "h", true), metav1.ConditionTrue)},
			wantStatus: metav1.ConditionTrue, wantReason: grovev1alpha1.ReasonProgressing, wantMessage: "Rolling update is in progress"},
		{name: "a standalone clique and a group past their deadline", inProgress: true,
			cliques: []*grovev1alpha1.PodClique{withCondition(rolledClique("0", "h", true), metav1.ConditionUnknown), withCondition(rolledClique("1", "h", true), metav1.ConditionTrue)},
			group:   metav1.ConditionUnknown, wantStatus: metav1.ConditionUnknown, wantReason: grovev1alpha1.ReasonProgressDeadlineExceeded,
			wantMessage: "1/2 PodCliques stuck, 1/1 PodCliqueScalingGroups stuck"},
		{name: "a scaling group's member is the group's business", cliques: []*grovev1alpha1.PodClique{withCondition(member, metav1.ConditionUnknown)},
			wantStatus: metav1.ConditionFalse, wantReason: grovev1alpha1.ReasonNoActiveUpdate, wantMessage: "No rolling update is in progress"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pcs := builders.PodCliqueSet("ns", "inf").Replicas(2).Clique("worker", 1).Obj()
			obs := emptyObserved()
			for _, c := range tc.cliques {
				obs.cliques[c.Name] = c
			}
			if tc.group != "" {
				g := builders.PodCliqueScalingGroup("ns", "inf-0-g", "m").Obj()
				meta.SetStatusCondition(&g.Status.Conditions, metav1.Condition{Type: grovev1alpha1.ConditionUpdateInProgress, Status: tc.group, Reason: "r"})
				obs.groups[g.Name] = g
			}

			c := updateCondition(pcs, obs, tc.inProgress)

			assert.Equal(t, tc.wantStatus, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Equal(t, tc.wantMessage, c.Message)
		})
	}
}
