package cluster

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/kubegrove/grove/test/toolpath"
)

// startJobSet runs the JobSet controller with its webhooks served on loopback and registered by
// URL (there is no Service network here); JobSet cannot run without its defaulting webhook.
func (c *Cluster) startJobSet(ctx context.Context) error {
	ports, err := FreePorts(2)
	if err != nil {
		return err
	}
	webhookPort, healthPort := ports[0], ports[1]
	certDir, err := c.loopbackServingCert("jobset-certs")
	if err != nil {
		return err
	}
	config := managerConfig("config.jobset.x-k8s.io/v1alpha1", "internalCertManagement", webhookPort, certDir, healthPort,
		cmp.Or(c.opts.JobSetQPS, 200), cmp.Or(c.opts.JobSetBurst, 300))
	configPath, err := writeFile(c.dir, "jobset-config.yaml", []byte(config))
	if err != nil {
		return err
	}
	kubeconfig, err := c.KubeconfigFor(JobSetUser, "system:masters")
	if err != nil {
		return err
	}
	if err := c.registerJobSetWebhooks(ctx, webhookPort); err != nil {
		return err
	}
	p, err := c.startReady(ctx, JobSetUser, healthPort, time.Minute, "--kubeconfig", kubeconfig, "--config", configPath, "--zap-log-level", "info")
	if err != nil {
		return err
	}
	procs := []*process{p}
	// A dry-run create passes through the defaulting and validating webhooks: once it succeeds,
	// JobSets can be created.
	probe := &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe", Namespace: "default"},
		Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
			Name: "probe", Replicas: 1,
		}}},
	}
	probe.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec = corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers:    []corev1.Container{{Name: "probe", Image: "busybox"}},
	}
	return waitUntil(ctx, "the JobSet webhooks", time.Minute, procs, func(ctx context.Context) (bool, error) {
		err := c.client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err == nil, err
	})
}

// managerConfig is the configuration file of a peer controller built on controller-runtime's
// manager (JobSet, LeaderWorkerSet, Kubeflow Trainer): no leader election, its own certificate
// management off (certKey names that section; certDir "" leaves the server's default), webhooks
// and health on loopback, no metrics, the given client limits.
func managerConfig(apiVersion, certKey string, webhookPort int, certDir string, healthPort, qps, burst int) string {
	dir := ""
	if certDir != "" {
		dir = "\n  certDir: " + certDir
	}
	return fmt.Sprintf(`apiVersion: %s
kind: Configuration
%s:
  enable: false
leaderElection:
  leaderElect: false
webhook:
  host: 127.0.0.1
  port: %d%s
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:%d
clientConnection:
  qps: %d
  burst: %d
`, apiVersion, certKey, webhookPort, dir, healthPort, qps, burst)
}

// registerJobSetWebhooks installs JobSet's own webhook configurations, pointed at loopback. The
// pod webhooks are narrowed to JobSet pods on create, as JobSet's kustomize patches do.
func (c *Cluster) registerJobSetWebhooks(ctx context.Context, port int) error {
	return c.registerWebhooksByURL(ctx, "sigs.k8s.io/jobset", "jobset-", port, func(path string, hook map[string]any) bool {
		if strings.HasSuffix(path, "-v1-pod") {
			hook["objectSelector"] = map[string]any{"matchExpressions": []any{map[string]any{
				"key": jobsetv1alpha2.JobSetNameKey, "operator": "Exists",
			}}}
			for _, r := range hook["rules"].([]any) {
				r.(map[string]any)["operations"] = []any{"CREATE"}
			}
		}
		return true
	})
}

// registerWebhooksByURL creates the webhook configurations a module ships in
// config/components/webhook/manifests.yaml, their names prefixed, each webhook pointed at
// loopback port with the cluster CA (there is no Service network here). adjust may change a
// webhook, given its path, or drop it (false).
func (c *Cluster) registerWebhooksByURL(ctx context.Context, module, prefix string, port int, adjust func(path string, hook map[string]any) bool) error {
	dir, err := moduleDir(module)
	if err != nil {
		return err
	}
	return c.registerWebhookManifests(ctx, filepath.Join(dir, "config", "components", "webhook", "manifests.yaml"), prefix, port, adjust)
}

// registerWebhookManifests is registerWebhooksByURL for the manifests in file.
func (c *Cluster) registerWebhookManifests(ctx context.Context, file, prefix string, port int, adjust func(path string, hook map[string]any) bool) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("decoding webhook manifests %s: %w", file, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		obj.SetName(prefix + obj.GetName())
		hooks, _, _ := unstructured.NestedSlice(obj.Object, "webhooks")
		var kept []any
		for i := range hooks {
			hook := hooks[i].(map[string]any)
			path := hook["clientConfig"].(map[string]any)["service"].(map[string]any)["path"].(string)
			hook["clientConfig"] = map[string]any{
				"url":      fmt.Sprintf("https://127.0.0.1:%d%s", port, path),
				"caBundle": base64.StdEncoding.EncodeToString(c.ca.CertPEM),
			}
			if adjust(path, hook) {
				kept = append(kept, hook)
			}
		}
		if err := unstructured.SetNestedSlice(obj.Object, kept, "webhooks"); err != nil {
			return err
		}
		if err := c.client.Create(ctx, obj); err != nil {
			return fmt.Errorf("registering %s: %w", obj.GetName(), err)
		}
	}
}

// loopbackServingCert writes a serving certificate for 127.0.0.1, signed by the cluster CA,
// into a directory of the cluster's and returns it.
func (c *Cluster) loopbackServingCert(name string) (string, error) {
	serving, err := c.ca.Serving("127.0.0.1", "localhost")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(c.dir, name)
	return dir, serving.WriteTLS(dir)
}

// startReady starts a controller from the tool of its name and waits until it answers /readyz
// on healthPort.
func (c *Cluster) startReady(ctx context.Context, name string, healthPort int, timeout time.Duration, args ...string) (*process, error) {
	return c.startReadyWithEnv(ctx, name, nil, healthPort, timeout, args...)
}

// startReadyWithEnv is startReady with extra environment variables.
func (c *Cluster) startReadyWithEnv(ctx context.Context, name string, env []string, healthPort int, timeout time.Duration, args ...string) (*process, error) {
	p, err := c.startWithEnv(name, name, env, args...)
	if err != nil {
		return nil, err
	}
	p.ready = func(ctx context.Context) (bool, error) {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort))
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}
	return p, waitUntil(ctx, name+" /readyz", timeout, []*process{p}, p.ready)
}

// moduleDir returns where a module the project requires lives in the module cache.
func moduleDir(path string) (string, error) {
	root, err := toolpath.RepoRoot()
	if err != nil {
		return "", err
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", path)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("locating module %s: %w", path, err)
	}
	return strings.TrimSpace(string(out)), nil
}
