package pcsadmission

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

func budget(maxUnavailable int32) *grovev1alpha1.RollingUpdateConfiguration {
	return &grovev1alpha1.RollingUpdateConfiguration{MaxUnavailable: ptr.To(maxUnavailable)}
}

func onDelete(p *grovev1alpha1.PodCliqueSet) {
	p.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: grovev1alpha1.OnDeleteStrategy}
}

func TestRollingUpdateBudgetsAreDefaultedAsUpstreamDefaultsThem(t *testing.T) {
	for _, tc := range []struct {
		name        string
		mutate      func(*grovev1alpha1.PodCliqueSet)
		wantRouter  *grovev1alpha1.RollingUpdateConfiguration
		wantPrefill *grovev1alpha1.RollingUpdateConfiguration
	}{
		{name: "RollingRecreate: standalone cliques and scaling groups get maxUnavailable 1",
			mutate: func(*grovev1alpha1.PodCliqueSet) {}, wantRouter: budget(1), wantPrefill: budget(1)},
		{name: "a budget the user wrote is kept",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				p.Spec.Template.Cliques[0].RollingUpdate = budget(3)
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate = &grovev1alpha1.RollingUpdateConfiguration{ProgressDeadline: &metav1.Duration{Duration: time.Minute}}
			},
			wantRouter: budget(3), wantPrefill: &grovev1alpha1.RollingUpdateConfiguration{MaxUnavailable: ptr.To[int32](1), ProgressDeadline: &metav1.Duration{Duration: time.Minute}}},
		{name: "OnDelete: nothing is defaulted", mutate: onDelete},
		{name: "OnDelete: the default an earlier RollingRecreate left is cleared",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				onDelete(p)
				p.Spec.Template.Cliques[0].RollingUpdate = budget(1)
				p.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate = budget(1)
			}},
		{name: "OnDelete: a budget the user chose is kept, for validation to refuse",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				onDelete(p)
				p.Spec.Template.Cliques[0].RollingUpdate = budget(2)
			}, wantRouter: budget(2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pcs := valid()
			tc.mutate(pcs)

			Default(pcs, kubeOnly)

			assert.Equal(t, tc.wantRouter, pcs.Spec.Template.Cliques[0].RollingUpdate, "standalone clique router")
			assert.Nil(t, pcs.Spec.Template.Cliques[1].RollingUpdate, "a scaling group's member gets no budget of its own")
			assert.Equal(t, tc.wantPrefill, pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate, "scaling group prefill")
		})
	}
}

func TestRollingUpdateBudgetsAreRefusedWithTheirFieldPath(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*grovev1alpha1.PodCliqueSet)
		want   []string
	}{
		{name: "budgets on standalone cliques and groups are valid", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].RollingUpdate = &grovev1alpha1.RollingUpdateConfiguration{MaxUnavailable: ptr.To[int32](2), ProgressDeadline: &metav1.Duration{Duration: time.Minute}}
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate = budget(1)
		}},
		{name: "maxUnavailable 0", mutate: func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].RollingUpdate = budget(0) },
			want: []string{"spec.template.cliques[0].rollingUpdate.maxUnavailable", "must be greater than 0"}},
		{name: "a negative maxUnavailable on a group", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate = budget(-1)
		}, want: []string{"spec.template.podCliqueScalingGroups[0].rollingUpdate.maxUnavailable", "must be greater than 0"}},
		{name: "a budget on a scaling group's member clique", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[2].RollingUpdate = budget(1)
		}, want: []string{"spec.template.cliques[2].rollingUpdate", "member of a podCliqueScalingGroup"}},
		{name: "any budget under OnDelete", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			onDelete(p)
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate = budget(2)
		}, want: []string{"spec.template.podCliqueScalingGroups[0].rollingUpdate", "OnDelete"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pcs := valid()
			tc.mutate(pcs)

			errs := validateRollingUpdate(pcs)

			if tc.want == nil {
				assert.Empty(t, errs)
				return
			}
			if assert.Len(t, errs, 1) {
				for _, want := range tc.want {
					assert.Contains(t, errs[0].Error(), want)
				}
			}
		})
	}
}
