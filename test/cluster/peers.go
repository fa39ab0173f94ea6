package cluster

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kubegrove/grove/test/apiserver"
)

// The peers make bench compares the project's binaries with, besides JobSet: controllers users
// choose between, built by make tools from pinned modules and run here as they ship, each under
// its own identity so the audit log tells their writes apart.
const (
	// LWSVersion is the LeaderWorkerSet release hack/tools/lws pins.
	LWSVersion = "v0.9.0"
	// LWSUser and KubeflowTrainerUser are the peers' identities in the audit log.
	LWSUser             = "lws-controller"
	KubeflowTrainerUser = "kubeflow-trainer-controller-manager"
	// JobSetUser is the JobSet controller's identity.
	JobSetUser = "jobset-controller"
)

// StartLWS installs LeaderWorkerSet's CRDs and runs its controller with client limits qps and
// burst, its webhooks served on loopback and registered by URL, the pod webhooks narrowed to
// LeaderWorkerSet pods as its kustomize patches do. The DisaggregatedSet API it also ships is
// installed (the controller needs it) but its webhook is not registered: nothing here makes one.
func (c *Cluster) StartLWS(ctx context.Context, qps, burst int) (*Process, error) {
	dir, err := apiserver.ModuleDir("sigs.k8s.io/lws", LWSVersion)
	if err != nil {
		return nil, err
	}
	// Both its APIs: the controller waits for a DisaggregatedSet informer too, and exits without.
	crds := filepath.Join(dir, "config", "crd", "bases")
	if _, err := envtest.InstallCRDs(c.admin, envtest.CRDInstallOptions{Paths: []string{crds}, ErrorIfPathMissing: true}); err != nil {
		return nil, err
	}
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	webhookPort, healthPort := ports[0], ports[1]
	certDir, err := c.loopbackServingCert("lws-certs")
	if err != nil {
		return nil, err
	}
	config := managerConfig("config.lws.x-k8s.io/v1alpha1", "internalCertManagement", webhookPort, certDir, healthPort, qps, burst)
	configPath, err := writeFile(c.dir, "lws-config.yaml", []byte(config))
	if err != nil {
		return nil, err
	}
	kubeconfig, err := c.KubeconfigFor(LWSUser, "system:masters")
	if err != nil {
		return nil, err
	}
	manifests := filepath.Join(dir, "config", "webhook", "manifests.yaml")
	if err := c.registerWebhookManifests(ctx, manifests, "lws-", webhookPort, func(path string, hook map[string]any) bool {
		if strings.Contains(path, "disaggregatedset") {
			return false
		}
		if strings.HasSuffix(path, "-v1-pod") {
			hook["objectSelector"] = map[string]any{"matchExpressions": []any{map[string]any{
				"key": "leaderworkerset.sigs.k8s.io/name", "operator": "Exists",
			}}}
		}
		return true
	}); err != nil {
		return nil, err
	}
	p, err := c.startReady(ctx, LWSUser, healthPort, time.Minute, "--kubeconfig", kubeconfig, "--config", configPath, "--zap-log-level", "info")
	if err != nil {
		return nil, err
	}
	return &Process{p: p}, nil
}

// StartKubeflowTrainer runs Kubeflow Trainer's controller manager with client limits qps and
// burst. The TrainJob and runtime CRDs are the project's (the same API). Kubeflow's webhook
// configurations are not registered: grove-webhook admits TrainJobs and runtimes for both, so a
// comparison differs in the controllers only. Both controllers reconcile TrainJobs managed by
// trainer.kubeflow.org/trainjob-controller: the caller stops the trainer-controller first.
func (c *Cluster) StartKubeflowTrainer(ctx context.Context, qps, burst int) (*Process, error) {
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	webhookPort, healthPort := ports[0], ports[1]
	// Kubeflow's configuration has no certificate directory: its webhook server reads
	// controller-runtime's default, $TMPDIR/k8s-webhook-server/serving-certs.
	tmp := filepath.Join(c.dir, "kubeflow-trainer-tmp")
	if _, err := c.loopbackServingCert(filepath.Join("kubeflow-trainer-tmp", "k8s-webhook-server", "serving-certs")); err != nil {
		return nil, err
	}
	config := managerConfig("config.trainer.kubeflow.org/v1alpha1", "certManagement", webhookPort, "", healthPort, qps, burst)
	configPath, err := writeFile(c.dir, "kubeflow-trainer-config.yaml", []byte(config))
	if err != nil {
		return nil, err
	}
	kubeconfig, err := c.KubeconfigFor(KubeflowTrainerUser, "system:masters")
	if err != nil {
		return nil, err
	}
	p, err := c.startReadyWithEnv(ctx, KubeflowTrainerUser, []string{"TMPDIR=" + tmp}, healthPort, time.Minute,
		"--kubeconfig", kubeconfig, "--config", configPath, "--zap-log-level", "info")
	if err != nil {
		return nil, err
	}
	return &Process{p: p}, nil
}

// ComponentPid is the operating-system process id of one of the cluster's own components
// (kube-controller-manager, kube-scheduler, jobset-controller, a peer…), 0 when none runs under
// that name, for resource figures (/proc/<pid>).
func (c *Cluster) ComponentPid(name string) int {
	for _, p := range c.componentProcs() {
		if p.name == name && p.cmd != nil && p.cmd.Process != nil {
			return p.cmd.Process.Pid
		}
	}
	return 0
}
