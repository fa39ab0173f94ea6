// Package operator runs the grove-operator and the kube-scheduler backend-controller as separate
// processes on the local cluster and checks inference workloads end to end.
package operator

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
	"github.com/kubegrove/grove/test/toolpath"
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
	root, err := toolpath.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "grove-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	binDir = tmp
	build := exec.Command("go", "build", "-o", binDir+"/", "./cmd/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the binaries: %v\n%s", err, out)
		return 1
	}
	crds, err := apiserver.CRDDirs()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return cluster.Main(m, cluster.Options{Nodes: 4, CRDDirs: crds, Scheme: apiserver.Scheme()}, func(c *cluster.Cluster) error {
		var err error
		if operator, err = startBinary(c, "grove-operator", "grove-operator"); err != nil {
			return err
		}
		_, err = startBinary(c, "backend-controller", "backend-controller", "--backend=kube-scheduler")
		return err
	})
}

// startBinary runs one of the project's binaries as its own user with a configuration on free
// ports; least-privilege roles come with the deployment manifests, so it is in system:masters.
// logName names the process's log, so a restarted binary gets a log of its own.
func startBinary(c *cluster.Cluster, name, logName string, args ...string) (*cluster.Process, error) {
	kubeconfig, err := c.KubeconfigFor("system:serviceaccount:grove-system:"+name, "system:masters")
	if err != nil {
		return nil, err
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	certDir := filepath.Join(c.Dir(), logName+"-certs")
	serving, err := c.CA().Serving("127.0.0.1")
	if err != nil {
		return nil, err
	}
	if err := serving.WriteTLS(certDir); err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
logFormat: text
clientConnection: {qps: 200, burst: 400}
leaderElection: {leaseDuration: 6s, renewDeadline: 4s, retryPeriod: 1s}
server:
  metrics: {bindAddress: 127.0.0.1, port: %d}
  healthProbes: {bindAddress: 127.0.0.1, port: %d}
  webhooks: {bindAddress: 127.0.0.1, port: %d, serverCertDir: %s}
certManagement: {mode: manual}
`, ports[0], ports[1], ports[2], certDir)
	configPath := filepath.Join(c.Dir(), logName+"-config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	return c.StartProcess(logName, filepath.Join(binDir, name), append([]string{"--kubeconfig", kubeconfig, "--config", configPath}, args...)...)
}
