package topologyconstraints

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

func pack(required, preferred string) *grovev1alpha1.TopologyConstraint {
	return &grovev1alpha1.TopologyConstraint{Pack: &grovev1alpha1.TopologyPackConstraint{
		Required: grovev1alpha1.TopologyDomain(required), Preferred: grovev1alpha1.TopologyDomain(preferred),
	}}
}

// clique is a clique template with replicas and, when minAvailable >= 0, a minAvailable.
func clique(name string, replicas, minAvailable int32) *grovev1alpha1.PodCliqueTemplateSpec {
	c := &grovev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: grovev1alpha1.PodCliqueSpec{Replicas: replicas}}
	if minAvailable >= 0 {
		c.Spec.MinAvailable = ptr.To(minAvailable)
	}
	return c
}

func TestAllReturnsEveryConstraintWithItsPathAndLevel(t *testing.T) {
	pcsTC, sgTC, cliqueTC := pack("zone", ""), pack("", "rack"), pack("host", "")
	pcs := &grovev1alpha1.PodCliqueSet{Spec: grovev1alpha1.PodCliqueSetSpec{Template: grovev1alpha1.PodCliqueSetTemplateSpec{
		TopologyConstraint: pcsTC,
		PodCliqueScalingGroupConfigs: []grovev1alpha1.PodCliqueScalingGroupConfig{
			{Name: "sg0", CliqueNames: []string{"a"}},
			{Name: "sg1", CliqueNames: []string{"b"}, TopologyConstraint: sgTC},
		},
		Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{
			clique("a", 1, -1),
			nil,
			{Name: "c", TopologyConstraint: cliqueTC},
		},
	}}}

	got := All(pcs)

	require.Len(t, got, 3)
	type summary struct {
		path  string
		level Level
		tc    *grovev1alpha1.TopologyConstraint
	}
	var sums []summary
	for _, c := range got {
		sums = append(sums, summary{c.Path.String(), c.Level, c.Constraint})
	}
	assert.Equal(t, []summary{
		{"spec.template.topologyConstraint", LevelPodCliqueSet, pcsTC},
		{"spec.template.podCliqueScalingGroups[1].topologyConstraint", LevelScalingGroup, sgTC},
		{"spec.template.cliques[2].topologyConstraint", LevelClique, cliqueTC},
	}, sums)
}

func TestAllIsEmptyWithoutConstraints(t *testing.T) {
	pcs := &grovev1alpha1.PodCliqueSet{Spec: grovev1alpha1.PodCliqueSetSpec{Template: grovev1alpha1.PodCliqueSetTemplateSpec{
		Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{clique("a", 1, -1)},
	}}}
	assert.Empty(t, All(pcs))
}

func TestRequiredAndPreferredReadPackDomains(t *testing.T) {
	cases := []struct {
		name                string
		tc                  *grovev1alpha1.TopologyConstraint
		required, preferred string
	}{
		{"nil constraint", nil, "", ""},
		{"no pack", &grovev1alpha1.TopologyConstraint{TopologyName: "t"}, "", ""},
		{"both", pack("zone", "host"), "zone", "host"},
		{"required only", pack("zone", ""), "zone", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.required, Required(tc.tc))
			assert.Equal(t, tc.preferred, Preferred(tc.tc))
		})
	}
}

func TestRequiredKeyAndPreferredKeyReadPodGangPackKeys(t *testing.T) {
	cases := []struct {
		name                string
		tc                  *schedulerv1alpha1.TopologyConstraint
		required, preferred string
	}{
		{"nil constraint", nil, "", ""},
		{"no pack", &schedulerv1alpha1.TopologyConstraint{}, "", ""},
		{"both", &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{
			Required: ptr.To("topology.kubernetes.io/zone"), Preferred: ptr.To("kubernetes.io/hostname"),
		}}, "topology.kubernetes.io/zone", "kubernetes.io/hostname"},
		{"preferred only", &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{
			Preferred: ptr.To("kubernetes.io/hostname"),
		}}, "", "kubernetes.io/hostname"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.required, RequiredKey(tc.tc))
			assert.Equal(t, tc.preferred, PreferredKey(tc.tc))
		})
	}
}

func TestMaxGangSizeIsTheLargerOfBaseGangAndOneScalingGroupReplica(t *testing.T) {
	cases := []struct {
		name    string
		cliques []*grovev1alpha1.PodCliqueTemplateSpec
		groups  []grovev1alpha1.PodCliqueScalingGroupConfig
		want    int32
	}{
		{
			name:    "standalone cliques sum their minAvailable, else replicas",
			cliques: []*grovev1alpha1.PodCliqueTemplateSpec{clique("a", 4, 2), clique("b", 3, -1), nil},
			want:    2 + 3,
		},
		{
			name:    "single pod is a gang of one",
			cliques: []*grovev1alpha1.PodCliqueTemplateSpec{clique("a", 1, -1)},
			want:    1,
		},
		{
			name: "scaling group minAvailable 2 of (1+2)-pod replicas plus a standalone clique of minAvailable 1",
			cliques: []*grovev1alpha1.PodCliqueTemplateSpec{
				clique("leader", 1, -1), clique("worker", 5, 2), clique("router", 3, 1),
			},
			groups: []grovev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "sg", CliqueNames: []string{"leader", "worker"}, Replicas: ptr.To[int32](4), MinAvailable: ptr.To[int32](2)},
			},
			want: 2*(1+2) + 1,
		},
		{
			name: "scaling group without minAvailable counts one replica in the base",
			cliques: []*grovev1alpha1.PodCliqueTemplateSpec{
				clique("leader", 1, -1), clique("worker", 2, -1), clique("router", 1, -1),
			},
			groups: []grovev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "sg", CliqueNames: []string{"leader", "worker"}, Replicas: ptr.To[int32](3)},
			},
			want: (1 + 2) + 1,
		},
		{
			name: "one scaling-group replica bigger than the base",
			cliques: []*grovev1alpha1.PodCliqueTemplateSpec{
				clique("leader", 1, -1), clique("worker", 8, 6), clique("router", 2, 1),
			},
			groups: []grovev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "sg", CliqueNames: []string{"leader", "worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](0)},
			},
			// base: 0 replicas of the group + router's 1 = 1; one replica: 1 + 6 = 7.
			want: 7,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := &grovev1alpha1.PodCliqueSet{Spec: grovev1alpha1.PodCliqueSetSpec{Template: grovev1alpha1.PodCliqueSetTemplateSpec{
				Cliques: tc.cliques, PodCliqueScalingGroupConfigs: tc.groups,
			}}}
			assert.Equal(t, tc.want, MaxGangSize(pcs))
		})
	}
}
