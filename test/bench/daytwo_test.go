package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

func TestBestPeerIsTheFastestAndLeanestOfThePeersARivalIsJudgedAgainst(t *testing.T) {
	rivals := []rival{{name: "ours"}, {name: "ours via TrainJob", against: []string{"kubeflow"}}, {name: "jobset", peer: true}, {name: "kubeflow", peer: true}}
	runs := []DayTwo{{Seconds: 5, WritesPerPod: 9}, {Seconds: 6, WritesPerPod: 9}, {Seconds: 10, WritesPerPod: 2}, {Seconds: 12, WritesPerPod: 3}}
	for _, tc := range []struct {
		name                  string
		rival                 rival
		seconds, writesPerPod float64
	}{
		{"every peer: the lowest time and the lowest writes, each of its own peer", rivals[0], 10, 2},
		{"only the peers named", rivals[1], 12, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			seconds, writes := bestPeer(runs, rivals, tc.rival)
			assert.Equal(t, tc.seconds, seconds)
			assert.Equal(t, tc.writesPerPod, writes)
		})
	}
}

func TestRolloutGroupsShapeIsGroupsOnlyForEveryContender(t *testing.T) {
	s := rolloutShape{Prefill: 3, Workers: 9}
	comps := s.components()
	require.Len(t, comps, 1, "no frontend and no decode")
	assert.Equal(t, rolloutComponent{Name: "prefill", Units: 3, UnitPods: 10, MaxUnavailable: rolloutBudget}, comps[0])
	assert.Equal(t, 30, s.pods())
	assert.Equal(t, "3 groups × 10 pods", s.String())

	p := rolloutPCS("ns", s, grovev1alpha1.RollingRecreateStrategy)
	require.Len(t, p.Spec.Template.PodCliqueScalingGroupConfigs, 1)
	assert.EqualValues(t, 3, *p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas)
	var cliques []string
	for _, c := range p.Spec.Template.Cliques {
		cliques = append(cliques, c.Name)
	}
	assert.Equal(t, []string{"pleader", "pworker"}, cliques)

	b := &bench{}
	for _, c := range b.rolloutContenders() {
		if !c.peer {
			continue
		}
		objs := c.objs("ns", s)
		require.Len(t, objs, 1, "one LeaderWorkerSet and no Deployment")
		_, isDeployment := objs[0].(*appsv1.Deployment)
		assert.False(t, isDeployment)
		u := objs[0].(*unstructured.Unstructured)
		replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		size, _, _ := unstructured.NestedInt64(u.Object, "spec", "leaderWorkerTemplate", "size")
		assert.Equal(t, int64(s.pods()), replicas*size)
	}
}

func TestRolloutTargetsWithoutThePeerAreMissed(t *testing.T) {
	b := &bench{r: &Report{}}
	b.rolloutTargets([]Rollout{{Shape: "s", Contender: string(grovev1alpha1.RollingRecreateStrategy), Seconds: 100}}, true)
	require.NotEmpty(t, b.r.Targets)
	assert.Equal(t, 1, b.r.Missed, "no LeaderWorkerSet run: the comparison is missed, not met")
}

func TestRolloutTargetsHoldThisProjectToLeaderWorkerSetOnTheGroupsShape(t *testing.T) {
	runs := func() []Rollout {
		return []Rollout{
			{Shape: "s", Contender: string(grovev1alpha1.RollingRecreateStrategy), Seconds: 100, WritesPerPod: 4},
			{Shape: "s", Contender: string(grovev1alpha1.CoherentStrategy), Seconds: 120, WritesPerPod: 6, BelowBudget: 1},
			{Shape: "s", Contender: lwsRolloutName, Peer: true, Seconds: 110, WritesPerPod: 5, BelowBudget: 2},
		}
	}
	for _, tc := range []struct {
		name        string
		againstPeer bool
		missed      []string
	}{
		{"disaggregated shape: budgets and Coherent against RollingRecreate", false,
			[]string{"rollout s Coherent: components below budget = 0"}},
		{"groups shape: also time and writes against the peer", true,
			[]string{"rollout s Coherent: components below budget = 0", "rollout s Coherent: time ≤ 1.0× LeaderWorkerSet's", "rollout s Coherent: writes per pod ≤ LeaderWorkerSet's"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &bench{r: &Report{}}
			rs := runs()
			b.rolloutTargets(rs, tc.againstPeer)
			var missed []string
			for _, target := range b.r.Targets {
				if !target.Met {
					missed = append(missed, target.Name)
				}
				assert.NotContains(t, target.Name, lwsRolloutName, "the peer is held to no target")
			}
			assert.Equal(t, tc.missed, missed)
			coherentToRR := 0
			for _, target := range b.r.Targets {
				if strings.Contains(target.Name, "RollingRecreate's") {
					coherentToRR++
				}
			}
			assert.Equal(t, map[bool]int{false: 1, true: 0}[tc.againstPeer], coherentToRR, "Coherent is held to RollingRecreate on the disaggregated shape only")
			assert.InDelta(t, 1.2, rs[1].Ratio, 1e-9, "Coherent to RollingRecreate")
			assert.InDelta(t, 100.0/110, rs[0].PeerRatio, 1e-9, "RollingRecreate to the peer")
		})
	}
}

