package kueuegang

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func gpus(n int64) corev1.ResourceList {
	return corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(n, resource.DecimalSI)}
}

func gang() *builders.PodGangBuilder {
	return builders.PodGang("ns", "inf-0").Queue("team-a").
		PodGroup("inf-0-worker", 2, "inf-0-worker-0", "inf-0-worker-1", "inf-0-worker-2").
		PodGroup("inf-0-leader", 1, "inf-0-leader-0").
		Requests("inf-0-worker", gpus(2)).Requests("inf-0-leader", gpus(1))
}

func TestWorkloadCountsEveryPodOfTheGangInPodSetsSortedByName(t *testing.T) {
	wl := Workload(gang().Obj(), nil, false)

	require.Len(t, wl.Spec.PodSets, 2)
	assert.Equal(t, kueuev1beta2.PodSetReference("inf-0-leader"), wl.Spec.PodSets[0].Name, "Kueue matches role hashes to podSets in name order")
	assert.Equal(t, int32(1), wl.Spec.PodSets[0].Count)
	assert.Equal(t, kueuev1beta2.PodSetReference("inf-0-worker"), wl.Spec.PodSets[1].Name)
	assert.Equal(t, int32(3), wl.Spec.PodSets[1].Count, "every referenced pod, not minReplicas: an admitted gang starts all its pods")
	assert.Nil(t, wl.Spec.PodSets[1].MinCount)
	assert.True(t, gpus(2)["nvidia.com/gpu"].Equal(wl.Spec.PodSets[1].Template.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"]))
	assert.Equal(t, kueuev1beta2.LocalQueueName("team-a"), wl.Spec.QueueName)
	assert.Equal(t, "true", wl.Annotations[AnnotationIsGroupWorkload])
	require.Len(t, wl.OwnerReferences, 1)
	assert.Equal(t, "PodGang", wl.OwnerReferences[0].Kind)
	assert.Nil(t, wl.OwnerReferences[0].Controller, "Kueue ignores a prebuilt Workload controlled by another kind")
	assert.Nil(t, wl.Spec.PriorityClassRef)
}

func TestWorkloadCarriesTheGangsPriority(t *testing.T) {
	wl := Workload(gang().Priority("high").Obj(), ptr.To(int32(1000)), false)

	require.NotNil(t, wl.Spec.PriorityClassRef)
	assert.Equal(t, "high", wl.Spec.PriorityClassRef.Name)
	assert.Equal(t, kueuev1beta2.PodPriorityClassKind, wl.Spec.PriorityClassRef.Kind)
	assert.Equal(t, int32(1000), *wl.Spec.Priority)
}

func TestPodSetsMatch(t *testing.T) {
	base := Workload(gang().Obj(), nil, false).Spec.PodSets
	bigger := Workload(gang().PodGroup("inf-0-router", 1, "inf-0-router-0").Obj(), nil, false).Spec.PodSets
	moreGPUs := Workload(gang().Requests("inf-0-leader", gpus(4)).Obj(), nil, false).Spec.PodSets
	for _, tc := range []struct {
		name      string
		have      []kueuev1beta2.PodSet
		wantMatch bool
	}{
		{"the same gang", Workload(gang().Obj(), nil, false).Spec.PodSets, true},
		{"another pod group", bigger, false},
		{"other requests", moreGPUs, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wantMatch, PodSetsMatch(tc.have, base))
		})
	}
}

func TestPreparePodJoinsTheGangsPrebuiltWorkload(t *testing.T) {
	pod := builders.Pod("", "inf-0-worker-1").Label(grovev1alpha1.LabelPodClique, "inf-0-worker").SchedulingGates("other").Obj()
	PreparePod(pod, gang().Obj())

	assert.Equal(t, "team-a", pod.Labels[LabelQueueName])
	assert.Equal(t, "inf-0", pod.Labels[LabelPodGroupName])
	assert.Equal(t, "inf-0", pod.Labels[LabelPrebuiltWorkloadName])
	assert.Equal(t, "4", pod.Annotations[AnnotationPodGroupTotalCount])
	assert.Equal(t, "inf-0-worker", pod.Annotations[AnnotationRoleHash], "the role is the podSet the pod counts against")
	assert.Equal(t, "true", pod.Annotations[AnnotationPodGroupServing])
	assert.Equal(t, []corev1.PodSchedulingGate{{Name: "other"}, {Name: SchedulingGateAdmission}}, pod.Spec.SchedulingGates)

	PreparePod(pod, gang().Obj())
	assert.Len(t, pod.Spec.SchedulingGates, 2, "the gate is added once")
}

