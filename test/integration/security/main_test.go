// Package security checks what the four binaries expose and as whom they act, against a real
// kube-apiserver with RBAC and an audit log: the webhook serves only TLS 1.2+ with the
// certificate its rotator keeps in the Secret, signed by the CA it injected into the webhook
// configurations; metrics listen on 127.0.0.1 unless configured otherwise and, served securely as
// deployed, answer only authenticated and authorized scrapers; and every binary acts as its own
// ServiceAccount, never as an administrator.
package securityintegration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
)

// binary is one running binary and where it listens.
type binary struct {
	name        string
	process     *cluster.Process
	metricsPort int
	healthPort  int
	webhookPort int
}

var (
	binDir string
	// binaries are the four binaries, each as its own ServiceAccount with its generated roles.
	binaries []*binary
)

// webhookServiceName is the DNS name the rotator's certificate is issued for, as deployed.
const webhookServiceName = "grove-webhook.grove-system.svc"

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	opts := cluster.Options{APIServerOnly: true}
	return cluster.MainWithBinaries(m, opts, &binDir, setup)
}

// setup starts the four binaries as deployed: the webhook rotating its own certificate (auto
// mode) and every binary serving metrics securely. The webhook configurations select no object:
// the rotator only needs them to exist to inject its CA.
func setup(c *cluster.Cluster) error {
	ctx := context.Background()
	if err := c.GrantRBAC(ctx, "grove-webhook", "grove-webhook"); err != nil {
		return err
	}
	// As deployed: an empty Secret the rotator fills (cert-controller updates, never creates, it).
	err := c.Client().Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: cluster.Namespace, Name: "grove-webhook-server-cert"}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if err := apiserver.RegisterWebhooks(ctx, c.Client(), "config/webhook", "grove-", "127.0.0.1:1", nil, func(hook map[string]any) {
		hook["objectSelector"] = map[string]any{"matchLabels": map[string]any{"grove.test/never": "matches"}}
	}); err != nil {
		return err
	}
	for _, b := range []struct {
		name string
		args []string
	}{
		{"grove-webhook", nil},
		{"grove-operator", nil},
		{"backend-controller", []string{"--backend=kube-scheduler"}},
		{"trainer-controller", nil},
	} {
		started, err := startBinary(c, b.name, b.args...)
		if err != nil {
			return err
		}
		binaries = append(binaries, started)
	}
	return nil
}

// startBinary runs a binary as system:serviceaccount:grove-system:<name> with only its generated
// roles. Its metrics configuration names a port and secure serving but no bind address, so the
// default decides where it listens.
func startBinary(c *cluster.Cluster, name string, args ...string) (*binary, error) {
	if err := c.GrantRBAC(context.Background(), name, name); err != nil {
		return nil, err
	}
	kubeconfig, err := c.KubeconfigFor("system:serviceaccount:" + cluster.Namespace + ":" + name)
	if err != nil {
		return nil, err
	}
	ports, err := cluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	b := &binary{name: name, metricsPort: ports[0], healthPort: ports[1], webhookPort: ports[2]}
	config := fmt.Sprintf(`apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
logFormat: text
leaderElection: {leaseDuration: 6s, renewDeadline: 4s, retryPeriod: 1s, resourceNamespace: %s}
server:
  metrics: {port: %d, secure: true}
  healthProbes: {bindAddress: 127.0.0.1, port: %d}
  webhooks: {bindAddress: 127.0.0.1, port: %d, serverCertDir: %s}
`, cluster.Namespace, b.metricsPort, b.healthPort, b.webhookPort, filepath.Join(c.Dir(), name+"-certs"))
	configPath := filepath.Join(c.Dir(), name+"-config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	if b.process, err = c.StartProcess(name, filepath.Join(binDir, name), append([]string{"--kubeconfig", kubeconfig, "--config", configPath}, args...)...); err != nil {
		return nil, err
	}
	return b, b.waitReady(2 * time.Minute)
}

// readyz reports whether the health server on the loopback port answers /readyz with 200. A
// connection error is "not ready yet": the binary may not listen yet, so the caller keeps polling.
func readyz(port int) bool {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port)) //nolint:gosec // loopback probe
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// waitReady waits for /readyz: for the webhook that includes the rotator's certificate. A binary
// that exits fails at once, with its log.
func (b *binary) waitReady(timeout time.Duration) error {
	var exited error
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		if done, err := b.process.Exited(); done {
			exited = fmt.Errorf("%s exited: %v\n%s", b.name, err, b.process.LogTail(30))
			return false, exited
		}
		return readyz(b.healthPort), nil
	})
	switch {
	case exited != nil:
		return exited
	case err != nil:
		return fmt.Errorf("%s not ready after %s:\n%s", b.name, timeout, b.process.LogTail(30))
	}
	return nil
}

func binaryNamed(name string) *binary {
	for _, b := range binaries {
		if b.name == name {
			return b
		}
	}
	panic("no binary " + name)
}

// serviceAccountUser is the user name of a binary's identity.
func serviceAccountUser(name string) string {
	return "system:serviceaccount:" + cluster.Namespace + ":" + name
}

// isPlainHTTPRefusal tells whether a TLS server refused a plain-HTTP request: Go's TLS server
// answers one with 400 and this text, and never hands it to the handler.
func isPlainHTTPRefusal(code int, body string) bool {
	return code == http.StatusBadRequest && strings.Contains(body, "Client sent an HTTP request to an HTTPS server")
}
