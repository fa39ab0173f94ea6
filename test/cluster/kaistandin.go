package cluster

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/kubegrove/grove/test/toolpath"
)

// kaiStandInConfig is a kube-scheduler serving the scheduler name kai-scheduler.
const kaiStandInConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection: {leaderElect: false}
clientConnection: {kubeconfig: %s}
profiles:
- schedulerName: kai-scheduler
`

// StartKAIStandIn starts a kube-scheduler that serves the scheduler name kai-scheduler: KAI itself
// is not built here (its modules are not fetchable), so pods upstream's manifests give to KAI are
// placed by kube-scheduler, while the KAI backend-controller still keeps their gangs' PodGroups.
func (c *Cluster) StartKAIStandIn() error {
	bin, err := toolpath.Bin("kube-scheduler")
	if err != nil {
		return err
	}
	kubeconfig, err := c.KubeconfigFor("system:kai-scheduler-stand-in", "system:masters")
	if err != nil {
		return err
	}
	path := filepath.Join(c.Dir(), "kai-stand-in.yaml")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(kaiStandInConfig, kubeconfig)), 0o600); err != nil {
		return err
	}
	_, err = c.StartProcess("kai-scheduler-stand-in", bin, "--config", path, "--secure-port", "0",
		"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig)
	return err
}