func TestPreparePodNamesItsPodGroupsPackLevelForKueuesTopologyUngater(t *testing.T) {
	const rack, host = "topology.kubernetes.io/rack", "kubernetes.io/hostname"
	for _, tc := range []struct {
		name                string
		gang                *schedulerv1alpha1.TopologyConstraint
		own                 *schedulerv1alpha1.TopologyConstraint
		required, preferred string
	}{
		{"no pack constraint: no topology annotation", nil, nil, "", ""},
		{"the gang's required level", builders.PackKeys(rack, host), nil, rack, ""},
		{"a preferred level alone", builders.PackKeys("", host), nil, "", host},
		{"the pod group's own constraint wins", builders.PackKeys(rack, ""), builders.PackKeys(host, ""), host, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := gang().Obj()
			pg.Spec.TopologyConstraint = tc.gang
			pg.Spec.PodGroups[0].TopologyConstraint = tc.own // inf-0-worker
			pod := builders.Pod("", "inf-0-worker-1").Label(grovev1alpha1.LabelPodClique, "inf-0-worker").Obj()
			PreparePod(pod, pg)
			assert.Equal(t, tc.required, pod.Annotations[AnnotationRequiredTopology])
			assert.Equal(t, tc.preferred, pod.Annotations[AnnotationPreferredTopology])
			if tc.required != "" {
				assert.NotContains(t, pod.Annotations, AnnotationPreferredTopology, "Kueue takes one of the two")
			}
		})
	}
}

func TestPreparePodLeavesPodsOfAGangNotQueuedOnItsOwnAlone(t *testing.T) {
	for name, pg := range map[string]*schedulerv1alpha1.PodGang{
		"not queued":           builders.PodGang("ns", "g").Obj(),
		"admitted by an owner": builders.PodGang("ns", "g").Queue("team-a").AdmittedByOwner().PodGroup("g-w", 1, "g-w-0").Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			pod := builders.Pod("", "g-w-0").Obj()
			PreparePod(pod, pg)
			assert.Empty(t, pod.Labels)
			assert.Empty(t, pod.Spec.SchedulingGates)
			assert.False(t, pg.AwaitsQueue(), "no pod of it waits for Kueue")
		})
	}
}

func workload(conds ...metav1.Condition) *kueuev1beta2.Workload {
	return &kueuev1beta2.Workload{Status: kueuev1beta2.WorkloadStatus{Conditions: conds,
		Admission: &kueuev1beta2.Admission{ClusterQueue: "gpus"}}}
}

func cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

func TestAdmissionReadsKueuesDecision(t *testing.T) {
	for _, tc := range []struct {
		name        string
		wl          *kueuev1beta2.Workload
		queueExists bool
		status      metav1.ConditionStatus
		reason      string
		message     string
	}{
		{"a missing LocalQueue is named", nil, false, metav1.ConditionFalse, schedulerv1alpha1.ReasonLocalQueueNotFound, "LocalQueue ns/team-a does not exist"},
		{"no Workload yet", nil, true, metav1.ConditionFalse, schedulerv1alpha1.ReasonQueuePending, "creating the gang's Workload"},
		{"admitted", workload(cond(kueuev1beta2.WorkloadQuotaReserved, metav1.ConditionTrue, "QuotaReserved", ""),
			cond(kueuev1beta2.WorkloadAdmitted, metav1.ConditionTrue, "Admitted", "")), true, metav1.ConditionTrue, schedulerv1alpha1.ReasonQueueAdmitted, "ClusterQueue gpus"},
		{"waiting for quota", workload(cond(kueuev1beta2.WorkloadQuotaReserved, metav1.ConditionFalse, "Pending", "insufficient unused quota for nvidia.com/gpu in flavor gpu, 8 more needed")),
			true, metav1.ConditionFalse, schedulerv1alpha1.ReasonQueuePending, "insufficient unused quota"},
		{"larger than the queue can ever give", workload(cond(kueuev1beta2.WorkloadQuotaReserved, metav1.ConditionFalse, "Pending",
			"couldn't assign flavors to pod set w: insufficient quota for nvidia.com/gpu in flavor gpu, request > maximum capacity (16 > 8)")),
			true, metav1.ConditionFalse, schedulerv1alpha1.ReasonQueueInadmissible, "request > maximum capacity"},
		{"evicted by preemption", workload(cond(kueuev1beta2.WorkloadEvicted, metav1.ConditionTrue, "Preempted", "Preempted to accommodate a higher priority Workload"),
			cond(kueuev1beta2.WorkloadAdmitted, metav1.ConditionFalse, "NoReservation", "")), true, metav1.ConditionFalse, schedulerv1alpha1.ReasonQueueEvicted, "(Preempted: Preempted to accommodate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Admission(gang().Obj(), tc.wl, tc.queueExists)
			assert.Equal(t, schedulerv1alpha1.ConditionQueueAdmitted, c.Type)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Contains(t, c.Message, tc.message)
		})
	}
}