func TestAFailedPodIsNoLongerReady(t *testing.T) {
	now := metav1.Now()
	conds := readyFalse([]corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
		{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
	}, now)
	status := map[corev1.PodConditionType]corev1.ConditionStatus{}
	for _, c := range conds {
		status[c.Type] = c.Status
	}
	assert.Equal(t, map[corev1.PodConditionType]corev1.ConditionStatus{
		corev1.PodScheduled: corev1.ConditionTrue, corev1.PodReady: corev1.ConditionFalse, corev1.ContainersReady: corev1.ConditionFalse,
	}, status)
}

func TestARivalRunInRoundsCountsItsMedianRound(t *testing.T) {
	round := func(sec float64, writes int) DayTwo { return DayTwo{Seconds: sec, Writes: writes} }
	for _, tc := range []struct {
		name         string
		rounds       []DayTwo
		seconds      float64
		writes       int
		roundSeconds []float64
	}{
		{"one round is itself, with no list of rounds", []DayTwo{round(20, 100)}, 20, 100, nil},
		{"three rounds: the middle time, with that round's writes", []DayTwo{round(30, 300), round(18, 180), round(22, 220)}, 22, 220, []float64{30, 18, 22}},
		{"two rounds: the faster, so an even count never picks a round that did not happen", []DayTwo{round(25, 250), round(21, 210)}, 21, 210, []float64{25, 21}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := medianRound(tc.rounds)
			assert.Equal(t, tc.seconds, run.Seconds)
			assert.Equal(t, tc.writes, run.Writes)
			assert.Equal(t, tc.roundSeconds, run.RoundSeconds)
		})
	}
}

func TestEveryRecoveryAndScaleOutRivalIsTimedFromItsTrigger(t *testing.T) {
	b := &bench{}
	for _, f := range []family{b.recovery(1000, 3), b.scaleOut(100, 10, 3)} {
		for _, rv := range f.rivals {
			assert.NotNil(t, rv.trigger, "%s %s: with no trigger its creates are timed, not the change", f.id, rv.name)
		}
	}
	for name, sz := range map[string]sizes{"full": full, "smoke": smoke} {
		assert.GreaterOrEqual(t, sz.ScaleRounds, 2, "%s: a median needs rounds, and the rotation runs in every run, smoke included", name)
	}
}

func TestEveryRecoveryWorkloadOutlastsItsFailure(t *testing.T) {
	pcs := recoveryPCS("ns", 10)
	require.NotNil(t, pcs.Spec.TrainingSpec)
	assert.GreaterOrEqual(t, *pcs.Spec.TrainingSpec.MaxRestarts, int32(1), "the Training PodCliqueSet would fail instead of restarting")
	js := recoveryJobSet("ns", 10)
	require.NotNil(t, js.Spec.FailurePolicy)
	assert.GreaterOrEqual(t, js.Spec.FailurePolicy.MaxRestarts, int32(1), "the JobSet would fail instead of restarting")
	for _, kind := range []trainerv1alpha1.WorkloadKind{trainerv1alpha1.WorkloadKindPodCliqueSet, trainerv1alpha1.WorkloadKindJobSet} {
		rt := recoveryRuntime("ns", kind)
		require.NotNil(t, rt.Spec.Template.Spec.FailurePolicy, kind)
		assert.GreaterOrEqual(t, rt.Spec.Template.Spec.FailurePolicy.MaxRestarts, int32(1), "the %s runtime's TrainJob would fail instead of restarting", kind)
	}
	for name, sz := range map[string]sizes{"full": full, "smoke": smoke} {
		assert.GreaterOrEqual(t, sz.RecoveryRounds, 2, "%s: a median needs rounds, and the rotation runs in every run, smoke included", name)
	}
}

