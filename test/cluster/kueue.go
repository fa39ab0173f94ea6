package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
)

// KueueNamespace is where the Kueue controller runs (its default).
const KueueNamespace = "kueue-system"

// kueueMetricsCertDir is where Kueue (v0.17 to v0.19) always reads a metrics certificate when it does not
// manage certificates itself (cmd/kueue/main.go), even with metrics off.
const kueueMetricsCertDir = "/etc/kueue/metrics/certs"

// installKueueCRDs installs Kueue's CRDs as the module ships them, with v1beta1 no longer
// served: v1beta2 is stored, and without Kueue's conversion webhook (a Service there is not) a
// v1beta1 read would drop the fields only v1beta2 has.
func (c *Cluster) installKueueCRDs(ctx context.Context) error {
	dir, err := moduleDir("sigs.k8s.io/kueue")
	if err != nil {
		return err
	}
	out := filepath.Join(c.dir, "kueue-crds")
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(filepath.Join(dir, "config", "components", "crd", "bases"))
	if err != nil {
		return err
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, "config", "components", "crd", "bases", e.Name()))
		if err != nil {
			return err
		}
		crd := &unstructured.Unstructured{}
		if err := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(string(data)), 4096).Decode(&crd.Object); err != nil {
			return fmt.Errorf("decoding %s: %w", e.Name(), err)
		}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			if m := v.(map[string]any); m["name"] == "v1beta1" {
				m["served"] = false
			}
		}
		if err := unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions"); err != nil {
			return err
		}
		patched, err := crd.MarshalJSON()
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, strings.TrimSuffix(e.Name(), ".yaml")+".json"), patched, 0o644); err != nil {
			return err
		}
	}
	_, err = envtest.InstallCRDs(c.admin, envtest.CRDInstallOptions{Paths: []string{out}, ErrorIfPathMissing: true})
	return err
}

// StartKueue installs Kueue's CRDs and starts its controller on a cluster started without
// Options.Kueue, for a run that wants Kueue for part of it only: the bench measures its other
// scenarios without Kueue's controller competing for the machine's cores.
// It returns the Kueue process (also when Kueue was already running).
func (c *Cluster) StartKueue(ctx context.Context) (*Process, error) {
	if !c.opts.Kueue {
		if err := kueuev1beta2.AddToScheme(c.opts.Scheme); err != nil {
			return nil, err
		}
		for _, step := range []func(context.Context) error{c.installKueueCRDs, c.startKueue} {
			if err := step(ctx); err != nil {
				return nil, err
			}
		}
		c.opts.Kueue = true
	}
	return &Process{p: c.kueue}, nil
}

// KueueFrameworkJobSet is Kueue's JobSet integration, for Options.KueueFrameworks.
const KueueFrameworkJobSet = "jobset.x-k8s.io/jobset"

// kueueFrameworksYAML is Kueue's integrations.frameworks: pod and TrainJob, then
// Options.KueueFrameworks.
func (o Options) kueueFrameworksYAML() string {
	frameworks := []string{"pod", "trainer.kubeflow.org/trainjob"}
	for _, f := range o.KueueFrameworks {
		if !slices.Contains(frameworks, f) {
			frameworks = append(frameworks, f)
		}
	}
	quoted := make([]string, len(frameworks))
	for i, f := range frameworks {
		quoted[i] = strconv.Quote(f)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// startKueue runs the Kueue controller with the pod and TrainJob integrations (plus
// Options.KueueFrameworks, and a MultiKueue manager's settings when Options.MultiKueue), its
// webhooks served on loopback and registered by URL (there is no Service network here) and
// narrowed to objects that name a queue.
func (c *Cluster) startKueue(ctx context.Context) error {
	if err := c.writeKueueMetricsCert(); err != nil {
		return err
	}
	ports, err := FreePorts(2)
	if err != nil {
		return err
	}
	webhookPort, healthPort := ports[0], ports[1]
	certDir, err := c.loopbackServingCert("kueue-certs")
	if err != nil {
		return err
	}
	if err := c.client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KueueNamespace}}); client.IgnoreAlreadyExists(err) != nil {
		return err
	}
	config := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
