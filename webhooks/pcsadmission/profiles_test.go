package pcsadmission

import (
	"testing"

	"github.com/stretchr/testify/assert"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
)

func TestAnLPXDeploymentIsAdmittedWithTheLPXProfile(t *testing.T) {
	lpx := registryOf(configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{{Name: configv1alpha1.SchedulerNameLPX}}})
	external := registryOf(configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{
		{Name: "my-scheduler", Type: configv1alpha1.SchedulerProfileTypeExternal}}})
	for _, tc := range []struct {
		name      string
		registry  *backends.Registry[backends.Admitter]
		scheduler string
		topology  bool
		want      []string
	}{
		{name: "every clique names lpx-scheduler, as Dynamo's LPX deployments do", registry: lpx, scheduler: "lpx-scheduler"},
		{name: "without the profile it is refused, saying how to enable it", registry: kubeOnly, scheduler: "lpx-scheduler",
			want: []string{"spec.template.cliques[0].spec.podSpec.schedulerName", `scheduler backend "lpx-scheduler" is not enabled`}},
		{name: "a topology constraint under lpx-scheduler is refused with upstream's words", registry: lpx, scheduler: "lpx-scheduler", topology: true,
			want: []string{"spec.template.topologyConstraint", "lpx-scheduler does not support Grove topology constraints"}},
		{name: "an External profile admits its scheduler's name", registry: external, scheduler: "my-scheduler"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pcs := valid()
			for _, c := range pcs.Spec.Template.Cliques {
				c.Spec.PodSpec.SchedulerName = tc.scheduler
			}
			if tc.topology {
				pcs.Spec.Template.TopologyConstraint = &grovev1alpha1.TopologyConstraint{Pack: &grovev1alpha1.TopologyPackConstraint{Required: "rack"}}
			}

			errs := validateScheduler(pcs, tc.registry)

			if tc.want == nil {
				assert.Empty(t, errs)
				return
			}
			joined := errs.ToAggregate().Error()
			for _, w := range tc.want {
				assert.Contains(t, joined, w)
			}
		})
	}
}
