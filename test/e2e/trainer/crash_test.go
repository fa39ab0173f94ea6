package trainere2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// Not parallel: it kills the trainer-controller the other tests share.
func TestDeadlineAndTTLFireOnTimeAfterTheControllerWasKilled(t *testing.T) {
	ns := cluster.Current.NewNamespace(t)
	newRuntime(t, ns, "forever", runtimeSpec(trainerv1alpha1.WorkloadKindPodCliqueSet, neverExit, nil, 0))
	newRuntime(t, ns, "ttl5", runtimeSpec(trainerv1alpha1.WorkloadKindJobSet, exit{"0", "1s"}, ptr.To[int32](5), 0))
	newRuntime(t, ns, "ttl20", runtimeSpec(trainerv1alpha1.WorkloadKindPodCliqueSet, exit{"0", "1s"}, ptr.To[int32](20), 0))

	expiring := trainJob(ns, "expiring", "ttl5", 1, nil, false)
	lasting := trainJob(ns, "lasting", "ttl20", 1, nil, false)
	create(t, expiring)
	create(t, lasting)
	expiringDone := waitCondition(t, expiring, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)
	lastingDone := waitCondition(t, lasting, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)
	deadlined := trainJob(ns, "deadlined", "forever", 2, ptr.To[int64](8), false)
	create(t, deadlined)
	waitRunningPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "deadlined"})

	trainer.Kill()
	killedAt := time.Now()
	// The deadline and the short TTL expire while nobody watches.
	cluster.SleepPast(get(t, deadlined).CreationTimestamp.Time, 8*time.Second)
	cluster.SleepPast(findCondition(expiringDone, trainerv1alpha1.TrainJobComplete).LastTransitionTime.Time, 5*time.Second)
	assert.Nil(t, finishedCondition(get(t, deadlined)))
	restarted, err := cluster.Current.StartBinary(binDir, "trainer-controller", "trainer-controller-restarted", config)
	require.NoError(t, err)
	trainer = restarted

	failed := waitCondition(t, deadlined, trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, trainerv1alpha1.TrainJobDeadlineExceededReason, 30*time.Second)
	// The new process leads once the killed one's lease expires; from then on it acts at once.
	lease := &coordinationv1.Lease{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: cluster.Namespace, Name: "trainer-controller-leader"}, lease))
	require.NotNil(t, lease.Spec.AcquireTime)
	leading := lease.Spec.AcquireTime.Time
	t.Logf("restarted controller leads %s after the kill", leading.Sub(killedAt).Round(100*time.Millisecond))
	assert.Less(t, findCondition(failed, trainerv1alpha1.TrainJobFailed).LastTransitionTime.Sub(leading), 2*time.Second, "an expired deadline acts at once after a restart")
	waitNoPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "deadlined"})
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s().Get(context.Background(), client.ObjectKeyFromObject(expiring), &trainerv1alpha1.TrainJob{}))
	}, 10*time.Second, 100*time.Millisecond, "an expired TTL acts at once after a restart")

	// A TTL still running at the restart fires at its own time, recomputed from the API.
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s().Get(context.Background(), client.ObjectKeyFromObject(lasting), &trainerv1alpha1.TrainJob{}))
	}, time.Minute, 100*time.Millisecond)
	deletedAfter := time.Since(findCondition(lastingDone, trainerv1alpha1.TrainJobComplete).LastTransitionTime.Time)
	assert.GreaterOrEqual(t, deletedAfter, 19*time.Second, "not before its TTL")
	assert.Less(t, deletedAfter, 24*time.Second, "on time")
}
