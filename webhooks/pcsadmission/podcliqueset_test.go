package pcsadmission

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
)

func clique(name string, replicas int32, after ...string) *grovev1alpha1.PodCliqueTemplateSpec {
	return &grovev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: grovev1alpha1.PodCliqueSpec{
		RoleName: name, Replicas: replicas, StartsAfter: after,
		PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: name, Image: "busybox"}}},
	}}
}

func valid() *grovev1alpha1.PodCliqueSet {
	return &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "inf", Namespace: "ns"},
		Spec: grovev1alpha1.PodCliqueSetSpec{Replicas: 2, Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			StartupType: ptr.To(grovev1alpha1.CliqueStartupTypeExplicit),
			Cliques:     []*grovev1alpha1.PodCliqueTemplateSpec{clique("router", 1), clique("leader", 1, "router"), clique("worker", 2, "leader")},
			PodCliqueScalingGroupConfigs: []grovev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "prefill", CliqueNames: []string{"leader", "worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1)},
			},
		}},
	}
}

var kaiEnabled = registryOf(configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{{Name: configv1alpha1.SchedulerNameKAI}}})

// kubeOnly is the registry of a configuration without profiles.
var kubeOnly = registryOf(configv1alpha1.SchedulerConfiguration{})

func registryOf(cfg configv1alpha1.SchedulerConfiguration) *backends.Registry[backends.Admitter] {
	r, err := backends.Admitters(cfg)
	if err != nil {
		panic(err)
	}
	return r
}

