// Package binaries proves each of the four binaries starts against a real API server, reports
// ready, serves Prometheus metrics, holds its own leader lease, and exits cleanly on SIGTERM —
// and that a bad configuration stops it with a message naming the field.
package binariesintegration

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/certs"
	"github.com/kubegrove/grove/test/toolpath"
)

var (
	env        *apiserver.Env
	binDir     string
	kubeconfig string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	tmp, err := os.MkdirTemp("", "grove-binaries-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)
	root, err := toolpath.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	binDir = filepath.Join(tmp, "bin")
	build := exec.Command("go", "build", "-trimpath", "-o", binDir+"/", "./cmd/...")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building the binaries: %v\n%s", err, out)
		return 1
	}
	env, err = apiserver.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = env.Stop() }()
	kc, err := env.AdminKubeconfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	kubeconfig = filepath.Join(tmp, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// distinctPorts returns n distinct free ports; every listener stays open until all are chosen,
// so none is handed out twice.
func distinctPorts(t *testing.T, n int) []int {
	t.Helper()
	out := make([]int, n)
	for i := range out {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer l.Close()
		out[i] = l.Addr().(*net.TCPAddr).Port
	}
	return out
}

// newPorts are a binary's three listeners' ports.
func newPorts(t *testing.T) ports {
	p := distinctPorts(t, 3)
	return ports{metrics: p[0], health: p[1], webhook: p[2]}
}

type ports struct{ metrics, health, webhook int }

// writeConfig writes an OperatorConfiguration on free loopback ports. The webhook gets a
// certificate from a test CA (manual mode, as with cert-manager).
func writeConfig(t *testing.T, p ports, extra string) string {
	t.Helper()
	dir := t.TempDir()
	ca, err := certs.NewCA("test-ca")
	require.NoError(t, err)
	serving, err := ca.Serving("127.0.0.1", "localhost")
	require.NoError(t, err)
	certDir := filepath.Join(dir, "certs")
	require.NoError(t, serving.WriteTLS(certDir))
	cfg := fmt.Sprintf(`apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
logFormat: text
leaderElection:
  leaseDuration: 4s
  renewDeadline: 3s
  retryPeriod: 1s
server:
  metrics: {bindAddress: 127.0.0.1, port: %d}
  healthProbes: {bindAddress: 127.0.0.1, port: %d}
  webhooks: {bindAddress: 127.0.0.1, port: %d, serverCertDir: %s}
certManagement:
  mode: manual
%s`, p.metrics, p.health, p.webhook, certDir, extra)
	path := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	return path
}

// syncBuffer is a process's output, read while the process writes it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func start(t *testing.T, binary string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command(filepath.Join(binDir, binary), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", binary, out.String())
		}
	})
	return cmd, out
}

func httpGet(url string) (int, string, error) {
	resp, err := http.Get(url) //nolint:gosec // loopback test endpoint
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// waitFor polls ok, on the test's goroutine (ok may use t), until it holds or timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		return ok(), nil
	})
	if err != nil {
		t.Fatalf("timed out after %s waiting for %s", timeout, what)
	}
}

