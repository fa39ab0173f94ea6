package podcliqueset

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// now is the fake clock every plan test decides at.
var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// world is what a pass observes of a PodCliqueSet whose children all exist as its template
// makes them (each with a UID), no pod running; edits then break, scale or remove some of them.
func world(pcs *grovev1alpha1.PodCliqueSet) *observed {
	obs := &observed{cliques: map[string]*grovev1alpha1.PodClique{}, groups: map[string]*grovev1alpha1.PodCliqueScalingGroup{},
		gangs: map[string]*schedulerv1alpha1.PodGang{}, services: map[string]*corev1.Service{}, pods: map[string][]*corev1.Pod{},
		autoscalers: map[string]*autoscalingv2.HorizontalPodAutoscaler{}, backend: "kube-scheduler", wantGangs: map[string]bool{}, collided: map[string]bool{}, unseen: sets.New[string](),
		staleGangs: sets.New[string]()}
	e := Initial(pcs)
	for _, s := range e.Services {
		obs.services[s.Name] = s
	}
	for _, p := range e.PodCliques {
		p.UID = types.UID("uid-" + p.Name)
		obs.cliques[p.Name] = p
	}
	for _, g := range e.ScalingGroups {
		g.UID = types.UID("uid-" + g.Name)
		obs.groups[g.Name] = g
		for j := range int(g.Spec.Replicas) {
			for _, c := range g.Spec.CliqueNames {
				name := grovev1alpha1.ScalingGroupPodCliqueName(g.Name, j, c)
				m := builders.PodClique(pcs.Namespace, name).OfReplica(pcs.Name, g.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex]).
					OfGroupReplica(g.Name, strconv.Itoa(j)).UID("uid-" + name).Obj()
				obs.cliques[name] = m
			}
		}
	}
	for _, c := range fromNothing(pcs, slicesOf(obs.cliques), "kube-scheduler", nil) {
		if pg, ok := c.obj.(*schedulerv1alpha1.PodGang); ok {
			pg.ResourceVersion = "1"
			obs.gangs[pg.Name] = pg
		}
	}
	return obs
}

func slicesOf(m map[string]*grovev1alpha1.PodClique) []*grovev1alpha1.PodClique {
	var out []*grovev1alpha1.PodClique
	for _, p := range m {
		out = append(out, p)
	}
	return out
}

// breachedSince marks a PodClique MinAvailableBreached since t.
func breachedSince(obs *observed, name string, t time.Time) {
	obs.cliques[name].Status.Conditions = []metav1.Condition{{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionTrue,
		Reason: "InsufficientReadyPods", LastTransitionTime: metav1.NewTime(t)}}
}

// groupBreachedSince marks a scaling group (and its first member) MinAvailableBreached since t.
func groupBreachedSince(obs *observed, name, member string, t time.Time) {
	c := metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionTrue, Reason: "InsufficientReadyPods", LastTransitionTime: metav1.NewTime(t)}
	obs.groups[name].Status.Conditions = []metav1.Condition{c}
	if member != "" {
		breachedSince(obs, member, t)
	}
}

// steps lists a plan's transitions and writes as short lines, in order.
func steps(p plan) []string {
	var out []string
	for _, t := range p.transitions {
		line := fmt.Sprintf("%s replica %d", t.kind, t.replica)
		for _, d := range t.deletes {
			line += fmt.Sprintf(", delete %s %s", kindOf(d.obj), d.obj.GetName())
		}
		out = append(out, line)
	}
	for _, c := range p.changes {
		out = append(out, fmt.Sprintf("%s %s %s", c.verb, kindOf(c.obj), c.obj.GetName()))
	}
	for _, c := range p.deletes {
		out = append(out, fmt.Sprintf("delete %s %s (%s)", kindOf(c.obj), c.obj.GetName(), c.reason))
	}
	return out
}

func inference() *grovev1alpha1.PodCliqueSet {
	return builders.PodCliqueSet("ns", "inf").Replicas(2).Clique("router", 2).
		TerminationDelay(metav1.Duration{Duration: time.Minute}).Obj()
}

