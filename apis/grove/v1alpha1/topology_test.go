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
