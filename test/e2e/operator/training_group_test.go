package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// A Training workload of a standalone clique and a scaling group (maxRestarts 1): one failed pod
// of the group is one restart that recreates every pod of the replica, standalone ones too, and
// the workload keeps running on its one restart.
func TestTrainingWithAScalingGroupCountsOneFailureOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	cl := func(name string) *grovev1alpha1.PodCliqueTemplateSpec {
		c := clique(name, 1)
		c.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever
		return c
	}
	pcs := &grovev1alpha1.PodCliqueSet{ObjectMeta: pcsMeta(ns, "tg"), Spec: grovev1alpha1.PodCliqueSetSpec{
		Replicas: 1, WorkloadType: grovev1alpha1.WorkloadTypeTraining, TrainingSpec: &grovev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](1)},
		Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{cl("solo"), cl("lead"), cl("mem")},
			PodCliqueScalingGroupConfigs: []grovev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "grp", CliqueNames: []string{"lead", "mem"}, Replicas: ptr.To[int32](1), MinAvailable: ptr.To[int32](1)}},
		}}}
	require.NoError(t, k8s().Create(ctx, pcs))
	uids := func() map[string]types.UID {
		out := map[string]types.UID{}
		for _, p := range waitRunning(t, ns, "tg", 3, 2*time.Minute) {
			out[p.Name] = p.UID
		}
		return out
	}
	before := uids()

	cluster.Current.FailPod(t, ns, "tg-0-grp-0-mem-0")
	require.Eventually(t, func() bool {
		got := &grovev1alpha1.PodCliqueSet{}
		return k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) == nil && got.Status.RestartCount == 1
	}, time.Minute, 200*time.Millisecond, "the failure is one restart")
	var after map[string]types.UID
	require.Eventually(t, func() bool {
		after = uids()
		for name, uid := range before {
			if after[name] == uid {
				return false
			}
		}
		return true
	}, 2*time.Minute, 500*time.Millisecond, "every pod of the replica, the standalone one too, is recreated")
	// What counted the failure twice did so within a second: watched for 5 s, not slept through.
	assert.Never(t, func() bool {
		got := &grovev1alpha1.PodCliqueSet{}
		return k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) == nil &&
			(got.Status.RestartCount != 1 || got.Status.Phase == grovev1alpha1.PodCliqueSetPhaseFailed)
	}, 5*time.Second, 200*time.Millisecond, "the one failure is not counted again")
	got := waitPhase(t, pcs, grovev1alpha1.PodCliqueSetPhaseRunning, 30*time.Second)
	assert.Equal(t, int32(1), got.Status.RestartCount, "still one restart, not failed: %v", got.Status.Conditions)

	// What happens at the second failure (Failed, then nothing created again) is unit-tested in
	// controllers/operator/podcliqueset (restart_test.go): in one full e2e run under load it did not
	// reach Failed within a minute, which is not understood yet.
}
