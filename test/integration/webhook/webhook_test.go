// Package webhook runs grove-webhook as its own process, registered with a real API server over
// TLS, and checks what users see: defaults applied and invalid objects rejected with field paths.
package webhookintegration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/certs"
	"github.com/kubegrove/grove/test/cluster"
	"github.com/kubegrove/grove/test/toolpath"
)

var (
	env        *apiserver.Env
	kubeconfig string
	// webhookKubeconfig is the grove-webhook ServiceAccount's: the webhook runs with only its roles.
	webhookKubeconfig string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	root, err := toolpath.RepoRoot()
	if err != nil {
		return fail(err)
	}
	tmp, err := os.MkdirTemp("", "grove-webhook-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(tmp)
	build := exec.Command("go", "build", "-trimpath", "-o", tmp+"/", "./cmd/grove-webhook")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("building grove-webhook: %v\n%s", err, out))
	}
	if env, err = apiserver.Start(); err != nil {
		return fail(err)
	}
	defer func() { _ = env.Stop() }()
	kc, err := env.AdminKubeconfig()
	if err != nil {
		return fail(err)
	}
	kubeconfig = filepath.Join(tmp, "kubeconfig")
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return fail(err)
	}
	// The webhook runs as its ServiceAccount with only its generated roles, as deployed.
	if err := apiserver.GrantRBAC(context.Background(), env.Client, "grove-webhook", "grove-webhook"); err != nil {
		return fail(err)
	}
	wkc, err := env.KubeconfigFor("system:serviceaccount:" + apiserver.BinaryNamespace + ":grove-webhook")
	if err != nil {
		return fail(err)
	}
	webhookKubeconfig = filepath.Join(tmp, "webhook-kubeconfig")
	if err := os.WriteFile(webhookKubeconfig, wkc, 0o600); err != nil {
		return fail(err)
	}

	ca, err := certs.NewCA("webhook-test-ca")
	if err != nil {
		return fail(err)
	}
	serving, err := ca.Serving("127.0.0.1")
	if err != nil {
		return fail(err)
	}
	certDir := filepath.Join(tmp, "certs")
	if err := serving.WriteTLS(certDir); err != nil {
		return fail(err)
	}
	binary = filepath.Join(tmp, "grove-webhook")
	servingCertDir = certDir
	hook, err := startWebhook(tmp, "grove-webhook", manualCerts())
	if err != nil {
		return fail(err)
	}
	defer hook.stop()
	for _, k := range []string{"config/webhook", "config/webhook/authorizer"} {
		prefix := "grove-" + filepath.Base(k) + "-"
		if err := apiserver.RegisterWebhooks(context.Background(), env.Client, k, prefix, fmt.Sprintf("127.0.0.1:%d", hook.webhookPort), ca.CertPEM); err != nil {
			return fail(err)
		}
	}
	caPEM = ca.CertPEM
	code := m.Run()
	if code != 0 {
		log, _ := os.ReadFile(hook.log)
		fmt.Fprintf(os.Stderr, "grove-webhook log:\n%s\n", log)
	}
	return code
}

// operatorUser is the identity the authorizer lets change managed objects.
const operatorUser = "system:serviceaccount:grove-system:grove-operator"

var (
	binary         string
	servingCertDir string
	caPEM          []byte
)

// webhookProcess is one grove-webhook replica.
type webhookProcess struct {
	cmd         *exec.Cmd
	webhookPort int
	log         string
}

func (w *webhookProcess) stop() { _ = w.cmd.Process.Kill(); _ = w.cmd.Wait() }