func TestEvictedByKueue(t *testing.T) {
	pod := &corev1.Pod{}
	assert.False(t, EvictedByKueue(pod))
	pod.Status.Conditions = []corev1.PodCondition{{Type: PodConditionTerminationTarget, Status: corev1.ConditionTrue, Reason: "WorkloadEvictedDueToPreempted"}}
	assert.True(t, EvictedByKueue(pod))
}

func TestPackConstraintsBecomeKueueTopologyRequests(t *testing.T) {
	const rack, host = "topology.kubernetes.io/rack", "kubernetes.io/hostname"
	type want struct {
		required, preferred, group string
	}
	cases := []struct {
		name     string
		pg       *schedulerv1alpha1.PodGang
		want     map[string]want
		noteHas  string
		withTAS  bool
		requests int
	}{
		{"the gang's constraint on a leader of one pod and its workers: one podSet group", func() *schedulerv1alpha1.PodGang {
			pg := gang().Obj()
			pg.Spec.TopologyConstraint = builders.PackKeys(rack, host)
			return pg
		}(), map[string]want{"inf-0-leader": {rack, host, "inf-0"}, "inf-0-worker": {rack, host, "inf-0"}}, "", true, 2},
		{"a pod group's own constraint wins over the gang's", func() *schedulerv1alpha1.PodGang {
			pg := gang().Obj()
			pg.Spec.TopologyConstraint = builders.PackKeys(rack, "")
			pg.Spec.PodGroups[0].TopologyConstraint = builders.PackKeys(host, "") // the workers
			return pg
		}(), map[string]want{"inf-0-leader": {rack, "", ""}, "inf-0-worker": {host, "", ""}}, "", true, 2},
		{"a constraint Kueue cannot co-locate is applied to each pod group and said so", func() *schedulerv1alpha1.PodGang {
			pg := gang().PodGroup("inf-0-router", 2, "inf-0-router-0", "inf-0-router-1").Obj()
			pg.Spec.TopologyConstraint = builders.PackKeys(rack, "")
			return pg
		}(), map[string]want{"inf-0-leader": {rack, "", ""}, "inf-0-worker": {rack, "", ""}, "inf-0-router": {rack, "", ""}}, "inf-0 (3 pod groups)", true, 3},
		{"no topology on the queue: no request", func() *schedulerv1alpha1.PodGang {
			pg := gang().Obj()
			pg.Spec.TopologyConstraint = builders.PackKeys(rack, "")
			return pg
		}(), nil, "", false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, note := TopologyRequests(tc.pg)
			if tc.noteHas == "" {
				assert.Empty(t, note)
			} else {
				assert.Contains(t, note, tc.noteHas)
			}
			got := 0
			for _, ps := range Workload(tc.pg, nil, tc.withTAS).Spec.PodSets {
				r := ps.TopologyRequest
				if r == nil {
					continue
				}
				got++
				w := tc.want[string(ps.Name)]
				assert.Equal(t, w.required, ptr.Deref(r.Required, ""), "%s required", ps.Name)
				assert.Equal(t, w.preferred, ptr.Deref(r.Preferred, ""), "%s preferred", ps.Name)
				assert.Equal(t, w.group, ptr.Deref(r.PodSetGroupName, ""), "%s podSetGroupName", ps.Name)
				if w.group == "" {
					assert.Equal(t, grovev1alpha1.LabelPodIndex, ptr.Deref(r.PodIndexLabel, ""), "Kueue places pods in the order of their index")
				} else {
					assert.Nil(t, r.PodIndexLabel, "a pair is placed without ranks: its workers' indices start at 0, not after the leader")
				}
			}
			assert.Equal(t, tc.requests, got)
		})
	}
}

