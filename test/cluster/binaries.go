package cluster

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/toolpath"
)

// BuildBinaries builds the project's four binaries into a new temporary directory; remove it
// when the test package ends.
func BuildBinaries() (string, error) {
	root, err := toolpath.RepoRoot()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "grove-e2e-bin-")
	if err != nil {
		return "", err
	}
	// -trimpath as make build and make run-local build them, so each reuses the others' compiled packages.
	build := exec.Command("go", "build", "-trimpath", "-o", dir+"/", "./cmd/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("building the binaries: %v\n%s", err, out)
	}
	return dir, nil
}

// StartBinary runs one of the project's binaries (name, from binDir) as its own user
// system:serviceaccount:grove-system:<name>, with a configuration on free ports plus extraConfig
// (YAML appended to the OperatorConfiguration, e.g. a scheduler section). The user has only the
// roles generated for the binary (config/rbac/<name>), as deployed. logName names the process's
// log, so a restarted binary gets a log of its own.
func (c *Cluster) StartBinary(binDir, name, logName, extraConfig string, args ...string) (*Process, error) {
	return c.StartBinaryAs(binDir, name, name, logName, extraConfig, args...)
}

// StartBinaryAs is StartBinary with the service account named identity instead of name, for
// two instances whose writes the audit log must tell apart.
func (c *Cluster) StartBinaryAs(binDir, name, identity, logName, extraConfig string, args ...string) (*Process, error) {
	if err := c.GrantRBAC(context.Background(), name, identity); err != nil {
		return nil, err
	}
	kubeconfig, err := c.KubeconfigFor(ServiceAccountUser(identity), ServiceAccountGroups...)
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(4)
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(c.Dir(), logName+"-certs")
	serving, err := c.CA().Serving("127.0.0.1")
	if err != nil {
		return nil, err
	}
	if err := serving.WriteTLS(certDir); err != nil {
		return nil, err
	}
	// The trainer status server's certificate, as cert-manager issues it (manual mode): for the
	// Service's DNS name, which pods dial, and the loopback address, with the CA beside it.
	statusDir := filepath.Join(c.Dir(), logName+"-trainer-status-certs")
	statusCert, err := c.CA().Serving(TrainerStatusDNSName, "127.0.0.1")
	if err != nil {
		return nil, err
	}
	if err := statusCert.WriteTLS(statusDir); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(statusDir, "ca.crt"), c.CAPEM(), 0o600); err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
logFormat: text
clientConnection: {qps: 200, burst: 400}
leaderElection: {%s, resourceNamespace: %s}
server:
  metrics: {bindAddress: 127.0.0.1, port: %d}
  healthProbes: {bindAddress: 127.0.0.1, port: %d}
  webhooks: {bindAddress: 127.0.0.1, port: %d, serverCertDir: %s}
  trainerStatus: {enabled: true, bindAddress: 127.0.0.1, port: %d, serverCertDir: %s}
certManagement: {mode: manual}
%s`, cmp.Or(c.opts.LeaderElectionTimings, "leaseDuration: 6s, renewDeadline: 4s, retryPeriod: 1s"), Namespace, ports[0], ports[1], ports[2], certDir, ports[3], statusDir, extraConfig)
	configPath := filepath.Join(c.Dir(), logName+"-config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	env, err := DeployedEnv(name)
	if err != nil {
		return nil, err
	}
	p, err := c.startProcessWithEnv(logName, filepath.Join(binDir, name), env, append([]string{"--kubeconfig", kubeconfig, "--config", configPath}, args...)...)
	if err != nil {
		return nil, err
	}
	p.MetricsURL = fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0])
	p.WebhookHostPort = fmt.Sprintf("127.0.0.1:%d", ports[2])
	p.TrainerStatusHostPort = fmt.Sprintf("127.0.0.1:%d", ports[3])
	p.ConfigPath = configPath
	p.readyURL = fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1])
	p.HealthzURL = fmt.Sprintf("http://127.0.0.1:%d/healthz", ports[1])
	return p, nil
}

// DeployedEnv is the environment the binary's Deployment gives its container
// (config/manager/<name>/deployment.yaml: the variables with a literal value, such as the Go
// runtime's soft memory limit), so a binary started here runs with the settings it is deployed
// with and the bench measures what a cluster runs.
func DeployedEnv(name string) ([]string, error) {
	root, err := toolpath.RepoRoot()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(root, "config", "manager", name, "deployment.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name != name {
			continue
		}
		var env []string
		for _, e := range c.Env {
			if e.ValueFrom == nil {
				env = append(env, e.Name+"="+e.Value)
			}
		}
		return env, nil
	}
	return nil, fmt.Errorf("%s: no container named %s", path, name)
}

// GangSchedulerConfig is the scheduler section the e2e suites give the project's binaries: the
// default kube-scheduler profile in gang mode, as deploy/overlays/kube-scheduler-gang deploys it
// and as the local cluster serves it. A suite that enables more
// profiles lists GangSchedulerProfile among them.
const GangSchedulerConfig = "scheduler:\n  profiles:\n" + GangSchedulerProfile

// GangSchedulerProfile is the default kube-scheduler profile in gang mode, as a list item of
// scheduler.profiles.
const GangSchedulerProfile = `  - name: kube-scheduler
    default: true
    config: {gangScheduling: true}
`

// TrainerStatusDNSName is the trainer status server's Service name in the binaries' namespace
// (the defaults of server.trainerStatus.serviceName and certManagement.namespace).
const TrainerStatusDNSName = "trainer-controller-status." + Namespace + ".svc"

// ServiceAccountGroups are the groups the API server gives a service account's token. With them a
// binary's requests are classified as in a real cluster — API Priority and Fairness puts them in
// workload-low by the service-accounts FlowSchema; without them they would share global-default's
// far fewer seats.
var ServiceAccountGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + Namespace}

// ServiceAccountUser is the user name of the service account named identity in Namespace.
func ServiceAccountUser(identity string) string {
	return "system:serviceaccount:" + Namespace + ":" + identity
}

// StartWebhook runs grove-webhook (from binDir, extraConfig as for StartBinary), waits until it
// serves within ready, and registers the webhook configurations exactly as config/webhook
// generates them, pointing at it: every kind the deployment guards is guarded.
func (c *Cluster) StartWebhook(binDir, extraConfig string, ready time.Duration) (*Process, error) {
	return c.StartWebhookLogging(binDir, "grove-webhook", extraConfig, ready)
}

// StartWebhookLogging is StartWebhook logging to logName (a restarted webhook keeps the log of
// the one before).
func (c *Cluster) StartWebhookLogging(binDir, logName, extraConfig string, ready time.Duration) (*Process, error) {
	webhook, err := c.StartBinary(binDir, "grove-webhook", logName, extraConfig)
	if err != nil {
		return nil, err
	}
	if err := webhook.WaitReady(ready); err != nil {
		return nil, err
	}
	if err := apiserver.RegisterWebhooks(context.Background(), c.Client(), "config/webhook", "grove-", webhook.WebhookHostPort, c.CAPEM()); err != nil {
		return nil, err
	}
	return webhook, nil
}
