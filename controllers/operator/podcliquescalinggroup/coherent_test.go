package podcliquescalinggroup

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/controllers/operator/coherent"
)

func TestUnderCoherentTheGroupReplicasTheUpdateMovedTakeTheTemplateAndNoOthers(t *testing.T) {
	old := pcs()
	old.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: grovev1alpha1.CoherentStrategy}
	set := old.DeepCopy()
	set.Spec.Template.Cliques[2].Spec.PodSpec.Containers[0].Image = "worker:v2"
	// Replica 0 of the group was moved to the update's anchor (epoch 200); 1 and 2 are on the old tail.
	gangs := coherent.Gangs("inf", 0, []grovev1alpha1.PodGangEntry{
		{Epoch: "100", PodCliqueSetGenerationHash: children.GenerationHash(old), Role: grovev1alpha1.PodGangRoleTail, PCSGReplicaIndices: map[string][]int32{"prefill": {1, 2}}},
		{Epoch: "200", PodCliqueSetGenerationHash: children.GenerationHash(set), Role: grovev1alpha1.PodGangRoleAnchor, PCSGReplicaIndices: map[string][]int32{"prefill": {0}}},
	})
	oldGangs := coherent.Gangs("inf", 0, []grovev1alpha1.PodGangEntry{
		{Epoch: "100", PodCliqueSetGenerationHash: children.GenerationHash(old), Role: grovev1alpha1.PodGangRoleTail, PCSGReplicaIndices: map[string][]int32{"prefill": {0, 1, 2}}},
	})
	before := group(old, 3, 1).Obj()
	have := Members(old, before, 0, oldGangs)
	delete(have, "inf-0-prefill-0-worker") // one member of the moved replica is gone
	delete(have, "inf-0-prefill-2-worker") // one member of a replica still waiting is gone
	g := group(set, 3, 1).Obj()

	p := decideGroup(groupInput{pcs: set, pcsg: g, have: have, gangs: gangs, unseen: sets.New[string](), now: time.Now()})

	var updated, created []string
	for _, u := range p.updates {
		updated = append(updated, u.Name)
		assert.Equal(t, "inf-0-200", u.Labels[grovev1alpha1.LabelPodGang], "the moved replica joins the update's anchor")
	}
	for _, c := range p.creates {
		created = append(created, c.Name)
	}
	assert.Equal(t, []string{"inf-0-prefill-0-leader"}, updated)
	assert.Equal(t, []string{"inf-0-prefill-0-worker"}, created, "a replica still at the old revision is not recreated at the new one")
	assert.Empty(t, p.deletes)
}

func TestAGroupRemembersMembersAtTheirTemplateAndStillSeesWhatChanged(t *testing.T) {
	set := pcs()
	set.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: grovev1alpha1.CoherentStrategy}
	set.UID, set.Generation = "pcs-uid", 4
	gangs := coherent.Gangs("inf", 0, []grovev1alpha1.PodGangEntry{
		{Epoch: "100", PodCliqueSetGenerationHash: children.GenerationHash(set), Role: grovev1alpha1.PodGangRoleAnchor, PCSGReplicaIndices: map[string][]int32{"prefill": {0, 1}}},
	})
	g := group(set, 2, 1).Obj()
	have := Members(set, g, 0, gangs)
	for name, m := range have {
		m.UID, m.Generation = types.UID("uid-"+name), 3
	}
	specs := children.NewPodSpecs()
	pass := func() []string {
		p := decideGroup(groupInput{pcs: set, pcsg: g, have: have, gangs: gangs, unseen: sets.New[string](), now: time.Now(), podSpecs: specs})
		var updated []string
		for _, u := range p.updates {
			updated = append(updated, u.Name)
		}
		return updated
	}

	assert.Empty(t, pass(), "every member at its template")
	assert.Empty(t, pass(), "and found so again from what the group remembers")

	have["inf-0-prefill-1-leader"].Labels[grovev1alpha1.LabelPodGang] = "elsewhere"
	assert.Equal(t, []string{"inf-0-prefill-1-leader"}, pass(), "a label changed is seen")
	have["inf-0-prefill-1-leader"].Labels[grovev1alpha1.LabelPodGang] = "inf-0-100"

	have["inf-0-prefill-0-worker"].Spec.PodSpec.Containers[0].Image = "edited"
	have["inf-0-prefill-0-worker"].Generation++
	assert.Equal(t, []string{"inf-0-prefill-0-worker"}, pass(), "a pod template edited by hand (its generation moved) is brought back")
}