func TestBinariesStartReportReadyAndStopOnSIGTERM(t *testing.T) {
	profiles := "scheduler:\n  profiles:\n    - {name: kai-scheduler}\n    - {name: scheduler-plugins}\n"
	cases := []struct {
		name   string
		binary string
		args   []string
		lease  string // empty: the binary does not elect a leader
		// readyChecks are readiness checks the binary must report passed once ready.
		readyChecks []string
	}{
		{binary: "grove-operator", lease: "grove-operator-leader"},
		// Admission reads PodCliqueSets and runtimes from its cache: ready only once those
		// informers synced, so no create waits for an informer started on demand.
		{binary: "grove-webhook", readyChecks: []string{"informers"}},
		{binary: "backend-controller", args: []string{"--backend=kube-scheduler"}, lease: "grove-backend-controller-kube-scheduler-leader"},
		{name: "backend-controller-kai", binary: "backend-controller", args: []string{"--backend=kai-scheduler"}, lease: "grove-backend-controller-kai-scheduler-leader"},
		{name: "backend-controller-plugins", binary: "backend-controller", args: []string{"--backend=scheduler-plugins"}, lease: "grove-backend-controller-scheduler-plugins-leader"},
		{binary: "trainer-controller", lease: "trainer-controller-leader"},
	}
	for _, tc := range cases {
		if tc.name == "" {
			tc.name = tc.binary
		}
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPorts(t)
			cmd, out := start(t, tc.binary, append([]string{"--config", writeConfig(t, p, profiles)}, tc.args...)...)
			begin := time.Now()

			waitFor(t, 60*time.Second, tc.binary+" /readyz", func() bool {
				code, _, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/readyz", p.health))
				return err == nil && code == http.StatusOK
			})
			t.Logf("%s ready after %s", tc.binary, time.Since(begin).Round(time.Millisecond))
			if len(tc.readyChecks) > 0 {
				code, body, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/readyz?verbose", p.health))
				require.NoError(t, err)
				require.Equal(t, http.StatusOK, code)
				for _, check := range tc.readyChecks {
					assert.Contains(t, body, "[+]"+check+" ok", "readiness includes the %s check", check)
				}
			}

			// The metrics listener starts beside the probes, not before them.
			var body string
			waitFor(t, 10*time.Second, tc.binary+" /metrics", func() bool {
				code, b, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/metrics", p.metrics))
				body = b
				return err == nil && code == http.StatusOK
			})
			assert.Contains(t, body, "# TYPE ", "Prometheus text format")

			if tc.lease != "" {
				// The process itself must know it leads: a lease its create request wrote while a
				// SIGTERM cancelled that request is one the process never learnt it holds, and so
				// never releases.
				waitFor(t, 30*time.Second, "lease "+tc.lease, func() bool {
					o := out.String()
					return strings.Contains(o, "Successfully acquired lease") && strings.Contains(o, `"default/`+tc.lease+`"`)
				})
			}

			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				require.NoError(t, err, "clean exit on SIGTERM")
				assert.Equal(t, 0, cmd.ProcessState.ExitCode())
			case <-time.After(20 * time.Second):
				t.Fatalf("%s did not exit within 20s of SIGTERM", tc.binary)
			}
			assert.Contains(t, out.String(), "stopped")

			if tc.lease != "" {
				lease := &coordinationv1.Lease{}
				require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: tc.lease}, lease))
				assert.True(t, lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "",
					"the lease is released on shutdown so a successor need not wait for it to expire")
			}
		})
	}
}

func TestBadConfigurationStopsTheBinaryNamingTheField(t *testing.T) {
	cases := []struct {
		name   string
		binary string
		args   []string
		extra  string
		want   []string
	}{
		{
			name:   "two default scheduler profiles",
			binary: "grove-operator",
			extra:  "scheduler:\n  profiles:\n    - {name: kube-scheduler, default: true}\n    - {name: kai-scheduler, default: true}\n",
			want:   []string{"scheduler.profiles[1].default", "scheduler.profiles[0].default"},
		},
		{
			name:   "unknown field",
			binary: "grove-webhook",
			extra:  "logLevl: debug\n",
			want:   []string{`unknown field "logLevl"`},
		},
		{
			name:   "backend not enabled",
			binary: "backend-controller",
			args:   []string{"--backend=kai-scheduler"},
			want:   []string{`--backend="kai-scheduler" is not an enabled scheduler backend`},
		},
		{
			name:   "misspelt backend option",
			binary: "backend-controller",
			args:   []string{"--backend=kube-scheduler"},
			extra:  "scheduler:\n  profiles:\n    - {name: kube-scheduler, config: {gangSchedulng: true}}\n",
			want:   []string{"scheduler.profiles[0].config", `unknown field "gangSchedulng"`},
		},
		{
			// envtest's API server does not serve NVIDIA's ComputeDomain.
			name:   "MNNVL without the ComputeDomain CRD (operator)",
			binary: "grove-operator",
			extra:  "network: {autoMNNVLEnabled: true}\n",
			want:   []string{"resource.nvidia.com/v1beta1, Kind=ComputeDomain is not served: network.autoMNNVLEnabled is on and needs the CRD computedomains.resource.nvidia.com"},
		},
		{
			name:   "MNNVL without the ComputeDomain CRD (webhook)",
			binary: "grove-webhook",
			extra:  "network: {autoMNNVLEnabled: true}\n",
			want:   []string{"computedomains.resource.nvidia.com"},
		},
		{
			// envtest's API server does not serve the Workload API.
			name:   "gang scheduling without the Workload API",
			binary: "backend-controller",
			args:   []string{"--backend=kube-scheduler"},
			extra:  "scheduler:\n  profiles:\n    - {name: kube-scheduler, config: {gangScheduling: true}}\n",
			want:   []string{"scheduling.k8s.io/v1beta1, Kind=Workload is not served", "--feature-gates=GenericWorkload=true", "--runtime-config=scheduling.k8s.io/v1beta1=true"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPorts(t)
			cmd, out := start(t, tc.binary, append([]string{"--config", writeConfig(t, p, tc.extra)}, tc.args...)...)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				require.Error(t, err)
				assert.Equal(t, 1, cmd.ProcessState.ExitCode())
			case <-time.After(20 * time.Second):
				t.Fatalf("%s kept running with a bad configuration", tc.binary)
			}
			for _, w := range tc.want {
				assert.True(t, strings.Contains(out.String(), w), "output %q should contain %q", out.String(), w)
			}
		})
	}
}

