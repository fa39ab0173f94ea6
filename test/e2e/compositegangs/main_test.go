// Package compositegangs runs the grove-operator and the kube-scheduler backend-controller in
// gang mode on a local cluster that serves CompositePodGroup (kube-apiserver and kube-scheduler
// v1.37 with the feature gates GenericWorkload, TopologyAwareWorkloadScheduling and
// CompositePodGroup): every PodGang is a hierarchical gang in which each pod group keeps its own
// minimum, placed by the real kube-scheduler.
package compositegangse2e

import (
	"os"
	"testing"

	"github.com/kubegrove/grove/test/cluster"
)

// schedulerConfig is the configuration of both binaries.
const schedulerConfig = `scheduler:
  profiles:
  - name: kube-scheduler
    default: true
    config: {gangScheduling: true}
`

var binDir string

// backend is the kube-scheduler backend-controller.
var backend *cluster.Process

func TestMain(m *testing.M) {
	os.Exit(cluster.MainWithBinaries(m, cluster.Options{Nodes: 1}, &binDir, func(c *cluster.Cluster) error {
		if _, err := c.StartBinary(binDir, "grove-operator", "grove-operator", schedulerConfig); err != nil {
			return err
		}
		var err error
		backend, err = c.StartBinaryAs(binDir, "backend-controller", "backend-controller-kube", "backend-controller-kube", schedulerConfig, "--backend=kube-scheduler")
		return err
	}))
}
