package podcliqueset

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/controllers/operator/coherent"
	"github.com/kubegrove/grove/test/builders"
)

// disaggregated is a Coherent PodCliqueSet of two replicas: a frontend of 3 pods (minAvailable 1)
// and a prefill group of 2 replicas (minAvailable 1) of a leader and a worker.
func disaggregated() *grovev1alpha1.PodCliqueSet {
	return builders.PodCliqueSet("ns", "inf").Replicas(2).Clique("frontend", 3, builders.MinAvailable(1)).Clique("leader", 1).Clique("worker", 1).
		ScalingGroup("prefill", 2, 1, "leader", "worker").UpdateStrategy(grovev1alpha1.CoherentStrategy).Obj()
}

// coherentWorld is what a pass of a Coherent PodCliqueSet observes once its first pass's
// PodGangMaps are recorded and its children made from them, every pod Ready.
func coherentWorld(t *testing.T, pcs *grovev1alpha1.PodCliqueSet) *observed {
	t.Helper()
	obs := world(pcs)
	obs.maps = map[string]*grovev1alpha1.PodGangMap{}
	first := decide(input{pcs: pcs, obs: obs, now: now})
	for _, c := range first.maps {
		m := c.obj.(*grovev1alpha1.PodGangMap)
		m.ResourceVersion = "1"
		obs.maps[m.Name] = m
	}
	obs.gangs = map[string]*schedulerv1alpha1.PodGang{}
	for i := range int(pcs.Spec.Replicas) {
		for _, g := range coherentGangs(pcs, i, obs.maps[grovev1alpha1.PodGangMapName(pcs.Name, i)].Spec.Entries, obs) {
			pg, _ := wantPodGang(pcs, i, g, obs.backend, obs)
			pg.ResourceVersion = "1"
			pg.Status.Conditions = []metav1.Condition{{Type: schedulerv1alpha1.ConditionReady, Status: metav1.ConditionTrue}}
			obs.gangs[pg.Name] = pg
			for _, m := range g.members {
				for k := m.from; k < m.from+m.replicas; k++ {
					pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: grovev1alpha1.PodHostname(m.name, int(k)), UID: types.UID(m.name + "-pod"),
						Labels: map[string]string{grovev1alpha1.LabelPodGang: g.name, grovev1alpha1.LabelPodClique: m.name}},
						Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
					obs.pods[m.name] = append(obs.pods[m.name], pod)
				}
			}
		}
	}
	hash := children.GenerationHash(pcs)
	pcs.Status.CurrentGenerationHash = &hash
	return obs
}

func TestACoherentReplicaIsLaidOutInItsPodGangMapBeforeItsGangsAreMade(t *testing.T) {
	pcs := disaggregated()
	obs := world(pcs)

	p := decide(input{pcs: pcs, obs: obs, now: now})

	require.Len(t, p.maps, 2, "one PodGangMap per replica, written before any child")
	m := p.maps[0].obj.(*grovev1alpha1.PodGangMap)
	assert.Equal(t, "inf-0", m.Name)
	epoch := coherent.NextEpoch(nil, now)
	assert.Equal(t, coherent.Bootstrap(components(pcs, 0, obs), children.GenerationHash(pcs), epoch), m.Spec.Entries)
	var gangs []string
	for _, c := range p.changes {
		if pg, ok := c.obj.(*schedulerv1alpha1.PodGang); ok && pg.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == "0" {
			gangs = append(gangs, pg.Name+" "+pg.Labels[grovev1alpha1.LabelPodGangRole])
		}
	}
	assert.Equal(t, []string{"inf-0-" + epoch + " Anchor", "inf-0-" + coherentEpochAfter(epoch, 1) + "-prefill-1 Tail"}, gangs)
	for _, pclq := range Initial(pcs).PodCliques {
		assert.NotContains(t, pclq.Labels, grovev1alpha1.LabelPodGang, "%s: a standalone clique's pods join the gangs its PodGangMap gives them", pclq.Name)
	}
}