func TestValidationRejectsEachRuleWithItsFieldPath(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*grovev1alpha1.PodCliqueSet)
		paths  []string
	}{
		{"valid", func(*grovev1alpha1.PodCliqueSet) {}, nil},
		{"duplicate role", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[1].Spec.RoleName = "router" }, []string{"spec.template.cliques[1].spec.roleName"}},
		{"clique name not a DNS label (and so no longer found by its dependent)", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Name = "Router" },
			[]string{"spec.template.cliques[0].name", "spec.template.cliques[1].spec.startsAfter[0]"}},
		{"minAvailable above replicas", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[2].Spec.MinAvailable = ptr.To[int32](3) }, []string{"spec.template.cliques[2].spec.minAvailable"}},
		{"minAvailable zero", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](0) }, []string{"spec.template.cliques[0].spec.minAvailable"}},
		{"unknown startsAfter", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.StartsAfter = []string{"ghost"} }, []string{"spec.template.cliques[0].spec.startsAfter[0]"}},
		{"startsAfter self", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.StartsAfter = []string{"router"} }, []string{"spec.template.cliques[0].spec.startsAfter[0]"}},
		{"startsAfter repeated", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.StartsAfter = []string{"leader", "leader"}
		}, []string{"spec.template.cliques[2].spec.startsAfter[1]"}},
		{"startsAfter cycle", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.StartsAfter = []string{"worker"} }, []string{"spec.template.cliques"}},
		{"startsAfter without Explicit", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.StartupType = ptr.To(grovev1alpha1.CliqueStartupTypeAnyOrder)
		},
			[]string{"spec.template.cliques[1].spec.startsAfter", "spec.template.cliques[2].spec.startsAfter"}},
		{"startsAfterSucceeded in an inference workload", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.StartsAfterSucceeded = []string{"worker"}
		}, []string{"spec.template.cliques[1].spec.startsAfterSucceeded"}},
		{"startsAfterSucceeded repeats a startsAfter parent", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
			p.Spec.Template.Cliques[1].Spec.StartsAfterSucceeded = []string{"router"}
		}, []string{"spec.template.cliques[1].spec.startsAfterSucceeded[0]"}},
		{"startsAfterSucceeded cycle through startsAfter", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
			p.Spec.Template.Cliques[0].Spec.StartsAfterSucceeded = []string{"worker"}
		}, []string{"spec.template.cliques"}},
		{"group member unknown", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames[1] = "ghost"
		}, []string{"spec.template.podCliqueScalingGroups[0].cliqueNames[1]"}},
		{"group membership not exclusive", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs = append(p.Spec.Template.PodCliqueScalingGroupConfigs, grovev1alpha1.PodCliqueScalingGroupConfig{Name: "decode", CliqueNames: []string{"worker"}})
		}, []string{"spec.template.podCliqueScalingGroups[1].cliqueNames[0]"}},
		{"group name clashes with a clique", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.PodCliqueScalingGroupConfigs[0].Name = "router" }, []string{"spec.template.podCliqueScalingGroups[0].name"}},
		{"group member autoscaled on its own", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].Spec.ScaleConfig = &grovev1alpha1.AutoScalingConfig{MaxReplicas: 4}
		}, []string{"spec.template.cliques[2].spec.autoScalingConfig"}},
		{"group minAvailable above replicas", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](3)
		}, []string{"spec.template.podCliqueScalingGroups[0].minAvailable"}},
		{"autoscaling maxReplicas below replicas", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.Replicas = 3
			p.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovev1alpha1.AutoScalingConfig{MaxReplicas: 2}
		}, []string{"spec.template.cliques[0].spec.autoScalingConfig.maxReplicas"}},
		{"autoscaling minReplicas below minAvailable", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.Replicas, p.Spec.Template.Cliques[0].Spec.MinAvailable = 3, ptr.To[int32](2)
			p.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](1), MaxReplicas: 5}
		}, []string{"spec.template.cliques[0].spec.autoScalingConfig.minReplicas"}},
		{"group terminationDelay without a PodCliqueSet one", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TerminationDelay = &metav1.Duration{Duration: time.Minute}
		}, []string{"spec.template.podCliqueScalingGroups[0].terminationDelay"}},
		{"pod names over the DNS label budget", func(p *grovev1alpha1.PodCliqueSet) { p.Name = strings.Repeat("a", 45) }, []string{"spec.template.cliques[1].name", "spec.template.cliques[2].name"}},
		{"two scheduler backends", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.PodSpec.SchedulerName = "kai-scheduler"
		}, []string{"spec.template.cliques[1].spec.podSpec.schedulerName"}},
		{"unknown scheduler", func(p *grovev1alpha1.PodCliqueSet) {
			for _, c := range p.Spec.Template.Cliques {
				c.Spec.PodSpec.SchedulerName = "yunikorn"
			}
		}, []string{"spec.template.cliques[0].spec.podSpec.schedulerName", "spec.template.cliques[1].spec.podSpec.schedulerName", "spec.template.cliques[2].spec.podSpec.schedulerName"}},
		{"an unknown scheduler beside a known one: the mix, and the unknown one", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.SchedulerName = "yunikorn"
		}, []string{"spec.template.cliques[0].spec.podSpec.schedulerName", "spec.template.cliques[1].spec.podSpec.schedulerName"}},
		{"nodeName on create", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.PodSpec.NodeName = "n1" }, []string{"spec.template.cliques[0].spec.podSpec.nodeName"}},
		{"name not a DNS-1035 label (the headless Service could not be created)", func(p *grovev1alpha1.PodCliqueSet) { p.Name = "9lives" }, []string{"metadata.name"}},
		{"dotted name (pod hostnames would not be DNS labels)", func(p *grovev1alpha1.PodCliqueSet) { p.Name = "a.b" }, []string{"metadata.name"}},
		{"clique template label value over 63 characters", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Labels = map[string]string{"team": strings.Repeat("v", 64)}
		}, []string{"spec.template.cliques[0].labels"}},
		{"clique template annotation key that is no qualified name", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Annotations = map[string]string{"not a key": "v"}
		}, []string{"spec.template.cliques[1].annotations"}},
		{"success policy naming a clique that does not exist", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
			p.Spec.TrainingSpec = &grovev1alpha1.TrainingSpec{SuccessPolicy: &grovev1alpha1.TrainingSuccessPolicy{TargetCliques: []string{"router", "launcher"}}}
		}, []string{"spec.trainingSpec.successPolicy.targetCliques[1]"}},
		{"topologySpreadConstraints on create", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1}}
		}, []string{"spec.template.cliques[0].spec.podSpec.topologySpreadConstraints"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := valid()
			tc.mutate(pcs)
			errs, _ := ValidateCreate(pcs, kaiEnabled, Topology{})
			var got []string
			for _, e := range errs {
				got = append(got, e.Field)
			}
			assert.ElementsMatch(t, tc.paths, got, "%v", errs)
		})
	}
}

func TestAMixOfSchedulersIsRefusedNamingEveryOneOfThem(t *testing.T) {
	cases := []struct {
		name  string
		names []string
		want  string
	}{
		{"a known and an unknown scheduler", []string{"", "my-scheduler", "my-scheduler"},
			`all cliques must use one scheduler backend; this PodCliqueSet mixes kube-scheduler (cliques router) and "my-scheduler" (cliques leader, worker)`},
		{"an enabled backend and one that is not enabled", []string{"", "lpx-scheduler", "lpx-scheduler"},
			`all cliques must use one scheduler backend; this PodCliqueSet mixes kube-scheduler (cliques router) and lpx-scheduler (cliques leader, worker)`},
		{"two enabled backends", []string{"kai-scheduler", "", "default-scheduler"},
			`mixes kai-scheduler (cliques router) and kube-scheduler (cliques leader, worker)`},
		{"two spellings of one backend are no mix", []string{"", "default-scheduler", ""}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := valid()
			for i, c := range pcs.Spec.Template.Cliques {
				c.Spec.PodSpec.SchedulerName = tc.names[i]
			}
			errs, _ := ValidateCreate(pcs, kaiEnabled, Topology{})
			if tc.want == "" {
				for _, e := range errs {
					assert.NotContains(t, e.Detail, "one scheduler backend")
				}
				return
			}
			var details []string
			for _, e := range errs {
				details = append(details, e.Detail)
			}
			assert.Contains(t, strings.Join(details, "\n"), tc.want)
		})
	}
}

