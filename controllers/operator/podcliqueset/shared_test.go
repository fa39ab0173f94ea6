package podcliqueset

import (
	"testing"

	"github.com/stretchr/testify/assert"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/test/builders"
)

// TestAPassNeverChangesTheChildrenItObserved: observe lists the PodCliques without copying them
// out of the informer cache, so decide must copy any child before it changes it. Each case plans
// updates of the children (a new template, a strategy switched to Coherent, which strips the gang
// labels its cliques were made with) and checks that what was observed is as it was.
func TestAPassNeverChangesTheChildrenItObserved(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pcs    func() *grovev1alpha1.PodCliqueSet
		change func(*grovev1alpha1.PodCliqueSet)
		// observed, when set, alters what the pass observes before it runs.
		observed func(*observed)
	}{
		{"a new template under RollingRecreate", func() *grovev1alpha1.PodCliqueSet {
			return builders.PodCliqueSet("ns", "inf").Replicas(2).Clique("frontend", 3, builders.MinAvailable(1)).Clique("leader", 1).Clique("worker", 1).
				ScalingGroup("prefill", 2, 1, "leader", "worker").Obj()
		}, func(pcs *grovev1alpha1.PodCliqueSet) {
			for _, c := range pcs.Spec.Template.Cliques {
				c.Spec.PodSpec.Containers[0].Image = "busybox:next"
			}
		}, nil},
		{"switched to Coherent", func() *grovev1alpha1.PodCliqueSet {
			return builders.PodCliqueSet("ns", "inf").Replicas(2).Clique("frontend", 3, builders.MinAvailable(1)).Clique("leader", 1).Clique("worker", 1).
				ScalingGroup("prefill", 2, 1, "leader", "worker").Obj()
		}, func(pcs *grovev1alpha1.PodCliqueSet) {
			pcs.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: grovev1alpha1.CoherentStrategy}
		}, nil},
		{"a new template under Coherent", disaggregated, func(pcs *grovev1alpha1.PodCliqueSet) {
			for _, c := range pcs.Spec.Template.Cliques {
				c.Spec.PodSpec.Containers[0].Image = "busybox:next"
			}
		}, nil},
		{"Coherent cliques still labelled with the gang they were made in", disaggregated, func(*grovev1alpha1.PodCliqueSet) {},
			func(obs *observed) {
				for _, c := range obs.cliques {
					c.Labels[grovev1alpha1.LabelPodGang] = "made-before"
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pcs := tc.pcs()
			obs := world(pcs)
			hash := children.GenerationHash(pcs)
			pcs.Status.CurrentGenerationHash = &hash
			tc.change(pcs)
			if tc.observed != nil {
				tc.observed(obs)
			}
			before := map[string]*grovev1alpha1.PodClique{}
			for name, c := range obs.cliques {
				before[name] = c.DeepCopy()
			}
			p := decide(input{pcs: pcs, obs: obs, now: now})
			assert.NotEmpty(t, p.changes, "the case plans changes")
			for name, c := range obs.cliques {
				assert.Equal(t, before[name], c, "%s is as observed", name)
			}
		})
	}
}
