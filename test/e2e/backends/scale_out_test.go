package backendse2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// TestAScaledOutScalingGroupLeavesItsGateInSeconds scales a scaling group from 1 to 3 replicas
// under kube-scheduler's gang mode and times, from the scale request, until the new group
// replicas' pods are ungated and bound. Upstream Grove's #847 reports minutes for this; here each
// new replica is its own scaled PodGang, acknowledged by the backend-controller, and its pods are
// born schedulable or ungated as soon as it is. The times are logged (the closing note reports
// them); the test asserts that every new pod is placed.
func TestAScaledOutScalingGroupLeavesItsGateInSeconds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, 0, 2) // 9 one-GPU pods once scaled out
	pcs := podCliqueSet(ns, "grow", clique(ns, "leader", 1, 1, ""), clique(ns, "worker", 2, 1, ""))
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovev1alpha1.PodCliqueScalingGroupConfig{{
		Name: "sg", CliqueNames: []string{"leader", "worker"}, Replicas: ptrTo[int32](1), MinAvailable: ptrTo[int32](1)}}
	require.NoError(t, k8s().Create(ctx, pcs))
	waitBound(t, ns, "grow", 3)

	group := &grovev1alpha1.PodCliqueScalingGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: grovev1alpha1.PodCliqueScalingGroupName("grow", 0, "sg")}}
	start := time.Now()
	require.NoError(t, k8s().Patch(ctx, group, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":3}}`))))
	var ungatedAt time.Time
	require.Eventually(t, func() bool {
		ps := pods(t, ns, "grow")
		if len(ps) != 9 {
			return false
		}
		for _, p := range ps {
			if len(p.Spec.SchedulingGates) > 0 {
				return false
			}
		}
		if ungatedAt.IsZero() {
			ungatedAt = time.Now()
		}
		return len(bindTimes(ps)) == 9
	}, 60*time.Second, 100*time.Millisecond, "the six new pods are ungated and bound")
	bound := time.Now()
	logPlacement(t, "a scaling group scaled from 1 to 3 replicas", pods(t, ns, "grow"), start.Truncate(time.Second))
	t.Logf("scale-out of a scaling group under gang mode: new pods ungated %.1fs and bound %.1fs after the scale request",
		ungatedAt.Sub(start).Seconds(), bound.Sub(start).Seconds())
}

func ptrTo[T any](v T) *T { return &v }
