package trainjobadmission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

func TestCoschedulingOnThePodCliqueSetPathNeedsTheSchedulerPluginsBackendAndItsTimeout(t *testing.T) {
	runtimeWith := func(kind trainerv1alpha1.WorkloadKind, timeout *int32) *trainerv1alpha1.TrainingRuntimeSpec {
		rt := frameworkRuntime("rt", trainerv1alpha1.MLPolicySource{Torch: &trainerv1alpha1.TorchMLPolicySource{}}, "")
		rt.Spec.WorkloadKind = kind
		rt.Spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{PodGroupPolicySource: trainerv1alpha1.PodGroupPolicySource{
			Coscheduling: &trainerv1alpha1.CoschedulingPodGroupPolicySource{ScheduleTimeoutSeconds: timeout}}}
		return &rt.Spec
	}
	pcs, js := trainerv1alpha1.WorkloadKindPodCliqueSet, trainerv1alpha1.WorkloadKindJobSet
	cases := []struct {
		name    string
		backend *configv1alpha1.SchedulerPluginsConfig
		spec    *trainerv1alpha1.TrainingRuntimeSpec
		message string // empty: admitted
	}{
		{"JobSet path: Kubeflow's own PodGroup, no backend needed", nil, runtimeWith(js, ptr.To[int32](30)), ""},
		{"PodCliqueSet path without the backend", nil, runtimeWith(pcs, ptr.To[int32](60)), "the scheduler-plugins scheduler backend is not enabled"},
		{"Kubeflow's default timeout and the plugin's", &configv1alpha1.SchedulerPluginsConfig{}, runtimeWith(pcs, ptr.To[int32](60)), ""},
		{"the profile's timeout asked for", &configv1alpha1.SchedulerPluginsConfig{ScheduleTimeoutSeconds: ptr.To[int32](120)}, runtimeWith(pcs, ptr.To[int32](120)), ""},
		{"another timeout than the profile's", &configv1alpha1.SchedulerPluginsConfig{}, runtimeWith(pcs, ptr.To[int32](300)),
			"scheduleTimeoutSeconds is 300, and the PodCliqueSet path's gangs wait 60 s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := &TrainJobValidator{Coscheduling: tc.backend}
			tj := &trainerv1alpha1.TrainJob{Spec: trainerv1alpha1.TrainJobSpec{RuntimeRef: trainerv1alpha1.RuntimeRef{Name: "rt"}}}
			errs := v.validateCoscheduling(tj, tc.spec)
			if tc.message == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.Equal(t, "spec.runtimeRef.name", errs[0].Field)
			assert.Contains(t, errs[0].Detail, tc.message)
		})
	}
}
