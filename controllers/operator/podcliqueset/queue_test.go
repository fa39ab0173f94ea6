package podcliqueset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/internal/reconcile/eventbatch"
	"github.com/kubegrove/grove/test/builders"
)

func TestQueueAdmittedSumsUpKueuesDecisionOnTheGangs(t *testing.T) {
	queued := func(admission grovev1alpha1.QueueAdmission) *grovev1alpha1.PodCliqueSet {
		pcs := builders.PodCliqueSet("ns", "llm").Clique("worker", 1).Obj()
		pcs.Labels = map[string]string{grovev1alpha1.LabelKueueQueueName: "team-a"}
		pcs.Spec.QueueAdmission = admission
		return pcs
	}
	gangs := func(conds ...*metav1.Condition) *observed {
		obs := &observed{gangs: map[string]*schedulerv1alpha1.PodGang{}, wantGangs: map[string]bool{}}
		for i, c := range conds {
			name := []string{"llm-0", "llm-1"}[i]
			obs.wantGangs[name] = true
			pg := builders.PodGang("ns", name).Queue("team-a").Obj()
			if c != nil {
				pg.Status.Conditions = []metav1.Condition{*c}
			}
			obs.gangs[name] = pg
		}
		return obs
	}
	admitted := &metav1.Condition{Type: schedulerv1alpha1.ConditionQueueAdmitted, Status: metav1.ConditionTrue, Reason: schedulerv1alpha1.ReasonQueueAdmitted}
	evicted := &metav1.Condition{Type: schedulerv1alpha1.ConditionQueueAdmitted, Status: metav1.ConditionFalse, Reason: schedulerv1alpha1.ReasonQueueEvicted, Message: "Preempted"}
	cases := []struct {
		name       string
		pcs        *grovev1alpha1.PodCliqueSet
		obs        *observed
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{"every gang admitted", queued(""), gangs(admitted, admitted), metav1.ConditionTrue, grovev1alpha1.ReasonAllGangsAdmitted},
		{"a gang evicted, another not reported yet", queued(""), gangs(nil, evicted), metav1.ConditionFalse, schedulerv1alpha1.ReasonQueueEvicted},
		{"admitted through the owner: the gangs' own conditions do not matter", queued(grovev1alpha1.QueueAdmissionOwner), gangs(nil, nil), metav1.ConditionTrue, grovev1alpha1.ReasonAdmittedWithOwner},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := queueAdmitted(tc.pcs, tc.obs)
			require.NotNil(t, c)
			assert.Equal(t, tc.wantStatus, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Contains(t, c.Message, "LocalQueue team-a")
		})
	}
	assert.Nil(t, queueAdmitted(builders.PodCliqueSet("ns", "llm").Clique("worker", 1).Obj(), gangs()), "not queued: no condition")
}

func TestEveryGangCarriesTheVolcanoQueueItsPodCliqueSetNames(t *testing.T) {
	cases := []struct {
		name string
		edit func(*grovev1alpha1.PodCliqueSet)
		want string
	}{
		{name: "none named", edit: func(*grovev1alpha1.PodCliqueSet) {}, want: ""},
		{name: "on the PodCliqueSet", edit: func(p *grovev1alpha1.PodCliqueSet) {
			p.Annotations = map[string]string{grovev1alpha1.AnnotationVolcanoQueue: "gpu"}
		}, want: "gpu"},
		{name: "on a clique template only", edit: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Annotations = map[string]string{grovev1alpha1.AnnotationVolcanoQueue: "gpu"}
		}, want: "gpu"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := builders.PodCliqueSet("ns", "llm").Replicas(2).Clique("router", 1).Clique("worker", 2).Obj()
			tc.edit(pcs)

			gangs, _ := InitialPodGangs(pcs, nil, "volcano", TopologyInput{})

			require.Len(t, gangs, 2)
			for _, pg := range gangs {
				assert.Equal(t, tc.want, pg.Spec.SchedulerQueueName, pg.Name)
			}
		})
	}
}

func TestItsOwnStoredStatusChangingWakesThePodCliqueSetReconciler(t *testing.T) {
	pcs := builders.PodCliqueSet("ns", "llm").Clique("worker", 1).Obj()
	withAvailable := func(n int32) *grovev1alpha1.PodCliqueSet {
		p := pcs.DeepCopy()
		p.Status.AvailableReplicas = n
		return p
	}
	relabelled := withAvailable(1)
	relabelled.Labels = map[string]string{"x": "y"}
	cases := []struct {
		name     string
		old, new *grovev1alpha1.PodCliqueSet
		want     bool
	}{
		{"a status written from a stale view arrives", withAvailable(2), withAvailable(1), true},
		{"a change that leaves the status alone", withAvailable(1), relabelled, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, eventbatch.UpdatesWhere(statusChanged).Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}))
		})
	}
	assert.False(t, eventbatch.UpdatesWhere(statusChanged).Create(event.CreateEvent{Object: pcs}), "a creation is the For watch's")
}

