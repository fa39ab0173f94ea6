package multikueuee2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// restart kills the named binaries of one cluster, runs what is given while they are down, and
// starts them again with the cluster's configuration.
func restart(t *testing.T, clusterName string, meanwhile func(), names ...string) {
	t.Helper()
	c, cfg := manager, config
	if clusterName != managerName {
		c, cfg = workers[clusterName], workerConfig(clusterName)
	}
	binariesMu.Lock()
	defer binariesMu.Unlock()
	for _, n := range names {
		binaries[clusterName][n].Kill()
	}
	meanwhile()
	for _, n := range names {
		var args []string
		if n == "backend-controller" {
			args = []string{"--backend=kube-scheduler"}
		}
		p, err := c.StartBinary(binDir, n, n+"-restarted", cfg, args...)
		require.NoError(t, err, "restarting %s on %s", n, clusterName)
		require.NoError(t, p.WaitReady(2*time.Minute))
		binaries[clusterName][n] = p
	}
}

// TestKilledBinariesOnEitherSideLoseNoDispatch kills the manager's grove-operator and
// backend-controller while a Training PodCliqueSet of three gangs is created, and later the
// grove-operator and backend-controller of the worker it runs on: every decision is read back
// from the clusters, so all three gangs still land on one worker and the phase Succeeded still
// reaches the manager.
func TestKilledBinariesOnEitherSideLoseNoDispatch(t *testing.T) {
	ctx := context.Background()
	ns := newTest(t, "8", map[string]string{worker1Name: "4", worker2Name: "4"})

	restart(t, managerName, func() {
		require.NoError(t, manager.Client().Create(ctx, trainingPCS(ns, "train", ns, 3, 1, 15*time.Second)))
		// The webhook admitted it; with the operator and backend-controller down nothing acts on it.
		assert.Never(t, func() bool { return len(workloads(t, manager, ns)) > 0 }, 2*time.Second, 200*time.Millisecond,
			"no Workload while the manager's binaries are down")
	}, "grove-operator", "backend-controller")

	where := runsOn(t, ns, "train", 3)
	t.Logf("all three gangs placed on %s", where)
	eventually(t, 2*time.Minute, func() (bool, string) {
		n := runningPods(t, workers[where], ns)
		return n == 3, fmt.Sprintf("%d of 3 pods Running on %s", n, where)
	})

	restart(t, where, func() {}, "grove-operator", "backend-controller")
	eventually(t, 3*time.Minute, func() (bool, string) {
		got := getPCS(t, manager, ns, "train")
		return got != nil && got.Status.Phase == grovev1alpha1.PodCliqueSetPhaseSucceeded, fmt.Sprintf("manager's phase %v; %s", phaseOf(got), describeWorkloads(workloads(t, manager, ns)))
	})
	for name, w := range workers {
		if name != where {
			assert.Empty(t, creates(t, w, ns, "podcliquesets"), "no copy on %s", name)
		}
	}
}
