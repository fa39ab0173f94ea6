// Package trainer runs the trainer-controller, the grove-operator and the kube-scheduler
// backend-controller as separate processes on the local cluster (with the real JobSet, Job and
// garbage-collector controllers and kwok pods) and checks TrainJobs end to end: both workload
// paths, KEP-2899's deadline and TTL, suspend and resume, and a killed controller.
package trainere2e

import (
	"os"
	"testing"
	"time"

	"github.com/kubegrove/grove/test/cluster"
)

// binDir holds the project's binaries, built once per package run.
var binDir string

// trainer is the running trainer-controller; the crash test kills and replaces it.
var trainer *cluster.Process

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return cluster.MainWithBinaries(m, cluster.Options{Nodes: 4}, &binDir, func(c *cluster.Cluster) error {
		// Admission as deployed: every PodCliqueSet the trainer-controller builds is defaulted and
		// validated by grove-webhook, running as its ServiceAccount like the other three.
		if _, err := c.StartWebhook(binDir, "", time.Minute); err != nil {
			return err
		}
		if _, err := c.StartBinary(binDir, "grove-operator", "grove-operator", ""); err != nil {
			return err
		}
		if _, err := c.StartBinary(binDir, "backend-controller", "backend-controller", "", "--backend=kube-scheduler"); err != nil {
			return err
		}
		var err error
		trainer, err = c.StartBinary(binDir, "trainer-controller", "trainer-controller", "")
		return err
	})
}
