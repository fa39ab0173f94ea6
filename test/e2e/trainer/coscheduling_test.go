package trainere2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// TestCoschedulingTrainJobOnThePodCliqueSetPathIsPlacedByTheCoscheduler runs a TrainJob whose
// runtime gang-schedules with coscheduling (Kubeflow's default timeout) on the PodCliqueSet
// path: its pods name the scheduler-plugins scheduler, the scheduler-plugins backend keeps the
// PodGang's PodGroup, the real coscheduling scheduler places the gang, and the TrainJob
// completes. A runtime asking for another timeout than the backend's is refused naming it.
func TestCoschedulingTrainJobOnThePodCliqueSetPathIsPlacedByTheCoscheduler(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	spec := runtimeSpec(trainerv1alpha1.WorkloadKindPodCliqueSet, succeedAfter2s, nil, 0)
	spec.PodGroupPolicy = &trainerv1alpha1.PodGroupPolicy{PodGroupPolicySource: trainerv1alpha1.PodGroupPolicySource{
		Coscheduling: &trainerv1alpha1.CoschedulingPodGroupPolicySource{ScheduleTimeoutSeconds: ptr.To[int32](60)}}}
	newRuntime(t, ns, "cos", spec)
	tj := trainJob(ns, "cos", "cos", 3, nil, false)
	create(t, tj)

	sel := map[string]string{grovev1alpha1.LabelPartOf: tj.Name}
	require.Eventually(t, func() bool { return len(pods(t, ns, sel)) == 3 }, time.Minute, 200*time.Millisecond, "the gang's pods")
	for _, p := range pods(t, ns, sel) {
		assert.Equal(t, configv1alpha1.DefaultSchedulerPluginsSchedulerName, p.Spec.SchedulerName, p.Name)
	}
	group := &schedv1alpha1.PodGroup{}
	require.Eventually(t, func() bool {
		return k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "cos-0"}, group) == nil
	}, 30*time.Second, 200*time.Millisecond, "the PodGang's scheduler-plugins PodGroup")
	assert.Equal(t, int32(3), group.Spec.MinMember)
	waitCondition(t, tj, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)

	other := spec.DeepCopy()
	other.PodGroupPolicy.Coscheduling.ScheduleTimeoutSeconds = ptr.To[int32](300)
	newRuntime(t, ns, "cos-300", *other)
	err := k8s().Create(ctx, trainJob(ns, "cos-300", "cos-300", 3, nil, false))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.runtimeRef.name")
	assert.Contains(t, err.Error(), "scheduleTimeoutSeconds is 300, and the PodCliqueSet path's gangs wait 60 s")
}