// readyz reports whether the health server on the loopback port answers /readyz with 200. A
// connection error is "not ready yet": the webhook may not listen yet, so the caller keeps polling.
func readyz(port int) bool {
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port))
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// startWebhook runs a grove-webhook replica on free ports, serving the shared test certificate,
// and waits until it reports ready.
func startWebhook(dir, name, certManagement string) (*webhookProcess, error) {
	// Every listener stays open until all three are chosen: one closed at once may be handed out
	// again (CI saw the webhook and health ports equal, and the configuration refused).
	ports, err := cluster.FreePorts(3)
	if err != nil {
		return nil, err
	}
	config := fmt.Sprintf(`apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
logFormat: text
server:
  metrics: {bindAddress: 127.0.0.1, port: %d}
  healthProbes: {bindAddress: 127.0.0.1, port: %d}
  webhooks: {bindAddress: 127.0.0.1, port: %d, serverCertDir: %s}
%s
authorizer:
  enabled: true
  managerUserNames: [%s]
scheduler:
  profiles:
    - name: kai-scheduler
topologyAwareScheduling: {enabled: true}
`, ports[0], ports[1], ports[2], certDirFor(dir, name, certManagement), certManagement, operatorUser)
	configPath := filepath.Join(dir, name+"-config.yaml")
	if err := os.WriteFile(configPath, []byte(config), 0o600); err != nil {
		return nil, err
	}
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, "--kubeconfig", webhookKubeconfig, "--config", configPath)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &webhookProcess{cmd: cmd, webhookPort: ports[2], log: logPath}
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return readyz(ports[1]), nil
	})
	if err != nil {
		w.stop()
		log, _ := os.ReadFile(logPath)
		return nil, fmt.Errorf("%s never became ready:\n%s", name, log)
	}
	return w, nil
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "webhook-"}}
	require.NoError(t, env.Client.Create(context.Background(), ns))
	return ns.Name
}

// kubectlApply applies a manifest the way a user would and returns kubectl's output.
func kubectlApply(t *testing.T, ns, manifest string) (string, error) {
	t.Helper()
	kubectl, err := toolpath.Bin("kubectl")
	require.NoError(t, err)
	cmd := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", ns, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifest)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

const trainingPCS = `apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata:
  name: train
spec:
  workloadType: Training
  template:
    cliques:
      - name: trainer
        spec:
          roleName: trainer
          replicas: 2
          podSpec:
            containers: [{name: trainer, image: busybox}]
`

func TestWebhookDefaultsATrainingPodCliqueSet(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	out, err := kubectlApply(t, ns, trainingPCS)
	require.NoError(t, err, out)
	pcs := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "train"}, pcs))
	require.NotNil(t, pcs.Spec.Template.TerminationDelay)
	assert.Zero(t, pcs.Spec.Template.TerminationDelay.Duration, "Training gang-terminates at once")
	c := pcs.Spec.Template.Cliques[0]
	assert.Equal(t, corev1.RestartPolicyNever, c.Spec.PodSpec.RestartPolicy)
	assert.Equal(t, "default-scheduler", c.Spec.PodSpec.SchedulerName, "the default backend is kube-scheduler")
	assert.Equal(t, int32(2), *c.Spec.MinAvailable)
}

func TestWebhookRejectsInvalidPodCliqueSetsWithTheFieldPath(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	cases := []struct {
		name, manifest string
		want           []string
	}{
		{
			name: "startsAfter cycle",
			manifest: `apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: cycle}
spec:
  template:
    cliqueStartupType: CliqueStartupTypeExplicit
    cliques:
      - {name: a, spec: {roleName: a, startsAfter: [b], podSpec: {containers: [{name: a, image: busybox}]}}}
      - {name: b, spec: {roleName: b, startsAfter: [a], podSpec: {containers: [{name: b, image: busybox}]}}}
`,
			want: []string{"spec.template.cliques", "a -> b -> a", "must not form a cycle"},
		},
		{
			name: "two scheduler backends",
			manifest: `apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: mixed}
spec:
  template:
    cliques:
      - {name: a, spec: {roleName: a, podSpec: {containers: [{name: a, image: busybox}]}}}
      - {name: b, spec: {roleName: b, podSpec: {schedulerName: kai-scheduler, containers: [{name: b, image: busybox}]}}}
`,
			want: []string{"spec.template.cliques[1].spec.podSpec.schedulerName", "one scheduler backend"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := kubectlApply(t, ns, tc.manifest)
			require.Error(t, err, out)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
		})
	}
}

