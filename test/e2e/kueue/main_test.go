// Package kueue runs the grove-operator, grove-webhook, kube-scheduler backend-controller and
// trainer-controller beside the real Kueue controller (the pinned tool, pod and TrainJob
// integrations on) on the local cluster, and checks that PodCliqueSets and TrainJobs are
// queued, admitted, preempted and admitted again gang by gang within a ClusterQueue's quota —
// including the gangs each step of a Coherent update makes.
package kueuee2e

import (
	"os"
	"testing"
	"time"

	"github.com/kubegrove/grove/test/cluster"
)

// config turns the Kueue integration and topology-aware scheduling on for every binary. The
// kube-scheduler backend stays in plain mode: Kueue admits each gang whole and is refused beside
// another gang scheduler (docs/kueue.md).
const config = `kueue:
  enabled: true
topologyAwareScheduling:
  enabled: true
`

var binDir string

// operator and backend are the running grove-operator and backend-controller; the crash test
// kills and replaces them.
var operator, backend *cluster.Process

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return cluster.MainWithBinaries(m, cluster.Options{Nodes: 4, Kueue: true}, &binDir, func(c *cluster.Cluster) error {
		if _, err := c.StartWebhook(binDir, config, time.Minute); err != nil {
			return err
		}
		var err error
		if operator, err = c.StartBinary(binDir, "grove-operator", "grove-operator", config); err != nil {
			return err
		}
		if backend, err = c.StartBinary(binDir, "backend-controller", "backend-controller", config, "--backend=kube-scheduler"); err != nil {
			return err
		}
		_, err = c.StartBinary(binDir, "trainer-controller", "trainer-controller", config)
		return err
	})
}
