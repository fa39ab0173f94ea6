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

func coherent(p *grovev1alpha1.PodCliqueSet) {
	p.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: grovev1alpha1.CoherentStrategy}
}

// disaggregated is valid() with a router of 4 pods (minAvailable 2) and prefill of 3 replicas
// (minAvailable 2).
func disaggregated(p *grovev1alpha1.PodCliqueSet) {
	p.Spec.Template.Cliques[0].Spec.Replicas, p.Spec.Template.Cliques[0].Spec.MinAvailable = 4, ptr.To[int32](2)
	p.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas, p.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](3), ptr.To[int32](2)
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
		{name: "Coherent: each component's budget is its minAvailable",
			mutate: func(p *grovev1alpha1.PodCliqueSet) { coherent(p); disaggregated(p) }, wantRouter: budget(2), wantPrefill: budget(2)},
		{name: "Coherent: a deadline without maxUnavailable gets minAvailable",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				coherent(p)
				disaggregated(p)
				p.Spec.Template.Cliques[0].RollingUpdate = &grovev1alpha1.RollingUpdateConfiguration{ProgressDeadline: &metav1.Duration{Duration: time.Minute}}
			},
			wantRouter: &grovev1alpha1.RollingUpdateConfiguration{MaxUnavailable: ptr.To[int32](2), ProgressDeadline: &metav1.Duration{Duration: time.Minute}}, wantPrefill: budget(2)},
		{name: "Coherent: a budget below minAvailable on a new object is kept, for validation to refuse",
			mutate: func(p *grovev1alpha1.PodCliqueSet) {
				coherent(p)
				disaggregated(p)
				p.Spec.Template.Cliques[0].RollingUpdate = budget(1)
			}, wantRouter: budget(1), wantPrefill: budget(2)},
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
		{name: "Coherent: a budget of minAvailable up to replicas is valid", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			coherent(p)
			disaggregated(p)
			p.Spec.Template.Cliques[0].RollingUpdate = budget(4)
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate = budget(2)
		}},
		{name: "Coherent: maxUnavailable below a clique's minAvailable", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			coherent(p)
			disaggregated(p)
			p.Spec.Template.Cliques[0].RollingUpdate = budget(1)
		}, want: []string{"spec.template.cliques[0].rollingUpdate.maxUnavailable", "must not be less than minAvailable (2) under the Coherent update strategy"}},
		{name: "Coherent: maxUnavailable below a group's minAvailable", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			coherent(p)
			disaggregated(p)
			p.Spec.Template.Cliques[0].RollingUpdate = budget(2)
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].RollingUpdate = budget(1)
		}, want: []string{"spec.template.podCliqueScalingGroups[0].rollingUpdate.maxUnavailable", "must not be less than minAvailable (2)"}},
		{name: "Coherent: maxUnavailable above replicas", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			coherent(p)
			disaggregated(p)
			p.Spec.Template.Cliques[0].RollingUpdate = budget(5)
		}, want: []string{"spec.template.cliques[0].rollingUpdate.maxUnavailable", "must not be greater than replicas (4)"}},
		{name: "Coherent: an idle component's budget is not held against its 0 replicas", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			coherent(p)
			disaggregated(p)
			p.Spec.Template.Cliques[0].Spec.Replicas = 0
			p.Spec.Template.Cliques[0].RollingUpdate = budget(2)
		}},
		{name: "RollingRecreate: maxUnavailable below minAvailable is valid", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			disaggregated(p)
			p.Spec.Template.Cliques[0].RollingUpdate = budget(1)
		}},
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

func TestTurningCoherentRaisesTheBudgetsRollingRecreateDefaulted(t *testing.T) {
	for _, tc := range []struct {
		name       string
		stored     func(*grovev1alpha1.PodCliqueSet)
		wantRouter *grovev1alpha1.RollingUpdateConfiguration
	}{
		{name: "RollingRecreate's default is raised to minAvailable", stored: func(*grovev1alpha1.PodCliqueSet) {}, wantRouter: budget(2)},
		{name: "an update of a PodCliqueSet already Coherent keeps the budget, for validation to refuse", stored: coherent, wantRouter: budget(1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stored := valid()
			disaggregated(stored)
			tc.stored(stored)
			Default(stored, kubeOnly)
			stored.Spec.Template.Cliques[0].RollingUpdate = budget(1)
			pcs := stored.DeepCopy()
			coherent(pcs)

			DefaultUpdate(pcs, stored, kubeOnly)

			assert.Equal(t, tc.wantRouter, pcs.Spec.Template.Cliques[0].RollingUpdate)
		})
	}
}

func TestASwitchToCoherentIsRefusedFromOnDeleteOrDuringAnUpdate(t *testing.T) {
	updating := func(p *grovev1alpha1.PodCliqueSet) {
		p.Status.UpdateProgress = &grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: metav1.Now()}
	}
	ended := func(p *grovev1alpha1.PodCliqueSet) {
		updating(p)
		p.Status.UpdateProgress.UpdateEndedAt = ptr.To(metav1.Now())
	}
	for _, tc := range []struct {
		name     string
		from, to func(*grovev1alpha1.PodCliqueSet)
		refused  string
	}{
		{name: "RollingRecreate at rest to Coherent: its pods are adopted", from: ended, to: coherent},
		{name: "RollingRecreate never updated to Coherent", from: func(*grovev1alpha1.PodCliqueSet) {}, to: coherent},
		{name: "RollingRecreate updating to Coherent", from: updating, to: coherent, refused: "while an update is in progress"},
		{name: "OnDelete to Coherent", from: onDelete, to: coherent, refused: "cannot change from OnDelete to Coherent"},
		{name: "Coherent to RollingRecreate", from: coherent, to: func(p *grovev1alpha1.PodCliqueSet) { p.Spec.UpdateStrategy = nil }},
		{name: "Coherent to OnDelete", from: coherent, to: onDelete},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := valid()
			tc.from(old)
			pcs := old.DeepCopy()
			tc.to(pcs)

			errs := validateStrategySwitch(old, pcs)

			if tc.refused == "" {
				assert.Empty(t, errs)
				return
			}
			if assert.Len(t, errs, 1) {
				assert.Contains(t, errs[0].Error(), "spec.updateStrategy.type: Forbidden: ")
				assert.Contains(t, errs[0].Error(), tc.refused)
			}
		})
	}
}