func TestWebhookRejectsImmutableChangesAndKeepsTheStoredObject(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	out, err := kubectlApply(t, ns, trainingPCS)
	require.NoError(t, err, out)
	out, err = kubectlApply(t, ns, strings.Replace(trainingPCS, "roleName: trainer", "roleName: learner", 1))
	require.Error(t, err, out)
	assert.Contains(t, out, "spec.template.cliques[0].spec.roleName")
	assert.Contains(t, out, "field is immutable")
	pcs := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "train"}, pcs))
	assert.Equal(t, "trainer", pcs.Spec.Template.Cliques[0].Spec.RoleName)
}

// manualCerts serves the test CA's certificate, as with cert-manager.
func manualCerts() string { return "certManagement: {mode: manual}" }

// certDirFor gives auto-mode replicas their own directory (the rotator writes it from the
// Secret) and manual ones the shared test certificate.
func certDirFor(dir, name, certManagement string) string {
	if certManagement == manualCerts() {
		return servingCertDir
	}
	return filepath.Join(dir, name+"-certs")
}

func clientKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

// The collision a new user met: PodCliqueSet a (scaling group g, 3 replicas) exists, and a-0-g
// (2 replicas) would take a-0-g-0-x, a-0-g-1-x and PodGangs a-0-g-0 and a-0-g-1. The webhook
// refuses it, naming a and the names; one whose names only scaling could share is admitted with
// a warning.
func TestWebhookRefusesAPodCliqueSetWhoseChildrenWouldTakeAnothersNames(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	pcs := func(name string, replicas int32, spec string) string {
		return fmt.Sprintf(`apiVersion: grove.io/v1alpha1
kind: PodCliqueSet
metadata: {name: %s}
spec:
  replicas: %d
  template:
%s`, name, replicas, spec)
	}
	group := func(replicas int) string {
		return fmt.Sprintf(`    cliques:
    - name: x
      spec: {roleName: x, replicas: 1, podSpec: {containers: [{name: c, image: busybox}]}}
    podCliqueScalingGroups:
    - {name: g, cliqueNames: [x], replicas: %d, minAvailable: 1}
`, replicas)
	}
	standalone := func(clique string) string {
		return fmt.Sprintf(`    cliques:
    - name: %s
      spec: {roleName: %s, replicas: 1, podSpec: {containers: [{name: c, image: busybox}]}}
`, clique, clique)
	}
	out, err := kubectlApply(t, ns, pcs("a", 1, group(3)))
	require.NoError(t, err, out)
	// The webhook reads PodCliqueSets from its cache: one it does not show yet is created, and
	// the create is tried again.
	retry := func(name string) {
		got := &grovev1alpha1.PodCliqueSet{}
		if env.Client.Get(context.Background(), clientKey(ns, name), got) == nil {
			require.NoError(t, env.Client.Delete(context.Background(), got))
			require.Eventually(t, func() bool {
				return apierrors.IsNotFound(env.Client.Get(context.Background(), clientKey(ns, name), got))
			},
				10*time.Second, 100*time.Millisecond)
		}
	}
	require.Eventually(t, func() bool {
		out, err = kubectlApply(t, ns, pcs("a-0-g", 2, standalone("x")))
		if err == nil {
			retry("a-0-g")
		}
		return err != nil
	}, 20*time.Second, 200*time.Millisecond, "a-0-g is refused: %s", out)
	assert.Contains(t, out, "metadata.name")
	assert.Contains(t, out, "PodCliqueSet a already gives its own")
	assert.Contains(t, out, "PodClique a-0-g-0-x")
	assert.Contains(t, out, "PodGang a-0-g-1")

	out, err = kubectlApply(t, ns, pcs("b", 1, group(1)))
	require.NoError(t, err, out)
	require.Eventually(t, func() bool {
		out, err = kubectlApply(t, ns, pcs("b-0-g", 1, standalone("z")))
		warned := err == nil && strings.Contains(out, "can be given the same names once either is scaled")
		if err == nil && !warned {
			retry("b-0-g")
		}
		return warned
	}, 20*time.Second, 200*time.Millisecond, "b-0-g is admitted with a warning: %s", out)
}
