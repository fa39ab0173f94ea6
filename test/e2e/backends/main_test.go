// Package backends runs the grove-operator with kube-scheduler in gang mode (the Kubernetes
// Workload API) as the default backend, KAI and scheduler-plugins enabled beside it, one
// backend-controller per backend, on the local cluster: gangs are placed whole or not at all by
// the real kube-scheduler and by the real scheduler-plugins coscheduling scheduler, and each
// backend-controller touches only its own PodGangs.
package backendse2e

import (
	"os"
	"testing"

	"github.com/kubegrove/grove/test/cluster"
)

// schedulerConfig is the configuration of every binary of this package.
const schedulerConfig = `topologyAwareScheduling: {enabled: true}
scheduler:
  profiles:
  - name: kube-scheduler
    default: true
    config: {gangScheduling: true}
  - name: kai-scheduler
    config: {defaultQueue: default-queue}
  - name: scheduler-plugins
    config: {schedulerName: scheduler-plugins-scheduler, scheduleTimeoutSeconds: 30}
  - name: lpx-scheduler
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
	// Flat gangs (one PodGroup per gang): test/e2e/compositegangs covers the hierarchical ones.
	return cluster.MainWithBinaries(m, cluster.Options{Nodes: 1, FlatGangs: true}, &binDir, func(c *cluster.Cluster) error {
		if _, err := c.StartBinary(binDir, "grove-operator", "grove-operator", schedulerConfig); err != nil {
			return err
		}
		var err error
		if kubeBackend, err = startBackend(c, "kube-scheduler", "backend-controller-kube", "backend-controller-kube"); err != nil {
			return err
		}
		if kaiBackend, err = startBackend(c, "kai-scheduler", "backend-controller-kai", "backend-controller-kai"); err != nil {
			return err
		}
		if _, err := startBackend(c, "scheduler-plugins", "backend-controller-plugins", "backend-controller-plugins"); err != nil {
			return err
		}
		// No LPX scheduler runs here: its test shows what Grove does for a pass-through profile.
		if _, err := startBackend(c, "lpx-scheduler", "backend-controller-lpx", "backend-controller-lpx"); err != nil {
			return err
		}
		return c.StartCoscheduler(cluster.Coscheduling{SchedulerName: "scheduler-plugins-scheduler", PermitWaitSeconds: 30})
	})
}

// kubeBackend and kaiBackend are the backend-controllers; a test kills and restarts the KAI one.
var kubeBackend, kaiBackend *cluster.Process

// startBackend runs the backend-controller of one backend as identity.
func startBackend(c *cluster.Cluster, backend, identity, logName string) (*cluster.Process, error) {
	return c.StartBinaryAs(binDir, "backend-controller", identity, logName, schedulerConfig, "--backend="+backend)
}