metrics:
  bindAddress: "0"
health:
  healthProbeBindAddress: 127.0.0.1:%d
clientConnection:
  qps: 200
  burst: 300
integrations:
  frameworks: %s
featureGates:
  VisibilityOnDemand: false
  ElasticJobsViaWorkloadSlices: true
%s`, KueueNamespace, webhookPort, certDir, healthPort, c.opts.kueueFrameworksYAML(), c.opts.MultiKueue.configYAML())
	configPath, err := writeFile(c.dir, "kueue-config.yaml", []byte(config))
	if err != nil {
		return err
	}
	kubeconfig, err := c.KubeconfigFor("kueue-controller", "system:masters")
	if err != nil {
		return err
	}
	if err := c.registerKueueWebhooks(ctx, webhookPort); err != nil {
		return err
	}
	p, err := c.startReady(ctx, "kueue", healthPort, 2*time.Minute, "--kubeconfig", kubeconfig, "--config", configPath, "--zap-log-level", "2")
	if err != nil {
		return err
	}
	c.kueue = p
	procs := []*process{p}
	// A dry-run create passes through Kueue's ResourceFlavor webhooks: once it succeeds, Kueue
	// answers admission.
	probe := &kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe"}}
	return waitUntil(ctx, "the Kueue webhooks", time.Minute, procs, func(ctx context.Context) (bool, error) {
		err := c.client.Create(ctx, probe.DeepCopy(), client.DryRunAll)
		return err == nil, err
	})
}

// kueueMetricsCertMu serialises writeKueueMetricsCert: the clusters of one test binary
// (MainMulti) start side by side and share the directory.
var kueueMetricsCertMu sync.Mutex

// writeKueueMetricsCert puts a certificate where Kueue insists on reading one; the metrics
// server it would serve is off, so any valid pair does, and one already there is kept.
func (c *Cluster) writeKueueMetricsCert() error {
	kueueMetricsCertMu.Lock()
	defer kueueMetricsCertMu.Unlock()
	if _, err := os.Stat(filepath.Join(kueueMetricsCertDir, "tls.key")); err == nil {
		return nil
	}
	kp, err := c.ca.Serving("127.0.0.1")
	if err != nil {
		return err
	}
	if err := kp.WriteTLS(kueueMetricsCertDir); err != nil {
		return fmt.Errorf("writing the metrics certificate Kueue reads from %s whatever its configuration (this user cannot write there): %w", kueueMetricsCertDir, err)
	}
	return nil
}

// registerKueueWebhooks installs the Kueue webhooks this cluster needs — its own kinds, pods and
// TrainJobs, and JobSets when Options.KueueFrameworks has them — pointed at loopback; those of
// pods, TrainJobs and JobSets only see objects naming a queue, so nothing else waits on Kueue.
func (c *Cluster) registerKueueWebhooks(ctx context.Context, port int) error {
	jobsets := slices.Contains(c.opts.KueueFrameworks, KueueFrameworkJobSet)
	return c.registerWebhooksByURL(ctx, "sigs.k8s.io/kueue", "kueue-", port, func(path string, hook map[string]any) bool {
		queued := strings.HasSuffix(path, "-v1-pod") || strings.Contains(path, "-trainer-kubeflow-org-") ||
			(jobsets && strings.Contains(path, "-jobset-x-k8s-io-"))
		if queued {
			hook["objectSelector"] = map[string]any{"matchExpressions": []any{map[string]any{
				"key": "kueue.x-k8s.io/queue-name", "operator": "Exists",
			}}}
		}
		return queued || strings.Contains(path, "-kueue-x-k8s-io-")
	})
}