func coherentEpochAfter(e string, k int) string {
	return coherent.Bootstrap([]coherent.Component{{Key: "g", Group: true, Replicas: 2, MinAvailable: 1}}, "h", e)[k].Epoch
}

func TestATemplateChangeUpdatesOneReplicaAtATimeByItsPlan(t *testing.T) {
	pcs := disaggregated()
	obs := coherentWorld(t, pcs)
	pcs.Spec.Template.Cliques[2].Spec.PodSpec.Containers[0].Image = "worker:v2" // prefill changed

	p := decide(input{pcs: pcs, obs: obs, now: now.Add(time.Minute)})

	require.NotNil(t, p.record, "the update's scope is recorded before anything is acted on")
	assert.Equal(t, []string{"prefill"}, p.record.UpdateProgress.InScopePodCliqueScalingGroups)
	assert.Empty(t, p.record.UpdateProgress.InScopeStandalonePodCliques, "the frontend did not change")
	require.NotNil(t, p.coherent)
	assert.Equal(t, 0, p.coherent.turn, "the lowest replica first")
	assert.Equal(t, coherent.AnchorStep, p.coherent.step.Step)
	require.Len(t, p.maps, 1, "only the replica in its turn takes a step")
	assert.Equal(t, "inf-0", p.maps[0].obj.GetName())
	for _, c := range p.changes {
		if c.verb == update {
			assert.Equal(t, "0", c.obj.GetLabels()[grovev1alpha1.LabelPodCliqueSetReplicaIndex], "%s %s: a waiting replica keeps its template", kindOf(c.obj), c.obj.GetName())
		}
	}
}

func TestAWaitingReplicaIsNotRemadeOnTheNewTemplate(t *testing.T) {
	pcs := disaggregated()
	obs := coherentWorld(t, pcs)
	pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "frontend:v2"
	delete(obs.cliques, "inf-1-frontend") // replica 1, waiting for its turn, lost a PodClique

	p := decide(input{pcs: pcs, obs: obs, now: now.Add(time.Minute)})

	for _, c := range p.changes {
		assert.False(t, c.verb == create && c.obj.GetName() == "inf-1-frontend", "made now, it would run the new template outside the plan")
	}
}

func TestTheReplicaBeingUpdatedKeepsItsSizesUntilItIsDone(t *testing.T) {
	pcs := disaggregated()
	obs := coherentWorld(t, pcs)
	pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "frontend:v2"
	pcs.Spec.Template.Cliques[0].Spec.Replicas = 5

	p := decide(input{pcs: pcs, obs: obs, now: now.Add(time.Minute)})

	updated := map[string]int32{}
	for _, c := range p.changes {
		if pclq, ok := c.obj.(*grovev1alpha1.PodClique); ok && strings.HasSuffix(pclq.Name, "-frontend") && c.verb == update {
			updated[pclq.Name] = pclq.Spec.Replicas
		}
	}
	assert.Equal(t, map[string]int32{"inf-0-frontend": 3}, updated, "replica 0 takes the new template at its old size; replica 1 waits")
}

// lastStepOfReplica0Recorded is a Coherent PodCliqueSet of two replicas whose worker template
// changed, with replica 0's last step recorded (its map at the new revision, its turn in status)
// and every pod Ready.
func lastStepOfReplica0Recorded(t *testing.T) (*grovev1alpha1.PodCliqueSet, *observed) {
	t.Helper()
	pcs := disaggregated()
	obs := coherentWorld(t, pcs)
	pcs.Spec.Template.Cliques[2].Spec.PodSpec.Containers[0].Image = "worker:v2"
	hash := children.GenerationHash(pcs)
	m := obs.maps["inf-0"].DeepCopy()
	for k := range m.Spec.Entries {
		m.Spec.Entries[k].PodCliqueSetGenerationHash = hash
	}
	obs.maps["inf-0"] = m
	pcs.Status.CurrentGenerationHash = &hash
	pcs.Status.UpdateProgress = &grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: metav1.NewTime(now),
		InScopePodCliqueScalingGroups: []string{"prefill"}, CurrentlyUpdating: []grovev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: 0}}}
	return pcs, obs
}

