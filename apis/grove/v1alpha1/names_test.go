package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNamesFollowTheDesignContract(t *testing.T) {
	cases := []struct{ got, want string }{
		{PodCliqueName("inference", 0, "router"), "inference-0-router"},
		{PodCliqueScalingGroupName("inference", 1, "prefill"), "inference-1-prefill"},
		{ScalingGroupPodCliqueName(PodCliqueScalingGroupName("inference", 1, "prefill"), 2, "worker"), "inference-1-prefill-2-worker"},
		{HeadlessServiceName("inference", 3), "inference-3"},
		{BasePodGangName("inference", 0), "inference-0"},
		{ScaledPodGangName(PodCliqueScalingGroupName("inference", 0, "prefill"), 3, 2), "inference-0-prefill-1"},
		{PodHostname("inference-0-router", 4), "inference-0-router-4"},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, tc.got)
	}
}

func TestNamesMayOverlapOnlyWhenOneNameExtendsTheOthersReplicaPrefix(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"a", "a-0-g", true},
		{"a-0-g", "a", true},
		{"a", "a-12", true},
		{"a", "a-x", false},
		{"a", "ab-0", false},
		{"a", "a-0x", false},
		{"a", "b", false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, NamesMayOverlap(tc.a, tc.b), "%s %s", tc.a, tc.b)
	}
}

func TestGeneratedNamesOfTwoOverlappingPodCliqueSetsShareNames(t *testing.T) {
	pcs := func(name string, groupReplicas int32) *PodCliqueSet {
		p := &PodCliqueSet{}
		p.Name, p.Spec.Replicas = name, 1
		p.Spec.Template.Cliques = []*PodCliqueTemplateSpec{{Name: "x"}}
		one := int32(1)
		p.Spec.Template.PodCliqueScalingGroupConfigs = []PodCliqueScalingGroupConfig{{Name: "g", CliqueNames: []string{"x"}, Replicas: &groupReplicas, MinAvailable: &one}}
		return p
	}
	a := GeneratedNames(pcs("a", 3))
	assert.Equal(t, []string{"a-0-g-0-x", "a-0-g-1-x", "a-0-g-2-x"}, a["PodClique"])
	assert.Equal(t, []string{"a-0", "a-0-g-0", "a-0-g-1"}, a["PodGang"])
	b := GeneratedNames(pcs("a-0-g", 1))
	assert.Contains(t, b["PodGang"], "a-0-g-0", "the base gang of a-0-g replica 0 is a's first scaled gang")
}

func TestGeneratedNameCountIsTheNumberOfGeneratedNames(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	cases := []struct {
		name string
		pcs  func(*PodCliqueSet)
	}{
		{"cliques only", func(p *PodCliqueSet) {
			p.Spec.Replicas = 3
			p.Spec.Template.Cliques = []*PodCliqueTemplateSpec{{Name: "a"}, {Name: "b"}}
		}},
		{"a scaling group with scaled gangs", func(p *PodCliqueSet) {
			p.Spec.Replicas = 2
			p.Spec.Template.Cliques = []*PodCliqueTemplateSpec{{Name: "r"}, {Name: "l"}, {Name: "w"}}
			p.Spec.Template.PodCliqueScalingGroupConfigs = []PodCliqueScalingGroupConfig{{Name: "g", CliqueNames: []string{"l", "w"}, Replicas: i32(4), MinAvailable: i32(2)}}
		}},
		{"defaults of a scaling group", func(p *PodCliqueSet) {
			p.Spec.Replicas = 1
			p.Spec.Template.Cliques = []*PodCliqueTemplateSpec{{Name: "x"}}
			p.Spec.Template.PodCliqueScalingGroupConfigs = []PodCliqueScalingGroupConfig{{Name: "g", CliqueNames: []string{"x"}}}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := &PodCliqueSet{}
			p.Name = "s"
			tc.pcs(p)
			total := 0
			for _, names := range GeneratedNames(p) {
				total += len(names)
			}
			assert.EqualValues(t, total, GeneratedNameCount(p))
		})
	}
}
