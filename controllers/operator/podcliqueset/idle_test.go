package podcliqueset

import (
	"testing"

	"github.com/stretchr/testify/assert"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func TestAnIdleComponentHasNoPodGroupInItsGang(t *testing.T) {
	members := func(gs []gang) map[string][]string {
		out := map[string][]string{}
		for _, g := range gs {
			for _, m := range g.members {
				out[g.name] = append(out[g.name], m.name)
			}
			if len(g.members) == 0 {
				out[g.name] = nil
			}
		}
		return out
	}
	idleRouter := samplePCS()
	idleRouter.Spec.Template.Cliques[0].Spec.Replicas = 0
	onlyRouter := builders.PodCliqueSet("ns", "inf").Clique("router", 0).Obj()
	cases := []struct {
		name   string
		pcs    *grovev1alpha1.PodCliqueSet
		groups map[string]int32
		want   map[string][]string
	}{
		{"a standalone clique at 0", idleRouter, nil, map[string][]string{
			"inf-0":           {"inf-0-prefill-0-leader", "inf-0-prefill-0-worker", "inf-0-prefill-1-leader", "inf-0-prefill-1-worker"},
			"inf-0-prefill-0": {"inf-0-prefill-2-leader", "inf-0-prefill-2-worker"},
		}},
		{"a scaling group scaled to 0", samplePCS(), map[string]int32{"inf-0-prefill": 0}, map[string][]string{"inf-0": {"inf-0-router"}}},
		{"every component idle: no gang at all", onlyRouter, nil, map[string][]string{}},
		{"back from 0: in its gang again", samplePCS(), map[string]int32{"inf-0-prefill": 1}, map[string][]string{
			"inf-0": {"inf-0-router", "inf-0-prefill-0-leader", "inf-0-prefill-0-worker"},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := emptyObserved()
			for name, n := range tc.groups {
				obs.groups[name] = &grovev1alpha1.PodCliqueScalingGroup{Spec: grovev1alpha1.PodCliqueScalingGroupSpec{Replicas: n}}
			}
			assert.Equal(t, tc.want, members(wantedGangs(tc.pcs, 0, obs)))
		})
	}
}

func TestAnIdleCliqueCountsAsAvailable(t *testing.T) {
	pcs := builders.PodCliqueSet("ns", "inf").Clique("router", 1).Clique("cache", 0).Obj()
	obs := emptyObserved()
	obs.cliques["inf-0-router"] = builders.PodClique("ns", "inf-0-router").OfReplica("inf", "0").Replicas(1, 1).Ready(1).Obj()
	obs.cliques["inf-0-cache"] = builders.PodClique("ns", "inf-0-cache").OfReplica("inf", "0").Replicas(0, 1).Obj()
	_, available, _ := countReplicas(pcs, obs, newRollout(pcs))
	assert.Equal(t, int32(1), available)
}
