package kueuee2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// Nothing of an admission lives in a binary's memory: with the grove-operator and the
// backend-controller killed while a gang waits in the queue, and the gang holding the quota deleted
// while they are down (its pods keep Kueue's finalizer until the restarted operator releases it), the
// restarted binaries pick up from the cluster — the same Workload (never a second one), the gang's
// pods run, QueueAdmitted turns True — and a gang created while they were down gets its Workload and
// waits its turn. The queue is StrictFIFO: the quota frees in the instant the binaries return, and
// under BestEffortFIFO Kueue may then admit the newer Workload first, which is Kueue's order to
// choose, not what this test is about.
func TestKilledOperatorAndBackendControllerResumeAnAdmissionFromTheCluster(t *testing.T) {
	ctx := context.Background()
	ns := queueWithGPUs(t, "crash-8", 8, strictFIFO)
	require.NoError(t, k8s().Create(ctx, gpuPCS(ns, "holder", "crash-8", 2, 4)))
	waitRunning(t, ns, "holder", 2, 2*time.Minute)
	require.NoError(t, k8s().Create(ctx, gpuPCS(ns, "waiter", "crash-8", 2, 4)))
	waitHeldByKueue(t, ns, "waiter", 2)
	waitQueueAdmitted(t, ns, "waiter", metav1.ConditionFalse, schedulerv1alpha1.ReasonQueuePending, time.Minute)
	before := &kueuev1beta2.Workload{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "waiter-0"}, before))

	operator.Kill()
	backend.Kill()
	require.NoError(t, k8s().Delete(ctx, &grovev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "holder"}}))
	require.NoError(t, k8s().Create(ctx, gpuPCS(ns, "latecomer", "crash-8", 2, 4)))
	// The garbage collector takes the holder's children while the binaries are down; its pods
	// stay, terminating, on Kueue's finalizer.
	eventually(t, time.Minute, func() (bool, string) {
		cliques := &grovev1alpha1.PodCliqueList{}
		require.NoError(t, k8s().List(ctx, cliques, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: "holder"}))
		left := pods(t, ns, "holder")
		msg := fmt.Sprintf("waiting for the holder's PodCliques to go (%d left) and its pods to terminate; saw %s", len(cliques.Items), describe(left))
		if len(cliques.Items) > 0 {
			return false, msg
		}
		for _, p := range left {
			if p.DeletionTimestamp.IsZero() {
				return false, msg
			}
		}
		return true, ""
	})

	var err error
	operator, err = cluster.Current.StartBinary(binDir, "grove-operator", "grove-operator-restarted", config)
	require.NoError(t, err)
	backend, err = cluster.Current.StartBinary(binDir, "backend-controller", "backend-controller-restarted", config, "--backend=kube-scheduler")
	require.NoError(t, err)

	waitRunning(t, ns, "waiter", 2, 2*time.Minute)
	waitQueueAdmitted(t, ns, "waiter", metav1.ConditionTrue, grovev1alpha1.ReasonAllGangsAdmitted, time.Minute)
	after := &kueuev1beta2.Workload{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "waiter-0"}, after))
	assert.Equal(t, before.UID, after.UID, "the waiting gang keeps the Workload it queued with")

	waitHeldByKueue(t, ns, "latecomer", 2)
	waitQueueAdmitted(t, ns, "latecomer", metav1.ConditionFalse, schedulerv1alpha1.ReasonQueuePending, time.Minute)
	list := &kueuev1beta2.WorkloadList{}
	require.NoError(t, k8s().List(ctx, list, client.InNamespace(ns)))
	var names []string
	for _, wl := range list.Items {
		if wl.DeletionTimestamp.IsZero() {
			names = append(names, wl.Name)
		}
	}
	assert.ElementsMatch(t, []string{"waiter-0", "latecomer-0"}, names, "one Workload per live gang, the deleted gang's gone with it")
}
