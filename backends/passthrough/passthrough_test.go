package passthrough

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func TestAPassThroughBackendHandsPodsOverAndMakesNothing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		backend  *Backend
		wantName string
		wantGang bool
	}{
		{"upstream's lpx-scheduler profile", LPX(), "lpx-scheduler", true},
		{"an External profile, placing pods one by one", New("my-scheduler", configv1alpha1.ExternalSchedulerConfig{}), "my-scheduler", false},
		{"an External gang scheduler", New("gangs", configv1alpha1.ExternalSchedulerConfig{GangScheduling: true}), "gangs", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{}
			tc.backend.PreparePod(pod)
			assert.Equal(t, tc.wantName, pod.Spec.SchedulerName)
			assert.Equal(t, tc.wantGang, tc.backend.GangScheduling())

			reason, msg, err := tc.backend.SyncPodGang(context.Background(), &schedulerv1alpha1.PodGang{})
			require.NoError(t, err)
			assert.Equal(t, ReasonPassThrough, reason, "acknowledged at once")
			assert.Contains(t, msg, tc.wantName)
			objs, err := tc.backend.BuildObjects(&schedulerv1alpha1.PodGang{}, nil)
			require.NoError(t, err)
			assert.Empty(t, objs)
			assert.Empty(t, tc.backend.OwnedTypes())
		})
	}
}

func TestTopologyConstraintsAreRefusedAtEveryLevel(t *testing.T) {
	tc := &grovev1alpha1.TopologyConstraint{}
	for _, c := range []struct {
		name     string
		mutate   func(*grovev1alpha1.PodCliqueSet)
		wantPath string
	}{
		{"none", func(*grovev1alpha1.PodCliqueSet) {}, ""},
		{"PodCliqueSet, even empty", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.TopologyConstraint = tc }, "spec.template.topologyConstraint"},
		{"clique", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[1].TopologyConstraint = tc }, "spec.template.cliques[1].topologyConstraint"},
		{"scaling group", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc
		}, "spec.template.podCliqueScalingGroups[0].topologyConstraint"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pcs := builders.PodCliqueSet("ns", "lpx").Clique("frontend", 1).Clique("worker", 2).ScalingGroup("sg", 1, 1, "worker").Obj()
			c.mutate(pcs)

			errs := LPX().ValidatePodCliqueSet(pcs)

			if c.wantPath == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.Equal(t, c.wantPath, errs[0].Field)
			assert.Contains(t, errs[0].Detail, "lpx-scheduler does not support Grove topology constraints; placement topology must be expressed through the LPX workload contract")
		})
	}
}