func TestSchedulerBackendMustBeEnabled(t *testing.T) {
	pcs := valid()
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = "kai-scheduler"
	}
	errs, _ := ValidateCreate(pcs, kubeOnly, Topology{})
	require.Len(t, errs, 3)
	assert.Contains(t, errs[0].Error(), `scheduler backend "kai-scheduler" is not enabled`)
}

func TestImmutableFieldsOnUpdate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*grovev1alpha1.PodCliqueSet)
		paths  []string
	}{
		{"image change is allowed", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "v2"
		}, nil},
		{"replicas change is allowed", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Replicas = 5 }, nil},
		{"roleName", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.RoleName = "gateway" }, []string{"spec.template.cliques[0].spec.roleName"}},
		{"minAvailable", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[2].Spec.MinAvailable = ptr.To[int32](1) }, []string{"spec.template.cliques[2].spec.minAvailable"}},
		{"startsAfter", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[2].Spec.StartsAfter = []string{"router"} }, []string{"spec.template.cliques[2].spec.startsAfter"}},
		{"schedulerName", func(p *grovev1alpha1.PodCliqueSet) {
			for _, c := range p.Spec.Template.Cliques {
				c.Spec.PodSpec.SchedulerName = "kai-scheduler"
			}
		}, []string{"spec.template.cliques[0].spec.podSpec.schedulerName", "spec.template.cliques[1].spec.podSpec.schedulerName", "spec.template.cliques[2].spec.podSpec.schedulerName"}},
		{"startup type", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.StartupType = ptr.To(grovev1alpha1.CliqueStartupTypeInOrder)
			p.Spec.Template.Cliques[1].Spec.StartsAfter, p.Spec.Template.Cliques[2].Spec.StartsAfter = nil, nil
		}, []string{"spec.template.cliqueStartupType", "spec.template.cliques[1].spec.startsAfter", "spec.template.cliques[2].spec.startsAfter"}},
		{"clique order under Explicit", func(p *grovev1alpha1.PodCliqueSet) {
			c := p.Spec.Template.Cliques
			c[0], c[1] = c[1], c[0]
		}, []string{"spec.template.cliques"}},
		{"clique added", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques = append(p.Spec.Template.Cliques, clique("extra", 1))
		}, []string{"spec.template.cliques[3].name"}},
		{"clique removed", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques = p.Spec.Template.Cliques[:2]
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"leader"}
		}, []string{"spec.template.cliques", "spec.template.podCliqueScalingGroups"}},
		{"scaling-group membership", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].CliqueNames = []string{"worker", "leader"}
		}, []string{"spec.template.podCliqueScalingGroups"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := valid()
			pcs := valid()
			tc.mutate(pcs)
			var got []string
			for _, e := range ValidateImmutable(old, pcs) {
				got = append(got, e.Field)
			}
			assert.ElementsMatch(t, tc.paths, got)
		})
	}
}

func TestCliqueMetadataIsCheckedOnUpdateOnlyWhereItChanged(t *testing.T) {
	bad := map[string]string{"team": strings.Repeat("v", 64)}
	old := valid()
	old.Spec.Template.Cliques[0].Labels = bad
	t.Run("an object stored with bad labels can still be updated", func(t *testing.T) {
		pcs := old.DeepCopy()
		pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Image = "v2"
		assert.Empty(t, validateCliqueMetadata(pcs, old))
	})
	t.Run("bad labels written by the update are refused", func(t *testing.T) {
		pcs := old.DeepCopy()
		pcs.Spec.Template.Cliques[1].Labels = bad
		errs := validateCliqueMetadata(pcs, old)
		require.Len(t, errs, 1)
		assert.Equal(t, "spec.template.cliques[1].labels", errs[0].Field)
	})
}

