package main

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

func TestTargetsCountWhatIsMissed(t *testing.T) {
	for _, tc := range []struct {
		name         string
		value, limit float64
		met          bool
	}{
		{"ratio under the limit", 1.16, 1.3, true},
		{"ratio at the limit", 1.3, 1.3, true},
		{"ratio over the limit", 4.2, 1.3, false},
		{"zero means exactly zero", 0, 0, true},
		{"one write at rest misses", 1, 0, false},
		{"CPU < 1% is strict", 1, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{}
			if tc.name == "CPU < 1% is strict" {
				r.targetBelow(tc.name, tc.value, tc.limit)
			} else {
				r.target(tc.name, tc.value, tc.limit)
			}
			require.Len(t, r.Targets, 1)
			assert.Equal(t, tc.met, r.Targets[0].Met)
			assert.Equal(t, map[bool]int{true: 0, false: 1}[tc.met], r.Missed)
		})
	}
}

func TestPhasesWaitForEveryPodAndTakeTheSlowest(t *testing.T) {
	begin := time.Now()
	at := func(ms int) time.Time { return begin.Add(time.Duration(ms) * time.Millisecond) }
	w := &podWatch{pods: map[string]*podTimes{
		"a": {ns: "s1", seen: at(10), ungated: at(50), running: at(90)},
		"b": {ns: "s1", seen: at(30), ungated: at(40), running: at(120)},
		"c": {ns: "other", seen: at(1), ungated: at(2), running: at(999)},
		"d": {ns: "s1", seen: begin.Add(-time.Second), ungated: at(0), running: at(0)}, // before the scenario
	}}
	ph, ok := w.phases("s1", 2, begin)
	require.True(t, ok)
	assert.Equal(t, 30*time.Millisecond, ph.Created)
	assert.Equal(t, 50*time.Millisecond, ph.Ungated)
	assert.Equal(t, 120*time.Millisecond, ph.Running)

	_, ok = w.phases("s1", 3, begin)
	assert.False(t, ok, "a pod not yet seen keeps the scenario open")
	w.pods["e"] = &podTimes{ns: "s1", seen: at(60)}
	_, ok = w.phases("s1", 3, begin)
	assert.False(t, ok, "a gated pod keeps the scenario open")
}

func TestProcUsageReadsThisProcess(t *testing.T) {
	u, err := procUsage(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, u.PeakRSSMiB)
	assert.GreaterOrEqual(t, u.PeakRSSMiB, u.RSSMiB*0.99)
	assert.GreaterOrEqual(t, u.CPUSeconds, 0.0)
}

func TestMedianIsTheMiddleRound(t *testing.T) {
	for _, tc := range []struct {
		name string
		xs   []float64
		want float64
	}{
		{"one round", []float64{1.4}, 1.4},
		{"odd count, unsorted", []float64{1.42, 0.95, 1.18}, 1.18},
		{"even count: mean of the middle two", []float64{2, 1, 4, 3}, 2.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			xs := append([]float64(nil), tc.xs...)
			assert.InDelta(t, tc.want, median(tc.xs), 1e-9)
			assert.Equal(t, xs, tc.xs, "the rounds keep their order")
		})
	}
}

func TestRolloutCapacityCountsReadyPodsAndWholeGroups(t *testing.T) {
	comps := rolloutShape{Frontend: 3, Prefill: 2, Decode: 2, Workers: 1}.components()
	pod := func(component, group string, ready bool) podState {
		return podState{component: component, group: group, ready: ready}
	}
	for _, tc := range []struct {
		name string
		pods []podState
		want map[string]readyCapacity
	}{
		{"everything Ready: every unit available", []podState{
			pod("frontend", "", true), pod("frontend", "", true), pod("frontend", "", true),
			pod("prefill", "0", true), pod("prefill", "0", true), pod("prefill", "1", true), pod("prefill", "1", true),
			pod("decode", "0", true), pod("decode", "0", true), pod("decode", "1", true), pod("decode", "1", true),
		}, map[string]readyCapacity{"frontend": {3, 3}, "prefill": {4, 2}, "decode": {4, 2}}},
		{"a group with one pod not Ready is unavailable, its other pod still counts", []podState{
			pod("prefill", "0", true), pod("prefill", "0", false), pod("prefill", "1", true), pod("prefill", "1", true),
		}, map[string]readyCapacity{"frontend": {}, "prefill": {3, 1}, "decode": {}}},
		{"a half-replaced group is not whole until its new pods are Ready", []podState{
			pod("decode", "0", true), pod("decode", "1", true),
		}, map[string]readyCapacity{"frontend": {}, "prefill": {}, "decode": {2, 0}}},
		{"a new leader beside its old workers is no group", []podState{
			{component: "prefill", group: "0", ready: true, revision: "2"}, pod("prefill", "0", true),
			pod("prefill", "1", true), pod("prefill", "1", true),
		}, map[string]readyCapacity{"frontend": {}, "prefill": {4, 1}, "decode": {}}},
		{"a frontend pod not Ready costs one unit", []podState{
			pod("frontend", "", true), pod("frontend", "", false), pod("frontend", "", true),
		}, map[string]readyCapacity{"frontend": {2, 2}, "prefill": {}, "decode": {}}},
		{"pods of no component are ignored", []podState{pod("", "", true), pod("other", "0", true)},
			map[string]readyCapacity{"frontend": {}, "prefill": {}, "decode": {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, capacity(tc.pods, comps))
		})
	}
}