func TestProfilingIsServedOnTheLoopbackOnlyWhenEnabled(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run(fmt.Sprintf("enableProfiling=%v", enabled), func(t *testing.T) {
			t.Parallel()
			all := distinctPorts(t, 4)
			p, pprofPort := ports{metrics: all[0], health: all[1], webhook: all[2]}, all[3]
			extra := fmt.Sprintf("debugging: {enableProfiling: %v, pprofBindPort: %d}\n", enabled, pprofPort)
			start(t, "grove-operator", "--config", writeConfig(t, p, extra))
			waitFor(t, 60*time.Second, "grove-operator /readyz", func() bool {
				code, _, err := httpGet(fmt.Sprintf("http://127.0.0.1:%d/readyz", p.health))
				return err == nil && code == http.StatusOK
			})
			url := fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/cmdline", pprofPort)
			if !enabled {
				_, _, err := httpGet(url)
				require.Error(t, err, "nothing listens on the profiling port")
				return
			}
			var body string
			waitFor(t, 10*time.Second, "/debug/pprof/cmdline", func() bool {
				code, b, err := httpGet(url)
				body = b
				return err == nil && code == http.StatusOK
			})
			assert.Contains(t, body, "grove-operator")
		})
	}
}

// TestTrainerStatusServerGeneratesItsCertificateAndServes runs the trainer-controller with the
// status server on and generated certificates (certManagement.mode auto, as deployed without
// cert-manager): it fills its own shipped-empty Secret with a CA and a certificate for the
// Service's DNS name, and serves Kubeflow's status path with it, refusing a report without a token.
func TestTrainerStatusServerGeneratesItsCertificateAndServes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := "trainer-status-certs"
	require.NoError(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "status-cert"}}))
	p := distinctPorts(t, 4)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
logFormat: text
leaderElection: {leaseDuration: 4s, renewDeadline: 3s, retryPeriod: 1s, resourceNamespace: %[1]s}
server:
  metrics: {bindAddress: 127.0.0.1, port: %[2]d}
  healthProbes: {bindAddress: 127.0.0.1, port: %[3]d}
  trainerStatus: {enabled: true, bindAddress: 127.0.0.1, port: %[4]d, serviceName: status, secretName: status-cert, serverCertDir: %[5]s}
certManagement: {mode: auto, namespace: %[1]s}
`, ns, p[0], p[1], p[3], filepath.Join(dir, "certs"))
	path := filepath.Join(dir, "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	start(t, "trainer-controller", "--config", path)

	secret := &corev1.Secret{}
	waitFor(t, 60*time.Second, "the rotator to fill the Secret", func() bool {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "status-cert"}, secret) == nil && len(secret.Data["ca.crt"]) > 0
	})
	roots := x509.NewCertPool()
	require.True(t, roots.AppendCertsFromPEM(secret.Data["ca.crt"]))
	// What a trainer pod does: trust ca.crt (from its <trainjob>-tls-config ConfigMap) and dial
	// the Service's DNS name, here pointed at the local port.
	httpClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "status." + ns + ".svc", MinVersion: tls.VersionTLS12},
	}}
	url := fmt.Sprintf("https://127.0.0.1:%d/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs/llm/status", p[3])
	var resp *http.Response
	waitFor(t, 60*time.Second, "the status server to serve with the generated certificate", func() bool {
		r, err := httpClient.Post(url, "application/json", strings.NewReader(`{}`))
		if err != nil {
			return false
		}
		resp = r
		return true
	})
	defer resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a report without a token is refused")
	assert.NotEmpty(t, secret.Data["tls.crt"], "the certificate is kept in the Secret for every replica")
}
