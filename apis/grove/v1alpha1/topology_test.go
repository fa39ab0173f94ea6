package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTheDeprecatedPackDomainIsHonouredAsPackRequired(t *testing.T) {
	for _, tc := range []struct {
		name          string
		tc            *TopologyConstraint
		wantRequired  TopologyDomain
		wantPreferred TopologyDomain
	}{
		{name: "no constraint", tc: nil},
		{name: "pack.required", tc: &TopologyConstraint{Pack: &TopologyPackConstraint{Required: "rack", Preferred: "host"}}, wantRequired: "rack", wantPreferred: "host"},
		{name: "packDomain alone (stored by an older version)", tc: &TopologyConstraint{PackDomain: "rack"}, wantRequired: "rack"},
		{name: "packDomain with only a preferred pack", tc: &TopologyConstraint{PackDomain: "rack", Pack: &TopologyPackConstraint{Preferred: "host"}}, wantRequired: "rack", wantPreferred: "host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.wantRequired, tc.tc.RequiredDomain())
			assert.Equal(t, tc.wantPreferred, tc.tc.PreferredDomain())
		})
	}
}

func TestACountBelowMinAvailableGangsWhatItHas(t *testing.T) {
	two := int32(2)
	for _, tc := range []struct {
		name      string
		replicas  int32
		min       *int32
		want      int32
		wantGroup int32
	}{
		{name: "minAvailable within replicas", replicas: 3, min: &two, want: 2, wantGroup: 2},
		{name: "scaled below minAvailable: what runs is the gang (upstream's RS-1)", replicas: 1, min: &two, want: 1, wantGroup: 1},
		{name: "unset: all the clique's pods, one group replica", replicas: 3, want: 3, wantGroup: 1},
		{name: "idle: minAvailable is kept for when it comes back", replicas: 0, min: &two, want: 2, wantGroup: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pclq := &PodClique{Spec: PodCliqueObjectSpec{PodCliqueSpec: PodCliqueSpec{Replicas: tc.replicas, MinAvailable: tc.min}}}
			assert.Equal(t, tc.want, pclq.MinAvailableOrReplicas())
			group := &PodCliqueScalingGroupSpec{Replicas: tc.replicas, MinAvailable: tc.min}
			assert.Equal(t, tc.wantGroup, group.EffectiveMinAvailable())
		})
	}
}
