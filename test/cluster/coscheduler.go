package cluster

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubegrove/grove/test/toolpath"
)

// coschedulerConfig runs the scheduler-plugins scheduler as a second scheduler with the
// Coscheduling plugin, as its project documents.
const coschedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection: {kubeconfig: %s}
profiles:
- schedulerName: %s
  plugins:
    multiPoint:
      enabled: [{name: Coscheduling}]
      disabled: [{name: PrioritySort}]
  pluginConfig:
  - name: Coscheduling
    args: {permitWaitingTimeSeconds: %d, podGroupBackoffSeconds: %d}
`

// Coscheduling is how the scheduler-plugins scheduler is run.
type Coscheduling struct {
	// SchedulerName is the name pods ask for.
	SchedulerName string
	// PermitWaitSeconds is how long a gang's placed pods are held for the rest.
	PermitWaitSeconds int
	// PodGroupBackoffSeconds keeps a gang that failed to fit out of the queue for a while (0: not
	// at all). Without it, when gangs compete for the last nodes, a partial gang that sorts first
	// (the older PodGroup) takes a freed node again on every retry and holds it in Permit, and a
	// younger gang's pod that would fit never gets the node.
	PodGroupBackoffSeconds int
}

// StartCoscheduler starts the scheduler-plugins scheduler (built by make tools from
// sigs.k8s.io/scheduler-plugins) with the Coscheduling plugin configured as cs says.
func (c *Cluster) StartCoscheduler(cs Coscheduling) error {
	_, err := c.StartCoschedulerProcess(cs)
	return err
}

// StartCoschedulerProcess is StartCoscheduler returning the process, for a caller that stops it.
func (c *Cluster) StartCoschedulerProcess(cs Coscheduling) (*Process, error) {
	bin, err := toolpath.Bin("scheduler-plugins")
	if err != nil {
		return nil, err
	}
	kubeconfig, err := c.KubeconfigFor("system:kube-scheduler-plugins", "system:masters")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(c.Dir(), "scheduler-plugins.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(coschedulerConfig, kubeconfig, cs.SchedulerName, cs.PermitWaitSeconds, cs.PodGroupBackoffSeconds)), 0o600); err != nil {
		return nil, err
	}
	// Coscheduling wakes a rejected gang only on pod or PodGroup events, not when a node is added;
	// the scheduler's periodic retry of unschedulable pods (5 minutes by default) is shortened.
	return c.StartProcess("scheduler-plugins", bin, "--config", path, "--secure-port", "0",
		"--pod-max-in-unschedulable-pods-duration=10s",
		"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig)
}