func TestShrunkInPlaceKeepsThePodSetsAndCountsThePodsStillLeaving(t *testing.T) {
	have := Workload(gang().Obj(), nil, false).Spec.PodSets // leader 1, worker 3
	counts := func(ps []kueuev1beta2.PodSet) map[string]int32 {
		out := map[string]int32{}
		for _, p := range ps {
			out[string(p.Name)] = p.Count
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		want       *builders.PodGangBuilder
		leaving    map[string]int32
		wantOK     bool
		wantCounts map[string]int32
	}{
		{"a pod group gone, its pods gone", builders.PodGang("ns", "inf-0").Queue("team-a").PodGroup("inf-0-leader", 1, "inf-0-leader-0").Requests("inf-0-leader", gpus(1)),
			nil, true, map[string]int32{"inf-0-leader": 1, "inf-0-worker": 0}},
		{"a pod group gone, two of its pods still terminating", builders.PodGang("ns", "inf-0").Queue("team-a").PodGroup("inf-0-leader", 1, "inf-0-leader-0").Requests("inf-0-leader", gpus(1)),
			map[string]int32{"inf-0-worker": 2}, true, map[string]int32{"inf-0-leader": 1, "inf-0-worker": 2}},
		{"a pod group scaled in", builders.PodGang("ns", "inf-0").Queue("team-a").PodGroup("inf-0-worker", 1, "inf-0-worker-0").PodGroup("inf-0-leader", 1, "inf-0-leader-0").
			Requests("inf-0-worker", gpus(2)).Requests("inf-0-leader", gpus(1)), nil, true, map[string]int32{"inf-0-leader": 1, "inf-0-worker": 1}},
		{"the same gang", gang(), nil, true, map[string]int32{"inf-0-leader": 1, "inf-0-worker": 3}},
		{"a pod group it lacks", gang().PodGroup("inf-0-router", 1, "inf-0-router-0"), nil, false, nil},
		{"a count that grows", gang().PodGroup("inf-0-worker", 2, "inf-0-worker-0", "inf-0-worker-1", "inf-0-worker-2", "inf-0-worker-3"), nil, false, nil},
		{"other requests", gang().Requests("inf-0-leader", gpus(4)), nil, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shrunk, ok := ShrunkInPlace(have, Workload(tc.want.Obj(), nil, false).Spec.PodSets, tc.leaving)
			require.Equal(t, tc.wantOK, ok)
			if !ok {
				return
			}
			assert.Equal(t, tc.wantCounts, counts(shrunk))
			for i := range have {
				assert.Equal(t, countless(have[i]), countless(shrunk[i]), "podSet %s is the admitted one but for its count", have[i].Name)
			}
		})
	}
}

func TestPodsCountedAsKueueCountsThem(t *testing.T) {
	pod := func(role string, edit func(*corev1.Pod)) corev1.Pod {
		p := builders.Pod("", "").Annotation(AnnotationRoleHash, role).NodeName("n").Phase(corev1.PodRunning).Obj()
		if edit != nil {
			edit(p)
		}
		return *p
	}
	now := metav1.Now()
	got := PodsCounted([]corev1.Pod{
		pod("w", nil),
		pod("w", func(p *corev1.Pod) { p.DeletionTimestamp = &now }),                      // terminating on its node: still counted
		pod("w", func(p *corev1.Pod) { p.DeletionTimestamp, p.Spec.NodeName = &now, "" }), // deleted before placement
		pod("w", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
		pod("l", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
	})
	assert.Equal(t, map[string]int32{"w": 2, "l": 1}, got)
}

func TestLeavingCountsThePodsTheGangNoLongerReferences(t *testing.T) {
	pod := func(role, name string) corev1.Pod {
		return *builders.Pod("", name).Annotation(AnnotationRoleHash, role).NodeName("n").Phase(corev1.PodRunning).Obj()
	}
	pg := builders.PodGang("ns", "inf-0").PodGroup("inf-0-worker", 1, "inf-0-worker-0").Obj()
	got := Leaving(pg, []corev1.Pod{
		pod("inf-0-worker", "inf-0-worker-0"), // the gang's
		pod("inf-0-worker", "inf-0-worker-1"), // scaled in
		pod("inf-0-leader", "inf-0-leader-0"), // its pod group left the gang
	})
	assert.Equal(t, map[string]int32{"inf-0-worker": 1, "inf-0-leader": 1}, got)
}