func TestAScalingGroupsCountsAloneWakeThePodCliqueSetOnlyInItsBatch(t *testing.T) {
	group := func(change func(*grovev1alpha1.PodCliqueScalingGroup)) *grovev1alpha1.PodCliqueScalingGroup {
		g := &grovev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "llm-0-prefill", Generation: 2,
			Labels: map[string]string{grovev1alpha1.LabelPartOf: "llm"}},
			Status: grovev1alpha1.PodCliqueScalingGroupStatus{Replicas: 4, UpdatedReplicas: 1,
				Conditions: []metav1.Condition{{Type: grovev1alpha1.ConditionUpdateInProgress, Status: metav1.ConditionTrue, Reason: "Progressing"}}}}
		change(g)
		return g
	}
	same := func(*grovev1alpha1.PodCliqueScalingGroup) {}
	cases := []struct {
		name   string
		change func(*grovev1alpha1.PodCliqueScalingGroup)
		counts bool
	}{
		{"a count changed", func(g *grovev1alpha1.PodCliqueScalingGroup) { g.Status.UpdatedReplicas = 2 }, true},
		{"a condition's message changed", func(g *grovev1alpha1.PodCliqueScalingGroup) { g.Status.Conditions[0].Message = "2 of 4" }, true},
		{"its spec changed", func(g *grovev1alpha1.PodCliqueScalingGroup) { g.Generation = 3 }, false},
		{"a condition's status changed", func(g *grovev1alpha1.PodCliqueScalingGroup) { g.Status.Conditions[0].Status = metav1.ConditionFalse }, false},
		{"a condition added", func(g *grovev1alpha1.PodCliqueScalingGroup) {
			g.Status.Conditions = append(g.Status.Conditions, metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionTrue})
		}, false},
		{"a condition replaced by another type", func(g *grovev1alpha1.PodCliqueScalingGroup) {
			g.Status.Conditions[0].Type = grovev1alpha1.ConditionMinAvailableBreached
		}, false},
		{"a label changed", func(g *grovev1alpha1.PodCliqueScalingGroup) { g.Labels["x"] = "y" }, false},
		{"an annotation added", func(g *grovev1alpha1.PodCliqueScalingGroup) { g.Annotations = map[string]string{"x": "y"} }, false},
		{"its deletion began", func(g *grovev1alpha1.PodCliqueScalingGroup) { g.DeletionTimestamp = &metav1.Time{Time: now} }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := event.UpdateEvent{ObjectOld: group(same), ObjectNew: group(tc.change)}
			assert.Equal(t, tc.counts, groupCountsOnly.Update(e), "batched")
			assert.Equal(t, !tc.counts, predicate.Not(groupCountsOnly).Update(e), "taken at once")
		})
	}
	g := group(same)
	assert.False(t, groupCountsOnly.Delete(event.DeleteEvent{Object: g}), "a deletion is not batched")
	assert.True(t, predicate.Not(groupCountsOnly).Delete(event.DeleteEvent{Object: g}), "a deletion is taken at once")
}

func TestAScalingGroupsCliqueIsPromptToItsPodCliqueSetOnlyForWhatTheSetWaitsOn(t *testing.T) {
	clique := func(group string, ready int32, gen int64) *grovev1alpha1.PodClique {
		b := builders.PodClique("ns", "llm-0-c").Replicas(4, 4).Status(grovev1alpha1.PodCliqueStatus{ReadyReplicas: ready, ObservedGeneration: &gen, UpdatedReplicas: 4})
		if group != "" {
			b = b.Label(grovev1alpha1.LabelPodCliqueScalingGroup, group)
		}
		return b.Obj()
	}
	made := func(c *grovev1alpha1.PodClique, n int32) *grovev1alpha1.PodClique {
		c.Status.Replicas = n
		return c
	}
	cases := []struct {
		name     string
		old, new *grovev1alpha1.PodClique
		prompt   bool
	}{
		{"a standalone clique's new generation", clique("", 4, 1), clique("", 4, 2), true},
		{"a standalone clique's Ready pod below its minimum", clique("", 2, 1), clique("", 3, 1), true},
		{"a group's clique's new generation: its group takes the step", clique("llm-0-prefill", 4, 1), clique("llm-0-prefill", 4, 2), false},
		{"a group's clique's Ready pod below its minimum: its group takes the step", clique("llm-0-prefill", 2, 1), clique("llm-0-prefill", 3, 1), false},
		{"a group's clique reaching its minimum: its gang's pod group is Ready", clique("llm-0-prefill", 3, 1), clique("llm-0-prefill", 4, 1), true},
		{"a new group's clique with all its pods: its gang is Initialized", made(clique("llm-0-prefill", 0, 1), 3), made(clique("llm-0-prefill", 0, 1), 4), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.prompt, cliqueProgressed(tc.old, tc.new))
		})
	}
}