func TestDefaultsDependOnWorkloadTypeAndConfiguration(t *testing.T) {
	t.Run("inference gets no terminationDelay and the default backend's scheduler", func(t *testing.T) {
		pcs := valid()
		Default(pcs, kaiDefault())
		assert.Nil(t, pcs.Spec.Template.TerminationDelay)
		assert.Equal(t, "kai-scheduler", pcs.Spec.Template.Cliques[0].Spec.PodSpec.SchedulerName)
		assert.Equal(t, ptr.To[int32](2), pcs.Spec.Template.Cliques[2].Spec.MinAvailable)
		assert.True(t, pcs.Spec.Template.HeadlessServiceConfig.PublishNotReadyAddresses)
		assert.Empty(t, pcs.Spec.Template.Cliques[0].Spec.PodSpec.RestartPolicy)
	})
	t.Run("training gets terminationDelay 0 and restartPolicy Never", func(t *testing.T) {
		pcs := valid()
		pcs.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
		Default(pcs, kubeOnly)
		assert.Equal(t, &metav1.Duration{}, pcs.Spec.Template.TerminationDelay)
		assert.Equal(t, corev1.RestartPolicyNever, pcs.Spec.Template.Cliques[0].Spec.PodSpec.RestartPolicy)
		assert.Equal(t, "default-scheduler", pcs.Spec.Template.Cliques[0].Spec.PodSpec.SchedulerName)
	})
	t.Run("a clique without roleName takes its name, as upstream Grove's samples expect", func(t *testing.T) {
		pcs := valid()
		pcs.Spec.Template.Cliques[0].Spec.RoleName = "frontend"
		pcs.Spec.Template.Cliques[1].Spec.RoleName = ""
		Default(pcs, kubeOnly)
		assert.Equal(t, "leader", pcs.Spec.Template.Cliques[1].Spec.RoleName)
		assert.Equal(t, "frontend", pcs.Spec.Template.Cliques[0].Spec.RoleName, "a roleName given is kept")
	})
	t.Run("explicit values are kept and defaulting is idempotent", func(t *testing.T) {
		pcs := valid()
		pcs.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
		pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: time.Minute}
		pcs.Spec.Template.Cliques[0].Spec.PodSpec.RestartPolicy = corev1.RestartPolicyOnFailure
		Default(pcs, kubeOnly)
		once := pcs.DeepCopy()
		Default(pcs, kubeOnly)
		assert.Equal(t, once, pcs)
		assert.Equal(t, time.Minute, pcs.Spec.Template.TerminationDelay.Duration)
		assert.Equal(t, corev1.RestartPolicyOnFailure, pcs.Spec.Template.Cliques[0].Spec.PodSpec.RestartPolicy)
	})
}

func kaiDefault() *backends.Registry[backends.Admitter] {
	return registryOf(configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{
		{Name: configv1alpha1.SchedulerNameKAI, Default: true, Config: &runtime.RawExtension{Raw: []byte(`{"defaultQueue":"team-a"}`)}},
	}})
}

func TestTrainingWorkloadsCannotBeResizedRolledOrAutoscaled(t *testing.T) {
	training := func() *grovev1alpha1.PodCliqueSet {
		p := valid()
		p.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
		return p
	}
	t.Run("autoscaling rejected on create", func(t *testing.T) {
		p := training()
		p.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovev1alpha1.AutoScalingConfig{MaxReplicas: 3}
		p.Spec.Template.PodCliqueScalingGroupConfigs[0].ScaleConfig = &grovev1alpha1.AutoScalingConfig{MaxReplicas: 3}
		var got []string
		errs, _ := ValidateCreate(p, kaiEnabled, Topology{})
		for _, e := range errs {
			got = append(got, e.Field)
		}
		assert.ElementsMatch(t, []string{"spec.template.cliques[0].spec.autoScalingConfig", "spec.template.podCliqueScalingGroups[0].scaleConfig"}, got)
	})
	cases := []struct {
		name   string
		mutate func(*grovev1alpha1.PodCliqueSet)
		paths  []string
	}{
		{"replicas", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Replicas = 3 }, []string{"spec.replicas"}},
		{"clique replicas", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.Replicas = 2 }, []string{"spec.template.cliques[0].spec.replicas"}},
		{"pod template", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[1].Spec.PodSpec.Containers[0].Image = "v2"
		}, []string{"spec.template.cliques[1].spec.podSpec"}},
		{"group replicas", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To[int32](3)
		}, []string{"spec.template.podCliqueScalingGroups[0].replicas"}},
		{"inference is not affected", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.WorkloadType = grovev1alpha1.WorkloadTypeInference
			p.Spec.Replicas = 3
		}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := training()
			p := training()
			tc.mutate(p)
			if p.Spec.WorkloadType == grovev1alpha1.WorkloadTypeInference {
				old.Spec.WorkloadType = p.Spec.WorkloadType
			}
			var got []string
			for _, e := range validateTrainingUpdate(old, p) {
				got = append(got, e.Field)
			}
			assert.ElementsMatch(t, tc.paths, got)
		})
	}
}
