// Package operator runs the grove-operator and the kube-scheduler backend-controller as separate
// processes on the local cluster and checks inference workloads end to end.
package operatore2e

import (
	"os"
	"testing"

	"github.com/kubegrove/grove/test/cluster"
)

// binDir holds the project's binaries, built once per package run.
var binDir string

// operator is the running grove-operator process; the crash test kills and replaces it.
var operator *cluster.Process

// Identities the binaries run as; the audit log attributes writes to them.
const (
	operatorUser = "system:serviceaccount:grove-system:grove-operator"
	backendUser  = "system:serviceaccount:grove-system:backend-controller"
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return cluster.MainWithBinaries(m, cluster.Options{Nodes: 4}, &binDir, func(c *cluster.Cluster) error {
		var err error
		if operator, err = startBinary(c, "grove-operator", "grove-operator"); err != nil {
			return err
		}
		_, err = startBinary(c, "backend-controller", "backend-controller", "--backend=kube-scheduler")
		return err
	})
}

// schedulerConfig enables KAI beside the default kube-scheduler, in plain mode: these tests assert
// startup ordering by its gates, which hold dependents back from scheduling where kube-scheduler
// places pods one by one (in gang mode they are placed with their gang and held at start,
// test/e2e/compositegangs). No KAI backend-controller runs, which one test relies on.
const schedulerConfig = `scheduler:
  profiles:
  - name: kai-scheduler
    config: {defaultQueue: default-queue}
`

// startBinary runs one of the project's binaries with this package's configuration.
func startBinary(c *cluster.Cluster, name, logName string, args ...string) (*cluster.Process, error) {
	return c.StartBinary(binDir, name, logName, schedulerConfig, args...)
}
