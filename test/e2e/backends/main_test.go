// Package backends runs the grove-operator with kube-scheduler in gang mode (the Kubernetes
// Workload API) as the default backend and KAI enabled beside it, one backend-controller per
// backend, on the local cluster: gangs are placed whole or not at all by the real kube-scheduler,
// and each backend-controller touches only its own PodGangs.
package backends

import (
	"fmt"
	"os"
	"testing"

	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
)

// schedulerConfig is the configuration of every binary of this package.
const schedulerConfig = `scheduler:
  profiles:
  - name: kube-scheduler
    default: true
    config: {gangScheduling: true}
  - name: kai-scheduler
    config: {defaultQueue: default-queue}
`

// Identities of the two backend-controllers; the audit log tells their writes apart.
const (
	kubeBackendUser = "system:serviceaccount:grove-system:backend-controller-kube"
	kaiBackendUser  = "system:serviceaccount:grove-system:backend-controller-kai"
)

var binDir string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if binDir, err = cluster.BuildBinaries(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	crds, err := apiserver.CRDDirs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return cluster.Main(m, cluster.Options{Nodes: 1, CRDDirs: crds, Scheme: apiserver.Scheme()}, func(c *cluster.Cluster) error {
		if _, err := c.StartBinary(binDir, "grove-operator", "grove-operator", schedulerConfig); err != nil {
			return err
		}
		var err error
		if kubeBackend, err = startBackend(c, "kube-scheduler", "backend-controller-kube", "backend-controller-kube"); err != nil {
			return err
		}
		kaiBackend, err = startBackend(c, "kai-scheduler", "backend-controller-kai", "backend-controller-kai")
		return err
	})
}

// kubeBackend and kaiBackend are the backend-controllers; a test kills and restarts the KAI one.
var kubeBackend, kaiBackend *cluster.Process

// startBackend runs the backend-controller of one backend as identity.
func startBackend(c *cluster.Cluster, backend, identity, logName string) (*cluster.Process, error) {
	return c.StartBinaryAs(binDir, "backend-controller", identity, logName, schedulerConfig, "--backend="+backend)
}