func TestRolloutIsDoneWhenEveryPodIsNewAndReadyAndNoOldOneIsLeft(t *testing.T) {
	for _, tc := range []struct {
		name string
		pods []podState
		done bool
	}{
		{"every pod new and Ready", []podState{{ready: true, revision: "2"}, {ready: true, revision: "2"}}, true},
		{"a new pod not Ready yet", []podState{{ready: true, revision: "2"}, {revision: "2"}}, false},
		{"an old pod left", []podState{{ready: true, revision: "2"}, {ready: true, revision: "1"}}, false},
		{"an old pod still terminating beside all new ones", []podState{{ready: true, revision: "2"}, {ready: true, revision: "2"}, {revision: "1"}}, false},
		{"a pod missing", []podState{{ready: true, revision: "2"}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.done, rolledOut(tc.pods, 2, "2"))
		})
	}
}

func TestRolloutBudgetCountsComponentsBelowTheirFloor(t *testing.T) {
	comps := rolloutShape{Frontend: 4, Prefill: 6, Decode: 4, Workers: 4}.components()
	for _, tc := range []struct {
		name   string
		lowest map[string]readyCapacity
		below  int
	}{
		{"every component at its floor", map[string]readyCapacity{"frontend": {3, 3}, "prefill": {25, 5}, "decode": {15, 3}}, 0},
		{"groups down to floor units but fewer pods: units decide", map[string]readyCapacity{"frontend": {3, 3}, "prefill": {20, 5}, "decode": {10, 3}}, 0},
		{"two decode groups down at once", map[string]readyCapacity{"frontend": {4, 4}, "prefill": {30, 6}, "decode": {10, 2}}, 1},
		{"all below", map[string]readyCapacity{"frontend": {2, 2}, "prefill": {0, 0}, "decode": {0, 0}}, 3},
		{"a component never seen counts as none available", map[string]readyCapacity{"frontend": {4, 4}, "prefill": {30, 6}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.below, belowBudget(tc.lowest, comps))
		})
	}
}

func TestRolloutShapeIsTheSamePodsForEveryContender(t *testing.T) {
	s := rolloutShape{Frontend: 4, Prefill: 6, Decode: 4, Workers: 4}
	assert.Equal(t, 4+6*5+4*5, s.pods())
	p := rolloutPCS("ns", s, grovev1alpha1.CoherentStrategy)
	pods := 0
	for _, c := range p.Spec.Template.Cliques {
		n := int(c.Spec.Replicas)
		for _, g := range p.Spec.Template.PodCliqueScalingGroupConfigs {
			if slices.Contains(g.CliqueNames, c.Name) {
				n *= int(*g.Replicas)
				assert.Equal(t, int32(rolloutBudget), *g.RollingUpdate.MaxUnavailable, "group %s budget", g.Name)
			}
		}
		pods += n
	}
	assert.Equal(t, s.pods(), pods, "the PodCliqueSet's pods")
	lwsPods := int64(0)
	for _, name := range []string{"prefill", "decode"} {
		groups := map[string]int{"prefill": s.Prefill, "decode": s.Decode}[name]
		u := rolloutLWS("ns", name, groups, 1+s.Workers)
		replicas, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
		size, _, _ := unstructured.NestedInt64(u.Object, "spec", "leaderWorkerTemplate", "size")
		maxUnavailable, _, _ := unstructured.NestedInt64(u.Object, "spec", "rolloutStrategy", "rollingUpdateConfiguration", "maxUnavailable")
		assert.EqualValues(t, rolloutBudget, maxUnavailable)
		lwsPods += replicas * size
	}
	d := rolloutDeployment("ns", s.Frontend)
	assert.Equal(t, s.pods(), int(lwsPods)+int(*d.Spec.Replicas), "the LeaderWorkerSets' and the Deployment's pods")
	assert.Equal(t, rolloutBudget, d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue())
}

