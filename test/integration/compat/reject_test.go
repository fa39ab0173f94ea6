package compatintegration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

func container(name string) corev1.Container {
	return corev1.Container{Name: name, Image: "busybox:1.36"}
}

func clique(name string, replicas int32) *grovev1alpha1.PodCliqueTemplateSpec {
	return &grovev1alpha1.PodCliqueTemplateSpec{
		Name: name,
		Spec: grovev1alpha1.PodCliqueSpec{
			RoleName: name,
			Replicas: replicas,
			PodSpec:  corev1.PodSpec{Containers: []corev1.Container{container(name)}},
		},
	}
}

// validPCS is the smallest PodCliqueSet the API server accepts; each case breaks one rule.
func validPCS(ns string) *grovev1alpha1.PodCliqueSet {
	return &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "pcs", Namespace: ns},
		Spec: grovev1alpha1.PodCliqueSetSpec{
			Replicas: 1,
			Template: grovev1alpha1.PodCliqueSetTemplateSpec{
				Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{clique("leader", 1), clique("worker", 2)},
			},
		},
	}
}

func TestInvalidPodCliqueSetsAreRejectedWithFieldPath(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	cases := []struct {
		name     string
		mutate   func(*grovev1alpha1.PodCliqueSet)
		wantPath string
		wantRule string
	}{
		{
			name:     "negative clique replicas",
			mutate:   func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Spec.Replicas = -1 },
			wantPath: "spec.template.cliques[0].spec.replicas",
			wantRule: "greater than or equal to 0",
		},
		{
			name:     "unknown workload type",
			mutate:   func(p *grovev1alpha1.PodCliqueSet) { p.Spec.WorkloadType = "Batch" },
			wantPath: "spec.workloadType",
			wantRule: `supported values: "Inference", "Training"`,
		},
		{
			name: "unknown clique startup type",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.Template.StartupType = ptr.To(grovev1alpha1.CliqueStartupType("Random"))
			},
			wantPath: "spec.template.cliqueStartupType",
			wantRule: "Unsupported value",
		},
		{
			name:     "clique minAvailable above replicas",
			mutate:   func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[1].Spec.MinAvailable = ptr.To[int32](3) },
			wantPath: "spec.template.cliques[1].spec.minAvailable",
			wantRule: "minAvailable must not exceed replicas",
		},
		{
			name: "trainingSpec on an inference workload",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.TrainingSpec = &grovev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](1)}
			},
			wantPath: "spec.trainingSpec",
			wantRule: "trainingSpec is only allowed with workloadType Training",
		},
		{
			name: "negative maxRestarts",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
				p.Spec.TrainingSpec = &grovev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](-1)}
			},
			wantPath: "spec.trainingSpec.maxRestarts",
			wantRule: "greater than or equal to 0",
		},
		{
			name:     "duplicate clique names",
			mutate:   func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[1].Name = "leader" },
			wantPath: "spec.template.cliques[1]",
			wantRule: "Duplicate value",
		},
		{
			name:     "clique name is not a DNS label",
			mutate:   func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].Name = "Leader_1" },
			wantPath: "spec.template.cliques[0].name",
			wantRule: "should match",
		},
		{
			name: "no cliques",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.Template.Cliques = []*grovev1alpha1.PodCliqueTemplateSpec{}
			},
			wantPath: "spec.template.cliques",
			wantRule: "should have at least 1 items",
		},
		{
			name: "scaling-group terminationDelay without a PodCliqueSet one",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.Template.PodCliqueScalingGroupConfigs = []grovev1alpha1.PodCliqueScalingGroupConfig{{
					Name: "sg", CliqueNames: []string{"worker"}, TerminationDelay: &metav1.Duration{Duration: time.Minute},
				}}
			},
			wantPath: "spec.template.podCliqueScalingGroups",
			wantRule: "requires spec.template.terminationDelay",
		},
		{
			name: "scaling-group minAvailable above replicas",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.Template.PodCliqueScalingGroupConfigs = []grovev1alpha1.PodCliqueScalingGroupConfig{{
					Name: "sg", CliqueNames: []string{"worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](3),
				}}
			},
			wantPath: "spec.template.podCliqueScalingGroups[0].minAvailable",
			wantRule: "minAvailable must not exceed replicas",
		},
		{
			name: "autoscaling minReplicas above maxReplicas",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.Template.Cliques[0].Spec.ScaleConfig = &grovev1alpha1.AutoScalingConfig{MinReplicas: ptr.To[int32](5), MaxReplicas: 2}
			},
			wantPath: "spec.template.cliques[0].spec.autoScalingConfig.minReplicas",
			wantRule: "minReplicas must not exceed maxReplicas",
		},
		{
			name: "topology constraint without pack",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.Template.TopologyConstraint = &grovev1alpha1.TopologyConstraint{TopologyName: "grove-topology"}
			},
			wantPath: "spec.template.topologyConstraint.pack",
			wantRule: "topologyConstraint must specify pack or deprecated packDomain", // upstream's TAS-22 wording
		},
		{
			name: "topology constraint with an empty pack",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.Template.TopologyConstraint = &grovev1alpha1.TopologyConstraint{TopologyName: "grove-topology", Pack: &grovev1alpha1.TopologyPackConstraint{}}
			},
			wantPath: "spec.template.topologyConstraint.pack",
			wantRule: "pack must specify at least one of required or preferred",
		},
		{
			name: "deprecated packDomain on a new PodCliqueSet",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.Template.TopologyConstraint = &grovev1alpha1.TopologyConstraint{TopologyName: "grove-topology", PackDomain: "host"}
			},
			wantPath: "spec.template.topologyConstraint.packDomain",
			wantRule: "packDomain is deprecated and cannot be used on new workloads; use pack.required",
		},
		{
			name: "deprecated packDomain beside pack.required",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.Template.TopologyConstraint = &grovev1alpha1.TopologyConstraint{TopologyName: "grove-topology", PackDomain: "host",
					Pack: &grovev1alpha1.TopologyPackConstraint{Required: "host"}}
			},
			wantPath: "spec.template.topologyConstraint.pack.required",
			wantRule: "must not set both pack.required and deprecated packDomain",
		},
		{
			name: "deprecated packDomain on a new clique",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.Template.Cliques[0].TopologyConstraint = &grovev1alpha1.TopologyConstraint{PackDomain: "host"}
			},
			wantPath: "spec.template.cliques",
			wantRule: "packDomain is deprecated and cannot be used on new workloads; use pack.required",
		},
		{
			name: "deprecated packDomain on a new scaling group",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.Template.PodCliqueScalingGroupConfigs = []grovev1alpha1.PodCliqueScalingGroupConfig{{
					Name: "sg", CliqueNames: []string{"worker"}, TopologyConstraint: &grovev1alpha1.TopologyConstraint{PackDomain: "host"},
				}}
			},
			wantPath: "spec.template.podCliqueScalingGroups",
			wantRule: "packDomain is deprecated and cannot be used on new workloads; use pack.required",
		},
		{
			name: "unknown update strategy",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: "Recreate"}
			},
			wantPath: "spec.updateStrategy.type",
			wantRule: "Unsupported value",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pcs := validPCS(ns)
			tc.mutate(pcs)
			err := dryRun(context.Background(), pcs)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantPath)
			assert.Contains(t, err.Error(), tc.wantRule)
		})
	}
	t.Run("the valid base is accepted", func(t *testing.T) {
		t.Parallel()
		require.NoError(t, dryRun(context.Background(), validPCS(ns)))
	})
}