func training(maxRestarts int32) *grovev1alpha1.PodCliqueSet {
	pcs := builders.PodCliqueSet("ns", "tg").Training(maxRestarts).Clique("solo", 1).Clique("lead", 1).Clique("mem", 1).
		ScalingGroup("grp", 1, 1, "lead", "mem").Obj()
	pcs.Status.Phase = grovev1alpha1.PodCliqueSetPhaseRunning
	return pcs
}

func TestDecideAtRestPlansNothing(t *testing.T) {
	for name, pcs := range map[string]*grovev1alpha1.PodCliqueSet{"inference": inference(), "training": training(1)} {
		t.Run(name, func(t *testing.T) {
			p := decide(input{pcs: pcs, obs: world(pcs), now: now})
			assert.Empty(t, steps(p), "every child is as the template makes it")
			assert.Empty(t, p.gangStatus, "no PodGang status to write")
			assert.Nil(t, p.record, "nothing to record")
			assert.Zero(t, p.requeue)
		})
	}
}

func TestDecideGangTerminationOfAnInferenceReplica(t *testing.T) {
	cases := []struct {
		name        string
		breachedFor time.Duration
		scaledTo    int32 // the clique's replicas when it differs from the template's 2
		want        []string
		wantRecord  []grovev1alpha1.ScaledReplicas
		wantRequeue time.Duration
	}{
		{name: "within terminationDelay: looks again when it runs out", breachedFor: 40 * time.Second, wantRequeue: 20 * time.Second},
		{name: "at terminationDelay: the replica's PodCliques go, its PodGang stays", breachedFor: time.Minute,
			want: []string{"GangTerminated replica 0, delete PodClique inf-0-router"}},
		{name: "scaled by hand: the count is recorded before the PodClique goes", breachedFor: 2 * time.Minute, scaledTo: 5,
			want:       []string{"GangTerminated replica 0, delete PodClique inf-0-router"},
			wantRecord: []grovev1alpha1.ScaledReplicas{{Name: "inf-0-router", Replicas: 5, TemplateReplicas: 2, ReplacedUID: "uid-inf-0-router"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := inference()
			obs := world(pcs)
			if tc.scaledTo > 0 {
				obs.cliques["inf-0-router"].Spec.Replicas = tc.scaledTo
			}
			breachedSince(obs, "inf-0-router", now.Add(-tc.breachedFor))
			p := decide(input{pcs: pcs, obs: obs, now: now})
			assert.Equal(t, tc.want, steps(p))
			assert.Equal(t, tc.wantRequeue, p.requeue)
			assert.True(t, p.wantGangs["inf-0"], "the terminated replica keeps its PodGang")
			if tc.wantRecord == nil {
				assert.Nil(t, p.record)
				return
			}
			require.NotNil(t, p.record)
			assert.Equal(t, tc.wantRecord, p.record.ScaledReplicasToRestore)
		})
	}
}

func TestDecideRecordsScaledCountsOnce(t *testing.T) {
	pcs := inference()
	pcs.Status.ScaledReplicasToRestore = []grovev1alpha1.ScaledReplicas{{Name: "inf-0-router", Replicas: 5, TemplateReplicas: 2, ReplacedUID: "uid-inf-0-router"}}
	obs := world(pcs)
	obs.cliques["inf-0-router"].Spec.Replicas = 5
	breachedSince(obs, "inf-0-router", now.Add(-time.Hour))
	p := decide(input{pcs: pcs, obs: obs, now: now})
	assert.Nil(t, p.record, "a pass that finds the counts recorded (it crashed after the write) records nothing")
	assert.Contains(t, steps(p), "GangTerminated replica 0, delete PodClique inf-0-router")
}

func TestDecideTrainingTransitions(t *testing.T) {
	failed := metav1.Condition{Type: grovev1alpha1.ConditionFailed, Status: metav1.ConditionTrue, Reason: grovev1alpha1.ReasonMaxRestartsExceeded}
	cases := []struct {
		name         string
		maxRestarts  int32
		edit         func(pcs *grovev1alpha1.PodCliqueSet, obs *observed)
		want         []string
		wantRecord   func(t *testing.T, st *grovev1alpha1.PodCliqueSetStatus) // nil: nothing recorded
		wantEndPass  bool
		wantSettled  bool
		wantRequeue  time.Duration
		wantNoChange bool
	}{
		{
			name: "a standalone clique breached: restart 1 of 1 recorded, every PodClique of the replica goes", maxRestarts: 1,
			edit: func(_ *grovev1alpha1.PodCliqueSet, obs *observed) { breachedSince(obs, "tg-0-solo", now) },
			want: []string{"ReplicaRestarting replica 0, delete PodClique tg-0-grp-0-lead, delete PodClique tg-0-grp-0-mem, delete PodClique tg-0-solo"},
			wantRecord: func(t *testing.T, st *grovev1alpha1.PodCliqueSetStatus) {
				assert.Equal(t, int32(1), st.RestartCount)
				require.Len(t, st.RestartsInProgress, 1)
				assert.ElementsMatch(t, []types.UID{"uid-tg-0-solo", "uid-tg-0-grp-0-lead", "uid-tg-0-grp-0-mem"}, st.RestartsInProgress[0].PodCliqueUIDs)
			},
			wantEndPass: true,
		},
		{
			name: "a scaling group breached through its member: one failure is one restart", maxRestarts: 2,
			edit: func(_ *grovev1alpha1.PodCliqueSet, obs *observed) {
				groupBreachedSince(obs, "tg-0-grp", "tg-0-grp-0-mem", now)
			},
			want: []string{"ReplicaRestarting replica 0, delete PodClique tg-0-grp-0-lead, delete PodClique tg-0-grp-0-mem, delete PodClique tg-0-solo"},
			wantRecord: func(t *testing.T, st *grovev1alpha1.PodCliqueSetStatus) {
				assert.Equal(t, int32(1), st.RestartCount)
			},
			wantEndPass: true,
		},
		{
			name: "the group's breach from before the restart, no member breached now: nothing", maxRestarts: 1,
			edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
				pcs.Status.RestartCount = 1
				groupBreachedSince(obs, "tg-0-grp", "", now.Add(-time.Minute))
			},
			wantNoChange: true,
		},
		{
			name: "a restart recorded by a pass that crashed: its PodCliques go, nothing counted again", maxRestarts: 1,
			edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
				pcs.Status.RestartCount = 1
				pcs.Status.RestartsInProgress = []grovev1alpha1.ReplicaRestart{{ReplicaIndex: 0, Restart: 1, PodCliqueUIDs: []types.UID{"uid-tg-0-solo"}}}
				breachedSince(obs, "tg-0-solo", now)
			},
			want: []string{"RestartResumed replica 0, delete PodClique tg-0-grp-0-lead, delete PodClique tg-0-grp-0-mem, delete PodClique tg-0-solo"},
		},
		{
			name: "the budget spent: the failure is recorded, scaling groups go first, the phase waits for the pods", maxRestarts: 1,
			edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
				pcs.Status.RestartCount = 1
				breachedSince(obs, "tg-0-solo", now)
				obs.podsLeft = 3
			},
			want: []string{"Failing replica 0, delete PodCliqueScalingGroup tg-0-grp, delete PodClique tg-0-grp-0-lead, delete PodClique tg-0-grp-0-mem, delete PodClique tg-0-solo"},
			wantRecord: func(t *testing.T, st *grovev1alpha1.PodCliqueSetStatus) {
				c := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionFailed)
				require.NotNil(t, c)
				assert.Equal(t, grovev1alpha1.ReasonMaxRestartsExceeded, c.Reason)
				assert.Equal(t, "replica 0 failed (PodClique tg-0-solo below minAvailable) after 1 of 1 restarts", c.Message)
				assert.Equal(t, now, c.LastTransitionTime.Time)
				assert.Equal(t, grovev1alpha1.PodCliqueSetPhaseRunning, st.Phase, "not Failed while pods are left")
			},
			wantEndPass: true, wantSettled: true, wantRequeue: tearDownRecheck,
		},
		{
			name: "failing, pods still terminating: nothing recorded, nothing created", maxRestarts: 1,
			edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
				meta.SetStatusCondition(&pcs.Status.Conditions, failed)
				obs.cliques, obs.groups, obs.podsLeft = map[string]*grovev1alpha1.PodClique{}, map[string]*grovev1alpha1.PodCliqueScalingGroup{}, 1
			},
			wantSettled: true, wantNoChange: true, wantRequeue: tearDownRecheck,
		},
		{
			name: "failing, a pod terminating within its grace period: waited for until it ends", maxRestarts: 1,
			edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
				meta.SetStatusCondition(&pcs.Status.Conditions, failed)
				obs.cliques, obs.groups, obs.podsLeft = map[string]*grovev1alpha1.PodClique{}, map[string]*grovev1alpha1.PodCliqueScalingGroup{}, 0
				obs.terminating = []time.Time{now.Add(20 * time.Second), now.Add(-time.Second)}
			},
			wantSettled: true, wantNoChange: true, wantRequeue: tearDownRecheck,
		},
		{
			name: "failing, the last pod past its grace period (its node is gone): the phase is Failed", maxRestarts: 1,
			edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
				meta.SetStatusCondition(&pcs.Status.Conditions, failed)
				obs.cliques, obs.groups, obs.podsLeft = map[string]*grovev1alpha1.PodClique{}, map[string]*grovev1alpha1.PodCliqueScalingGroup{}, 0
				obs.terminating = []time.Time{now.Add(-time.Second)}
			},
			wantRecord: func(t *testing.T, st *grovev1alpha1.PodCliqueSetStatus) {
				assert.Equal(t, grovev1alpha1.PodCliqueSetPhaseFailed, st.Phase)
			},
			wantSettled: true,
		},
		{
			name: "failing, the last pod gone: the phase is Failed", maxRestarts: 1,
			edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
				meta.SetStatusCondition(&pcs.Status.Conditions, failed)
				obs.cliques, obs.groups, obs.podsLeft = map[string]*grovev1alpha1.PodClique{}, map[string]*grovev1alpha1.PodCliqueScalingGroup{}, 0
			},
			wantRecord: func(t *testing.T, st *grovev1alpha1.PodCliqueSetStatus) {
				assert.Equal(t, grovev1alpha1.PodCliqueSetPhaseFailed, st.Phase)
			},
			wantSettled: true,
		},
		{
			name: "Failed: a PodClique made meanwhile goes, nothing is created", maxRestarts: 1,
			edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
				pcs.Status.Phase = grovev1alpha1.PodCliqueSetPhaseFailed
				obs.groups = map[string]*grovev1alpha1.PodCliqueScalingGroup{}
				delete(obs.cliques, "tg-0-grp-0-lead")
				delete(obs.cliques, "tg-0-grp-0-mem")
			},
			want:        []string{"TearingDown replica 0, delete PodClique tg-0-solo"},
			wantSettled: true,
		},
		{
			name: "maxRuntime not yet reached: looks again when it runs out", maxRestarts: 1,
			edit: func(pcs *grovev1alpha1.PodCliqueSet, _ *observed) {
				pcs.Spec.TrainingSpec.MaxRuntime = &metav1.Duration{Duration: time.Hour}
				pcs.Status.StartTime = &metav1.Time{Time: now.Add(-59 * time.Minute)}
			},
			wantRequeue: time.Minute, wantNoChange: true,
		},
		{
			name: "maxRuntime reached: the failure is recorded and every PodClique goes", maxRestarts: 1,
			edit: func(pcs *grovev1alpha1.PodCliqueSet, _ *observed) {
				pcs.Spec.TrainingSpec.MaxRuntime = &metav1.Duration{Duration: time.Hour}
				pcs.Status.StartTime = &metav1.Time{Time: now.Add(-time.Hour)}
			},
			want: []string{"Failing replica 0, delete PodCliqueScalingGroup tg-0-grp, delete PodClique tg-0-grp-0-lead, delete PodClique tg-0-grp-0-mem, delete PodClique tg-0-solo"},
			wantRecord: func(t *testing.T, st *grovev1alpha1.PodCliqueSetStatus) {
				assert.Equal(t, grovev1alpha1.ReasonMaxRuntimeExceeded, meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionFailed).Reason)
			},
			wantSettled: true, wantRequeue: tearDownRecheck,
		},
		{
			name: "Succeeded: the PodCliques still running go, those that succeeded stay", maxRestarts: 1,
			edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
				pcs.Status.Phase = grovev1alpha1.PodCliqueSetPhaseSucceeded
				obs.cliques["tg-0-solo"].Status.Conditions = []metav1.Condition{{Type: grovev1alpha1.ConditionSucceeded, Status: metav1.ConditionTrue}}
			},
			want:        []string{"Finishing replica 0, delete PodClique tg-0-grp-0-lead, delete PodClique tg-0-grp-0-mem"},
			wantSettled: true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := training(tc.maxRestarts)
			obs := world(pcs)
			tc.edit(pcs, obs)
			p := decide(input{pcs: pcs, obs: obs, now: now})
			if tc.wantNoChange {
				assert.Empty(t, steps(p))
			} else {
				assert.Equal(t, tc.want, steps(p))
			}
			assert.Equal(t, tc.wantEndPass, p.endPass, "endPass")
			assert.Equal(t, tc.wantSettled, p.settled, "settled")
			assert.Equal(t, tc.wantRequeue, p.requeue, "requeue")
			if tc.wantRecord == nil {
				assert.Nil(t, p.record, "nothing recorded")
				return
			}
			require.NotNil(t, p.record, "the decision is recorded before it is acted on")
			tc.wantRecord(t, p.record)
		})
	}
}

