package operatore2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// A Training workload of a standalone clique and a scaling group, with maxRestarts 1 and 2: each
// failed pod of the group is one restart that recreates every pod of the replica, standalone ones
// too, and is counted once; the failure past the budget makes the workload Failed with no pod left,
// and nothing is created after that.
func TestTrainingWithAScalingGroupCountsOneFailureOnce(t *testing.T) {
	t.Parallel()
	for _, budget := range []int32{1, 2} {
		t.Run(fmt.Sprintf("maxRestarts %d", budget), func(t *testing.T) {
			t.Parallel()
			trainingGroupFailures(t, budget)
		})
	}
}

func trainingGroupFailures(t *testing.T, budget int32) {
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	cl := func(name string) *grovev1alpha1.PodCliqueTemplateSpec {
		c := clique(name, 1)
		c.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever
		return c
	}
	pcs := &grovev1alpha1.PodCliqueSet{ObjectMeta: pcsMeta(ns, "tg"), Spec: grovev1alpha1.PodCliqueSetSpec{
		Replicas: 1, WorkloadType: grovev1alpha1.WorkloadTypeTraining, TrainingSpec: &grovev1alpha1.TrainingSpec{MaxRestarts: ptr.To(budget)},
		Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{cl("solo"), cl("lead"), cl("mem")},
			PodCliqueScalingGroupConfigs: []grovev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "grp", CliqueNames: []string{"lead", "mem"}, Replicas: ptr.To[int32](1), MinAvailable: ptr.To[int32](1)}},
		}}}
	require.NoError(t, k8s().Create(ctx, pcs))
	// running returns the workload's pods by name when exactly its 3 are Running (a failed read is
	// no answer: these run inside Eventually and Never, where require cannot stop the test).
	running := func() (map[string]types.UID, bool) {
		list := &corev1.PodList{}
		if k8s().List(ctx, list, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: "tg"}) != nil {
			return nil, false
		}
		out := map[string]types.UID{}
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp.IsZero() {
				out[p.Name] = p.UID
			}
		}
		return out, len(out) == 3 && len(list.Items) == 3
	}
	status := func() (grovev1alpha1.PodCliqueSetStatus, bool) {
		got := &grovev1alpha1.PodCliqueSet{}
		err := k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got)
		return got.Status, err == nil
	}
	var before map[string]types.UID
	require.Eventually(t, func() bool {
		var ok bool
		before, ok = running()
		return ok
	}, 2*time.Minute, 200*time.Millisecond, "3 pods Running")

	for n := int32(1); n <= budget; n++ {
		cluster.Current.FailPod(t, ns, "tg-0-grp-0-mem-0")
		require.Eventually(t, func() bool { st, ok := status(); return ok && st.RestartCount == n },
			time.Minute, 200*time.Millisecond, "failure %d is restart %d", n, n)
		var after map[string]types.UID
		require.Eventually(t, func() bool {
			var ok bool
			if after, ok = running(); !ok {
				return false
			}
			for name, uid := range before {
				if after[name] == uid {
					return false
				}
			}
			return true
		}, 2*time.Minute, 500*time.Millisecond, "every pod of the replica, the standalone one too, is recreated and Running")
		// What counted the failure twice did so within a second: watched for 5 s, not slept through.
		assert.Never(t, func() bool {
			st, ok := status()
			return ok && (st.RestartCount != n || st.Phase == grovev1alpha1.PodCliqueSetPhaseFailed)
		}, 5*time.Second, 200*time.Millisecond, "failure %d is not counted again", n)
		got := waitPhase(t, pcs, grovev1alpha1.PodCliqueSetPhaseRunning, 30*time.Second)
		assert.Equal(t, n, got.Status.RestartCount, "still %d restarts, not failed: %v", n, got.Status.Conditions)
		before = after
	}

	// Past the budget: Failed once every pod is gone (GREP-0285), and nothing is made again.
	cluster.Current.FailPod(t, ns, "tg-0-grp-0-mem-0")
	got := waitPhase(t, pcs, grovev1alpha1.PodCliqueSetPhaseFailed, 2*time.Minute)
	assert.Equal(t, budget, got.Status.RestartCount)
	c := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionFailed)
	require.NotNil(t, c)
	assert.Equal(t, grovev1alpha1.ReasonMaxRestartsExceeded, c.Reason)
	assert.Empty(t, listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "tg"}), "no pod is left once the phase says Failed")
	assert.Never(t, func() bool {
		pclqs, pods := &grovev1alpha1.PodCliqueList{}, &corev1.PodList{}
		return k8s().List(ctx, pclqs, client.InNamespace(ns)) == nil && k8s().List(ctx, pods, client.InNamespace(ns)) == nil &&
			len(pclqs.Items)+len(pods.Items) > 0
	}, 10*time.Second, 500*time.Millisecond, "no PodClique or pod is created after Failed")
}