func TestACoherentStepFollowsFromReadyPodsBeforeTheirGangsConditionIsReadBack(t *testing.T) {
	pcs, obs := lastStepOfReplica0Recorded(t)
	// Replica 0's pods are Ready; the Ready condition this pass writes on its PodGangs is not in
	// the cache yet.
	for name, pg := range obs.gangs {
		if pg.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == "0" {
			obs.gangs[name].Status.Conditions = nil
		}
	}

	p := decide(input{pcs: pcs, obs: obs, now: now.Add(time.Minute)})

	require.NotNil(t, p.coherent)
	assert.Equal(t, 1, p.coherent.turn, "replica 0 is done: its gangs' pods are Ready")
	var ready []string
	for _, g := range p.gangStatus {
		if g.pg.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == "0" && meta.IsStatusConditionTrue(g.part.Conditions, schedulerv1alpha1.ConditionReady) {
			ready = append(ready, g.pg.Name)
		}
	}
	assert.NotEmpty(t, ready, "the same pass writes the Ready its step went by")
}

func TestTheNextReplicaWaitsUntilTheLastStepOfTheOneBeforeIsReady(t *testing.T) {
	pcs, obs := lastStepOfReplica0Recorded(t)
	// Replica 0's gangs' pods are not Ready yet (their PodGangs still say Ready: the step reads the
	// pods, not a condition written later).
	for _, pods := range obs.pods {
		for _, pod := range pods {
			if strings.HasPrefix(pod.Labels[grovev1alpha1.LabelPodGang], "inf-0-") {
				pod.Status.Conditions = nil
			}
		}
	}

	p := decide(input{pcs: pcs, obs: obs, now: now.Add(time.Minute)})

	require.NotNil(t, p.coherent)
	assert.Equal(t, 0, p.coherent.turn, "replica 0 keeps its turn while its last gangs are not Ready")
	assert.Contains(t, p.coherent.step.Waiting, "to be Ready")
	for _, c := range p.maps {
		assert.NotEqual(t, "inf-1", c.obj.GetName(), "replica 1 takes no step yet")
	}
	assert.Nil(t, p.record, "the turn recorded is kept: nothing to record")
}

func TestACliqueTheTemplateGainsComesUpInTheUpdatesStepsAndOneItLostLeavesTheGangs(t *testing.T) {
	pcs := disaggregated()
	obs := coherentWorld(t, pcs)
	pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, builders.PodCliqueSet("ns", "x").Clique("cache", 2, builders.MinAvailable(1)).Obj().Spec.Template.Cliques[0])
	delete(obs.cliques, "inf-0-frontend") // the template lost the frontend; its PodCliques are being deleted
	delete(obs.cliques, "inf-1-frontend")
	pcs.Spec.Template.Cliques = pcs.Spec.Template.Cliques[1:]

	p := decide(input{pcs: pcs, obs: obs, now: now.Add(time.Minute)})

	require.NotNil(t, p.record)
	assert.Equal(t, []string{"cache"}, p.record.UpdateProgress.InScopeStandalonePodCliques, "a clique the template gained is in the update's scope")
	for _, c := range p.maps {
		for _, e := range c.obj.(*grovev1alpha1.PodGangMap).Spec.Entries {
			assert.NotContains(t, e.PodCliques, c.obj.GetName()+"-frontend", "%s: a gang waits for no pod of a clique the template lost", c.obj.GetName())
		}
	}
	require.Len(t, p.maps, 2, "replica 0 takes its first step; replica 1's map only drops the frontend")
	var cache int32
	for _, e := range p.maps[0].obj.(*grovev1alpha1.PodGangMap).Spec.Entries {
		cache += e.PodCliques["inf-0-cache"]
	}
	assert.Equal(t, int32(1), cache, "the first step brings up minAvailable of the new clique")
	for _, e := range p.maps[1].obj.(*grovev1alpha1.PodGangMap).Spec.Entries {
		assert.NotContains(t, e.PodCliques, "inf-1-cache", "a waiting replica gains the clique in its own turn")
	}
}