func TestDecideConvergesReplicas(t *testing.T) {
	cases := []struct {
		name string
		edit func(pcs *grovev1alpha1.PodCliqueSet, obs *observed)
		want []string
	}{
		{
			name: "a missing PodClique is created, its PodGang is kept",
			edit: func(_ *grovev1alpha1.PodCliqueSet, obs *observed) { delete(obs.cliques, "inf-1-router") },
			want: []string{"create PodClique inf-1-router"},
		},
		{
			name: "a PodClique given back after gang termination gets the count it was scaled to",
			edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
				delete(obs.cliques, "inf-1-router")
				pcs.Status.ScaledReplicasToRestore = []grovev1alpha1.ScaledReplicas{{Name: "inf-1-router", Replicas: 4, TemplateReplicas: 2}}
			},
			want: []string{"create PodClique inf-1-router (4 replicas)"},
		},
		{
			name: "scaled in: the replica beyond spec.replicas loses its children",
			edit: func(pcs *grovev1alpha1.PodCliqueSet, _ *observed) { pcs.Spec.Replicas = 1 },
			want: []string{
				"delete PodClique inf-1-router (its replica or clique left the template)",
				"delete Service inf-1 (its replica is beyond spec.replicas)",
				"delete PodGang inf-1 (no replica or scaling-group replica needs it)",
			},
		},
		{
			name: "a name another owner holds is never created",
			edit: func(_ *grovev1alpha1.PodCliqueSet, obs *observed) {
				delete(obs.cliques, "inf-1-router")
				obs.collided["PodClique/inf-1-router"] = true
			},
		},
		{
			name: "a child an earlier pass created that the cache does not show is not created again",
			edit: func(_ *grovev1alpha1.PodCliqueSet, obs *observed) {
				delete(obs.cliques, "inf-1-router")
				obs.unseen.Insert("PodClique/inf-1-router")
			},
		},
		{
			name: "a PodGang the cache shows before our last write is left alone",
			edit: func(_ *grovev1alpha1.PodCliqueSet, obs *observed) {
				obs.gangs["inf-1"].Spec.PodGroups = nil
				obs.staleGangs.Insert("inf-1")
			},
		},
		{
			name: "a PodGang that lost its pod groups is written back",
			edit: func(_ *grovev1alpha1.PodCliqueSet, obs *observed) { obs.gangs["inf-1"].Spec.PodGroups = nil },
			want: []string{"update PodGang inf-1"},
		},
		{
			name: "a rolling update takes one replica at a time: replica 1 keeps its template while 0 rolls",
			edit: func(pcs *grovev1alpha1.PodCliqueSet, _ *observed) {
				pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "v2"
			},
			want: []string{"update PodClique inf-0-router"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := inference()
			obs := world(pcs)
			tc.edit(pcs, obs)
			p := decide(input{pcs: pcs, obs: obs, now: now})
			got := steps(p)
			for i, c := range p.changes {
				if pclq, ok := c.obj.(*grovev1alpha1.PodClique); ok && c.verb == create && pclq.Spec.Replicas != 2 {
					got[i] += fmt.Sprintf(" (%d replicas)", pclq.Spec.Replicas)
				}
			}
			assert.Equal(t, tc.want, got)
			assert.Nil(t, p.record)
		})
	}
}

