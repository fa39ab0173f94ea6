package podcliqueset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/test/builders"
)

// TestAPassNeverChangesTheChildrenItObserved: observe lists the PodCliques and PodGangs without
// copying them out of the informer cache, so decide must copy any child before it changes it.
// Each case plans updates of the children (a new template, a strategy switched to Coherent, which
// strips the gang labels its cliques were made with, a gang's members scaled or its labels gone,
// a replica less) and checks that what was observed is as it was.
func TestAPassNeverChangesTheChildrenItObserved(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pcs    func() *grovev1alpha1.PodCliqueSet
		change func(*grovev1alpha1.PodCliqueSet)
		// observed, when set, alters what the pass observes before it runs.
		observed func(*observed)
	}{
		{"a new template under RollingRecreate", rollingRecreate, func(pcs *grovev1alpha1.PodCliqueSet) {
			for _, c := range pcs.Spec.Template.Cliques {
				c.Spec.PodSpec.Containers[0].Image = "busybox:next"
			}
		}, nil},
		{"switched to Coherent", rollingRecreate, func(pcs *grovev1alpha1.PodCliqueSet) {
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
		{"a gang's members scaled by kubectl", rollingRecreate, func(*grovev1alpha1.PodCliqueSet) {},
			func(obs *observed) {
				for _, c := range obs.cliques {
					c.Spec.Replicas++
				}
			}},
		{"gangs without the labels the pass sets", rollingRecreate, func(*grovev1alpha1.PodCliqueSet) {},
			func(obs *observed) {
				for _, pg := range obs.gangs {
					delete(pg.Labels, grovev1alpha1.LabelSchedulerName)
				}
			}},
		{"a replica less under Coherent", disaggregated, func(pcs *grovev1alpha1.PodCliqueSet) { pcs.Spec.Replicas-- }, nil},
		{"a replica less", rollingRecreate, func(pcs *grovev1alpha1.PodCliqueSet) { pcs.Spec.Replicas-- }, nil},
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
			cliques, gangs := map[string]*grovev1alpha1.PodClique{}, map[string]*schedulerv1alpha1.PodGang{}
			for name, c := range obs.cliques {
				cliques[name] = c.DeepCopy()
			}
			for name, pg := range obs.gangs {
				gangs[name] = pg.DeepCopy()
			}
			p := decide(input{pcs: pcs, obs: obs, now: now})
			assert.NotEmpty(t, append(p.changes, p.deletes...), "the case plans writes")
			for name, c := range obs.cliques {
				assert.Equal(t, cliques[name], c, "%s is as observed", name)
			}
			require.NotEmpty(t, obs.gangs)
			for name, pg := range obs.gangs {
				assert.Equal(t, gangs[name], pg, "%s is as observed", name)
			}
		})
	}
}

// rollingRecreate is a PodCliqueSet of two replicas, each a standalone clique and a scaling group
// of two replicas (one in the base gang, one in a gang of its own), updated by RollingRecreate.
func rollingRecreate() *grovev1alpha1.PodCliqueSet {
	return builders.PodCliqueSet("ns", "inf").Replicas(2).Clique("frontend", 3, builders.MinAvailable(1)).Clique("leader", 1).Clique("worker", 1).
		ScalingGroup("prefill", 2, 1, "leader", "worker").Obj()
}
