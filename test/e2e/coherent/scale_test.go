package coherent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// TestScalingAReplicaUnderACoherentUpdateIsRefusedThenApplied scales children of replica 0 while
// a Coherent update replaces it: the decode PodCliqueScalingGroup through its scale subresource
// (as kubectl scale and an autoscaler do) and by its spec.replicas, and the frontend PodClique
// through its scale subresource. Each is refused with 403 Forbidden and upstream Grove's message,
// which NVIDIA Dynamo matches to wait and retry. Once the update ended, the same scale of decode
// succeeds and the group reaches its new size, every pod Ready.
func TestScalingAReplicaUnderACoherentUpdateIsRefusedThenApplied(t *testing.T) {
	ns := cluster.Current.NewNamespace(t)
	withPool(t, ns, 1) // room for exactly one more group replica: decode's third
	pcs := deploy(t, disaggregated(ns, "scale", 1), 3*time.Minute)
	decode := pcsgRef(ns, grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, 0, "decode"))
	frontend := &grovev1alpha1.PodClique{}
	frontend.Namespace, frontend.Name = ns, grovev1alpha1.PodCliqueName(pcs.Name, 0, "frontend")
	prefix := fmt.Sprintf("spec.replicas changes are not allowed while a coherent update is in progress on PodCliqueSet %s/%s replica %d", ns, pcs.Name, 0)

	u := startUpdate(t, pcs, true, "pleader", "pworker", "dleader", "dworker")
	s := u.waitInFlight(t, 2*time.Minute)
	require.EqualValues(t, 0, s.replica, "replica 0 is being updated")
	for _, tc := range []struct {
		name  string
		scale func() error
	}{
		{"decode PodCliqueScalingGroup, scale subresource", func() error { return scaleSubresource(decode, decodeReplicas+1) }},
		{"decode PodCliqueScalingGroup, spec.replicas", func() error { return patchReplicas(decode, decodeReplicas+1) }},
		{"frontend PodClique, scale subresource", func() error { return scaleSubresource(frontend, frontendPods+1) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.scale()
			require.Error(t, err, "refused during the update")
			assert.True(t, apierrors.IsForbidden(err), "403 Forbidden: %v", err)
			assert.True(t, strings.HasPrefix(refusal(err), prefix), "the refusal begins with upstream's message %q: %q", prefix, refusal(err))
		})
	}
	require.True(t, inProgress(get(t, ns, pcs.Name)), "the scales were refused while the update was in progress")
	u.finish(t, 6*time.Minute)

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.NoError(c, scaleSubresource(decode, decodeReplicas+1))
	}, 30*time.Second, 250*time.Millisecond, "the same scale succeeds once the update ended")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got := &grovev1alpha1.PodCliqueScalingGroup{}
		if !assert.NoError(c, k8s().Get(context.Background(), client.ObjectKeyFromObject(decode), got)) {
			return
		}
		assert.EqualValues(c, decodeReplicas+1, got.Spec.Replicas, "decode's spec.replicas")
		comp := component{replica: 0, name: "decode", group: true, replicas: decodeReplicas + 1,
			members: []member{{"dleader", 1}, {"dworker", workersPerGroup}}}
		n := comp.count(pcs.Name, podMap(c, ns, pcs.Name), func(string, *corev1.Pod) bool { return false })
		assert.EqualValues(c, decodeReplicas+1, n.ready, "available decode replicas")
	}, 3*time.Minute, 250*time.Millisecond, "decode reaches %d replicas\n%s", decodeReplicas+1, lazy(func() string { return notReady(t, pcs) }))
}

// refusal is the reason an admission webhook gave for a refusal (the API server prefixes it with
// the webhook's name), else the error's message.
func refusal(err error) string {
	msg := err.Error()
	if status, ok := err.(apierrors.APIStatus); ok {
		msg = status.Status().Message
	}
	if _, reason, ok := strings.Cut(msg, "denied the request: "); ok {
		return reason
	}
	return msg
}

// patchReplicas merge-patches spec.replicas of obj.
func patchReplicas(obj client.Object, replicas int32) error {
	patch := client.RawPatch(types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)))
	return k8s().Patch(context.Background(), obj.DeepCopyObject().(client.Object), patch)
}

// inProgress reports an update that has not ended.
func inProgress(pcs *grovev1alpha1.PodCliqueSet) bool {
	up := pcs.Status.UpdateProgress
	return up != nil && up.UpdateEndedAt == nil
}