func TestTakingTurnsGivesEachRivalItsMedianRoundUnderItsOwnName(t *testing.T) {
	f := family{id: "recovery", rounds: 3, rivals: []rival{{name: "peer", peer: true}, {name: "ours"}}}
	seconds := map[string]float64{ // by namespace: ours is slowest in round 1, fastest in round 3
		"recovery-0-r1": 30, "recovery-1-r1": 40,
		"recovery-1-r2": 35, "recovery-0-r2": 31,
		"recovery-0-r3": 29, "recovery-1-r3": 20,
	}
	var ran []string
	runOne := func(_ context.Context, ns string, _ family, rv rival) (DayTwo, error) {
		ran = append(ran, ns)
		return DayTwo{Contender: rv.name, Seconds: seconds[ns], Writes: int(seconds[ns])}, nil
	}
	runs, err := takeTurns(context.Background(), f, runOne)
	require.NoError(t, err)
	assert.Equal(t, []string{"recovery-0-r1", "recovery-1-r1", "recovery-1-r2", "recovery-0-r2", "recovery-0-r3", "recovery-1-r3"}, ran)
	require.Len(t, runs, 2)
	assert.Equal(t, "peer", runs[0].Contender)
	assert.Equal(t, 30.0, runs[0].Seconds)
	assert.Equal(t, []float64{30, 31, 29}, runs[0].RoundSeconds, "every round's time, in the order the rounds ran")
	assert.Equal(t, "ours", runs[1].Contender, "not the turn's label")
	assert.Equal(t, 35.0, runs[1].Seconds)
	assert.Equal(t, 35, runs[1].Writes, "the median round's writes with its time")
	assert.Equal(t, []float64{40, 35, 20}, runs[1].RoundSeconds)
}

func TestTakingTurnsStopsAtAFailedTurn(t *testing.T) {
	f := family{id: "recovery", rounds: 2, rivals: []rival{{name: "a"}, {name: "b"}}}
	calls := 0
	_, err := takeTurns(context.Background(), f, func(_ context.Context, ns string, _ family, rv rival) (DayTwo, error) {
		calls++
		if ns == "recovery-1-r1" {
			return DayTwo{}, errors.New("pods not Running")
		}
		return DayTwo{Contender: rv.name, Seconds: 1}, nil
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "b (round 1 of 2)", "the error names the rival and the round")
	assert.Equal(t, 2, calls, "no turn runs after a failed one: its namespace is kept for its logs")
}

func TestTurnsGiveEveryRivalEachRoundANamespaceOfItsOwn(t *testing.T) {
	f := family{id: "recovery", rounds: 3, rivals: []rival{{name: "a"}, {name: "b"}, {name: "c"}}}
	got := turnSchedule(f)
	var order []int
	namespaces := map[string]bool{}
	perRival := map[int]int{}
	for _, tr := range got {
		order = append(order, tr.rival)
		assert.False(t, namespaces[tr.namespace], "namespace %s used twice: a round would find the last one's pods", tr.namespace)
		namespaces[tr.namespace] = true
		perRival[tr.rival]++
	}
	assert.Equal(t, []int{0, 1, 2, 1, 2, 0, 2, 0, 1}, order, "each round starts one rival later")
	assert.Equal(t, map[int]int{0: 3, 1: 3, 2: 3}, perRival)
	assert.Equal(t, "recovery-1-r2", got[3].namespace)
	assert.Equal(t, "b (round 2 of 3)", got[3].label)
}

func TestTurnsWithoutRoundsRunEachRivalOnce(t *testing.T) {
	f := family{id: "x", rivals: []rival{{name: "a"}, {name: "b"}}}
	got := turnSchedule(f)
	assert.Len(t, got, 2)
	assert.Equal(t, 0, got[0].rival)
	assert.Equal(t, 1, got[1].rival)
	assert.Equal(t, "a", got[0].label, "no round in the label when there is one")
}

func TestRolloutRoundsRotateWhoGoesFirst(t *testing.T) {
	cases := []struct {
		name     string
		n, round int
		want     []int
	}{
		{"the first round in the contenders' order", 3, 1, []int{0, 1, 2}},
		{"the second starts with the second", 3, 2, []int{1, 2, 0}},
		{"the third with the third", 3, 3, []int{2, 0, 1}},
		{"the fourth wraps to the first", 3, 4, []int{0, 1, 2}},
		{"one contender always goes alone", 1, 2, []int{0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, turnOrder(tc.n, tc.round))
		})
	}
}
