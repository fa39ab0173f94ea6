// Package conformance ports upstream Grove's own e2e cases (github.com/ai-dynamo/grove,
// operator/e2e/tests at fcc3b3bb) to the local cluster: each test is named after upstream's case,
// deploys upstream's workload shape and makes upstream's assertions; where the cluster forces an
// adaptation, the test says so in one comment. docs/upstream-compatibility.md maps every case.
// Upstream runs its suite under KAI, a gang scheduler: here kube-scheduler places every PodGang as
// a hierarchical gang (gang mode, CompositePodGroup), each pod group keeping its own minimum.
package conformance

import (
	"os"
	"testing"

	"github.com/kubegrove/grove/test/cluster"
)

var binDir string

func TestMain(m *testing.M) {
	os.Exit(cluster.MainWithBinaries(m, cluster.Options{Nodes: 4}, &binDir, func(c *cluster.Cluster) error {
		if _, err := c.StartBinary(binDir, "grove-operator", "grove-operator", cluster.GangSchedulerConfig); err != nil {
			return err
		}
		_, err := c.StartBinary(binDir, "backend-controller", "backend-controller", cluster.GangSchedulerConfig, "--backend=kube-scheduler")
		return err
	}))
}