func TestDecideIsPure(t *testing.T) {
	pcs := training(1)
	obs := world(pcs)
	breachedSince(obs, "tg-0-solo", now)
	before := pcs.DeepCopy()
	first := decide(input{pcs: pcs, obs: obs, now: now})
	second := decide(input{pcs: pcs, obs: obs, now: now})
	assert.Equal(t, steps(first), steps(second), "the same observation decides the same plan")
	assert.Equal(t, before, pcs, "deciding changes nothing it read")
	assert.Equal(t, ptr.To(int32(1)), ptr.To(first.record.RestartCount))
}

func TestDecidePlansTheAutoscalers(t *testing.T) {
	autoscaled := func(t *grovev1alpha1.PodCliqueTemplateSpec) {
		t.Spec.ScaleConfig = &grovev1alpha1.AutoScalingConfig{MaxReplicas: 5}
	}
	cases := []struct {
		name string
		edit func(pcs *grovev1alpha1.PodCliqueSet, obs *observed)
		want []string
	}{
		{name: "missing: one per autoscaled clique and replica", want: []string{"create HorizontalPodAutoscaler inf-0-router", "create HorizontalPodAutoscaler inf-1-router"}},
		{name: "as wanted: nothing", edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
			obs.autoscalers = wantedAutoscalers(pcs)
		}},
		{name: "its maximum changed in the template: updated", edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
			obs.autoscalers = wantedAutoscalers(pcs)
			pcs.Spec.Template.Cliques[0].Spec.ScaleConfig.MaxReplicas = 7
		}, want: []string{"update HorizontalPodAutoscaler inf-0-router", "update HorizontalPodAutoscaler inf-1-router"}},
		{name: "no longer autoscaled: deleted", edit: func(pcs *grovev1alpha1.PodCliqueSet, obs *observed) {
			obs.autoscalers = wantedAutoscalers(pcs)
			pcs.Spec.Template.Cliques[0].Spec.ScaleConfig = nil
		}, want: []string{
			"delete HorizontalPodAutoscaler inf-0-router (its clique or scaling group is no longer autoscaled)",
			"delete HorizontalPodAutoscaler inf-1-router (its clique or scaling group is no longer autoscaled)",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := builders.PodCliqueSet("ns", "inf").Replicas(2).Clique("router", 2, autoscaled).Obj()
			obs := world(pcs)
			if tc.edit != nil {
				tc.edit(pcs, obs)
			}
			assert.Equal(t, tc.want, steps(decide(input{pcs: pcs, obs: obs, now: now})))
		})
	}
}