func TestPodStateReadsComponentGroupReadinessAndRevision(t *testing.T) {
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want podState
	}{
		{"a grove group pod at a revision", corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelRolloutComponent: "prefill", grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex: "3"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Env: []corev1.EnvVar{{Name: "X", Value: "y"}, {Name: rolloutEnv, Value: "7"}}}}},
			Status:     corev1.PodStatus{Conditions: ready},
		}, podState{component: "prefill", group: "3", ready: true, revision: "7"}},
		{"a LeaderWorkerSet pod before the change", corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelRolloutComponent: "decode", lwsGroupIndex: "1"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{}}},
			Status:     corev1.PodStatus{Conditions: ready},
		}, podState{component: "decode", group: "1", ready: true}},
		{"a terminating pod is not Ready", corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelRolloutComponent: "frontend"}, DeletionTimestamp: &now},
			Status:     corev1.PodStatus{Conditions: ready},
		}, podState{component: "frontend"}},
		{"a pod without the Ready condition", corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{labelRolloutComponent: "frontend"}},
		}, podState{component: "frontend"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, podStateOf(&tc.pod))
		})
	}
}

func TestRolloutProbeKeepsTheLowestCapacityFromTheChangeToTheEnd(t *testing.T) {
	comps := rolloutShape{Frontend: 2}.components()
	p := &rolloutProbe{comps: comps, want: 2, pods: map[types.UID]podState{}}
	pod := func(uid, revision string, ready bool) *corev1.Pod {
		pd := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Labels: map[string]string{labelRolloutComponent: "frontend"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{}}}}
		if revision != "" {
			pd.Spec.Containers[0].Env = []corev1.EnvVar{{Name: rolloutEnv, Value: revision}}
		}
		if ready {
			pd.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return pd
	}
	p.observe(pod("a", "", false), false)
	p.observe(pod("b", "", true), false)
	p.observe(pod("a", "", true), false)
	lowest, events := p.result()
	assert.Nil(t, lowest, "nothing is counted before the change")
	assert.Zero(t, events)

	p.arm("2")
	lowest, _ = p.result()
	assert.Equal(t, readyCapacity{2, 2}, lowest["frontend"], "the capacity at the change")
	p.observe(pod("a", "", true), true)
	p.observe(pod("c", "2", false), false)
	p.observe(pod("c", "2", true), false)
	p.observe(pod("b", "", true), true)
	p.observe(pod("d", "2", true), false)
	assert.False(t, p.doneAt.IsZero(), "every pod new and Ready")
	p.observe(pod("d", "2", false), false)
	lowest, events = p.result()
	assert.Equal(t, readyCapacity{1, 1}, lowest["frontend"], "one pod down at a time; nothing counted after the end")
	assert.Equal(t, 5, events)
}

func TestRolloutLowestOfRoundsIsTheLowerPerComponent(t *testing.T) {
	a := map[string]readyCapacity{"frontend": {3, 3}, "prefill": {25, 5}}
	b := map[string]readyCapacity{"frontend": {1, 1}, "prefill": {29, 5}, "decode": {15, 3}}
	assert.Equal(t, map[string]readyCapacity{"frontend": {1, 1}, "prefill": {25, 5}, "decode": {15, 3}}, lowestOf(a, b))
	assert.Equal(t, a, lowestOf(map[string]readyCapacity{}, a), "the first round's")
}

func TestRefusedWritesSayWhyTheAPIServerRefusedThem(t *testing.T) {
	ev := func(code int, reason string) cluster.AuditEvent {
		var e cluster.AuditEvent
		e.Verb, e.ObjectRef.Resource = "create", "pods"
		e.ResponseStatus.Code, e.ResponseStatus.Reason = code, reason
		return e
	}
	assert.NotEqual(t, refusalKey("grove-operator", ev(409, "AlreadyExists")), refusalKey("grove-operator", ev(500, "InternalError")),
		"refusals of one write are told apart by why")
	assert.Equal(t, writeKey("grove-operator", ev(409, "AlreadyExists")), writeKey("grove-operator", ev(201, "")),
		"writes are counted whatever their answer")

	r := &Report{Peers: []PeerRun{{Shape: "1000x1", Name: "PodCliqueSet", Pods: 1000,
		RefusedWrites: []writeCount{{Binary: "grove-operator", Verb: "create", Resource: "pods", Count: 94, Code: 409, Reason: "AlreadyExists"}}}}}
	var out strings.Builder
	r.printPeers(&out)
	assert.Contains(t, out.String(), "refused: grove-operator create pods ×94 (409 AlreadyExists)")
}