func TestPodCliqueSetDefaultsAreAppliedByTheAPIServer(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	pcs := validPCS(ns)
	pcs.Spec.Template.HeadlessServiceConfig = &grovev1alpha1.HeadlessServiceConfig{}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovev1alpha1.PodCliqueScalingGroupConfig{{Name: "sg", CliqueNames: []string{"worker"}}}
	u := toUnstructured(t, pcs)
	// Drop fields a user would leave out, so the server's defaults show.
	delete(u.Object["spec"].(map[string]any), "replicas")
	delete(u.Object["spec"].(map[string]any)["template"].(map[string]any)["headlessServiceConfig"].(map[string]any), "publishNotReadyAddresses")
	require.NoError(t, env.Client.Create(context.Background(), u))

	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), got))
	assert.Equal(t, int32(1), got.Spec.Replicas)
	assert.Equal(t, grovev1alpha1.WorkloadTypeInference, got.Spec.WorkloadType)
	assert.Equal(t, ptr.To(grovev1alpha1.CliqueStartupTypeAnyOrder), got.Spec.Template.StartupType)
	assert.True(t, got.Spec.Template.HeadlessServiceConfig.PublishNotReadyAddresses)
	assert.Equal(t, ptr.To[int32](1), got.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas)
	assert.Equal(t, ptr.To[int32](1), got.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable)
	assert.Nil(t, got.Spec.Template.TerminationDelay, "inference gets no terminationDelay default")
}

func TestWorkloadTypeIsImmutable(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	pcs := validPCS(ns)
	require.NoError(t, env.Client.Create(context.Background(), pcs))
	pcs.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
	err := env.Client.Update(context.Background(), pcs)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.workloadType")
	assert.Contains(t, err.Error(), "workloadType is immutable")

	stored := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKeyFromObject(pcs), stored))
	assert.Equal(t, grovev1alpha1.WorkloadTypeInference, stored.Spec.WorkloadType, "the stored object is untouched")
}

func TestInvalidPodGangIsRejectedWithFieldPath(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	pg := &schedulerv1alpha1.PodGang{
		ObjectMeta: metav1.ObjectMeta{Name: "pg", Namespace: ns},
		Spec: schedulerv1alpha1.PodGangSpec{PodGroups: []schedulerv1alpha1.PodGroup{
			{Name: "a", MinReplicas: 1, PodReferences: []schedulerv1alpha1.NamespacedName{}},
			{Name: "b", MinReplicas: -1, PodReferences: []schedulerv1alpha1.NamespacedName{}},
		}},
	}
	err := dryRun(context.Background(), pg)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.podgroups[1].minReplicas")
	pg.Spec.PodGroups[1].MinReplicas = 1
	require.NoError(t, dryRun(context.Background(), pg))
}

// TestAStoredPackDomainStaysValid: packDomain is refused on new objects only, so an object that
// has it (stored before the rule, or added on update as upstream's rule allows) can still be
// updated.
func TestAStoredPackDomainStaysValid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := newNamespace(t)
	pcs := validPCS(ns)
	require.NoError(t, env.Client.Create(ctx, pcs))

	pcs.Spec.Template.TopologyConstraint = &grovev1alpha1.TopologyConstraint{TopologyName: "grove-topology", PackDomain: "host"}
	require.NoError(t, env.Client.Update(ctx, pcs), "an existing object may carry the deprecated field")
	pcs.Spec.Replicas = 2
	require.NoError(t, env.Client.Update(ctx, pcs), "and keeps being updatable with it")

	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(pcs), got))
	assert.Equal(t, grovev1alpha1.TopologyDomain("host"), got.Spec.Template.TopologyConstraint.RequiredDomain(), "honoured as pack.required")
}
