// Package kubectlgrove runs the kubectl-grove binary against the local cluster with the four
// binaries deployed: render must print exactly what the binaries create from every sample, and
// status and why must explain a workload that starts and one that is held back.
package kubectlgrovee2e

import (
	"os"
	"testing"
	"time"

	"github.com/kubegrove/grove/test/cluster"
)

// binDir holds the project's binaries, kubectl-grove among them, built once per package run.
var binDir string

// trainerConfig is the trainer-controller's configuration file: render reads it, so that what it
// prints for a TrainJob (its status server address among it) is what that binary builds.
var trainerConfig string

// The binaries run with their default configuration (kube-scheduler in plain mode): the held
// workload these tests explain is held back from scheduling for startup ordering by its gates
// (in gang mode it would be placed and held at start instead).
func TestMain(m *testing.M) {
	os.Exit(cluster.MainWithBinaries(m, cluster.Options{Nodes: 4}, &binDir, func(c *cluster.Cluster) error {
		if _, err := c.StartWebhook(binDir, "", time.Minute); err != nil {
			return err
		}
		for _, b := range []struct{ name, arg string }{
			{"grove-operator", ""}, {"backend-controller", "--backend=kube-scheduler"}, {"trainer-controller", ""},
		} {
			var args []string
			if b.arg != "" {
				args = append(args, b.arg)
			}
			p, err := c.StartBinary(binDir, b.name, b.name, "", args...)
			if err != nil {
				return err
			}
			if b.name == "trainer-controller" {
				trainerConfig = p.ConfigPath
			}
		}
		return nil
	}))
}
