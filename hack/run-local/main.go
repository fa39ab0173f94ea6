// Command run-local starts the whole system on this machine: the local cluster of processes
// (etcd, kube-apiserver, controller-manager, scheduler, kwok GPU nodes, JobSet), the project's
// CRDs, the four binaries each with its own identity, and the samples of config/samples; then it
// prints how to reach it and runs until interrupted. `make run-local` builds everything first.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
	"github.com/kubegrove/grove/test/toolpath"
)

// namespace is where the binaries hold their leases, as in a real deployment.
const namespace = "grove-system"

func main() {
	nodes := flag.Int("nodes", 4, "number of kwok GPU nodes")
	dir := flag.String("dir", "", "directory for logs, kubeconfigs and data (default bin/local-cluster)")
	runFor := flag.Duration("run-for", 0, "stop after this long (0: run until interrupted)")
	withKueue := flag.Bool("kueue", false, "also run the Kueue controller, turn the Kueue integration on and apply a ClusterQueue and a queued PodCliqueSet (hack/run-local/kueue.yaml)")
	samplesTimeout := flag.Duration("samples-timeout", 10*time.Minute, "fail when the samples have not all reached their final state within this long")
	monitoring := flag.Bool("monitoring", false, "also run the pinned Prometheus (make tools builds it) scraping the four binaries with the shipped alerting rules (deploy/components/monitoring)")
	plain := flag.Bool("plain-scheduler", false, "run kube-scheduler in plain mode (pods placed one by one) instead of placing each PodGang as one gang through the Workload API; implied by -kueue")
	multicluster := flag.Bool("multicluster", false, "start three clusters instead — a Kueue MultiKueue manager and two workers, each with Kueue and the four binaries — and dispatch a Training PodCliqueSet from the manager (hack/run-local/multicluster.yaml, docs/kueue.md)")
	flag.Parse()
	if *multicluster {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		if err := runMulticluster(ctx, min(*nodes, 2), *dir, *runFor, *samplesTimeout); err != nil && (ctx.Err() == nil || !errors.Is(err, context.Canceled)) {
			fmt.Fprintln(os.Stderr, "run-local:", err)
			stop()
			os.Exit(1)
		}
		return
	}
	if *withKueue && !*plain {
		fmt.Println("with Kueue, kube-scheduler runs in plain mode: Kueue admits each gang whole, and a queued PodCliqueSet is refused beside another gang scheduler (docs/kueue.md)")
		*plain = true
	}
	// Ctrl-C (or SIGTERM) is how a local run ends, at any point: everything started is stopped
	// and the exit status is 0, so make reports no error.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	err := run(ctx, *nodes, *dir, *runFor, *samplesTimeout, *withKueue, *plain, *monitoring)
	switch {
	case err == nil:
	case ctx.Err() != nil && errors.Is(err, context.Canceled):
		fmt.Println("stopped")
	default:
		fmt.Fprintln(os.Stderr, "run-local:", err)
		stop()
		os.Exit(1)
	}
}

// prepare finds the repository, empties the run's directory (default bin/local-cluster) and
// lists the CRDs every cluster installs.
func prepare(dir string) (root string, crdDirs []string, _ string, err error) {
	if root, err = toolpath.RepoRoot(); err != nil {
		return "", nil, "", err
	}
	if dir == "" {
		dir = filepath.Join(root, "bin", "local-cluster")
	}
	if err := os.RemoveAll(dir); err != nil {
		return "", nil, "", err
	}
	crdDirs, err = apiserver.CRDDirs()
	return root, crdDirs, dir, err
}

func run(ctx context.Context, nodes int, dir string, runFor, samplesTimeout time.Duration, withKueue, plain, monitoring bool) error {
	root, crdDirs, dir, err := prepare(dir)
	if err != nil {
		return err
	}
	fmt.Println("starting the local cluster ...")
	// Ctrl-C is how a local run ends: this process stops the cluster and exits 0.
	c, err := cluster.Start(ctx, cluster.Options{Nodes: nodes, Dir: dir, KeepDir: true, CRDDirs: crdDirs, Scheme: apiserver.Scheme(), Kueue: withKueue, CallerStopsOnInterrupt: true})
	if err != nil {
		return err
	}
	defer c.Stop()
	fmt.Printf("cluster up in %s\n", c.StartedIn.Round(time.Millisecond))

	if err := c.Client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return err
	}
	binaries, metrics, err := startBinaries(ctx, c, root, dir, withKueue, plain)
	// The binaries started are stopped gracefully on every way out, a failed start included.
	defer func() {
		for _, b := range binaries {
			_ = b.Process.Signal(syscall.SIGTERM)
			_ = b.Wait()
		}
	}()
	if err != nil {
		return err
	}
	var prom *cluster.Prometheus
	if monitoring {
		if prom, err = c.StartPrometheus(ctx, cluster.PrometheusOptions{Targets: metrics, Interval: 5 * time.Second}); err != nil {
			return err
		}
		if err := prom.WaitTargetsUp(ctx, time.Minute); err != nil {
			return err
		}
		fmt.Printf("prometheus ready at %s, scraping the four binaries (log: %s)\n", prom.URL, filepath.Join(dir, "prometheus.log"))
	}

	if err := runSamples(ctx, c, root, samplesTimeout, withKueue, plain); err != nil {
		return err
	}

	plugin := filepath.Join(root, "bin", "kubectl-grove")
	// What a newcomer sees of a gang: the one placed whole once there was room, or without gangs
	// the inference sample.
	shown := "pcs/big-gang"
	if plain {
		shown = "pcs/inference"
	}
	// The pods run before the PodCliqueSet's status counts the replica available: show the
	// status once it does.
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	err = waitAvailable(waitCtx, c, "default", strings.TrimPrefix(shown, "pcs/"))
	cancel()
	if err != nil {
		return err
	}
	fmt.Printf("\nkubectl grove status %s:\n", shown)
	status := exec.CommandContext(ctx, plugin, "--kubeconfig", c.AdminKubeconfig(), "status", shown)
	status.Stdout, status.Stderr = os.Stdout, os.Stderr
	if err := status.Run(); err != nil {
		return fmt.Errorf("kubectl grove status %s: %w", shown, err)
	}
	// The pinned kubectl when make tools built it (make run-local does not: it applies the samples
	// itself); else the one on the PATH.
	kubectl := "kubectl"
	if pinned, err := toolpath.Bin("kubectl"); err == nil {
		kubectl = pinned
	}
	fmt.Printf(`
The local cluster is running. Logs of every component are in %s.
  export KUBECONFIG=%s
  %s get pcs,pclq,pcsg,pg,trainjobs -A
What the samples became and why anything waits (kubectl grove, with bin/ on the PATH):
  %s status pcs/inference
  %s status pcs/training
  %s status pcs/big-gang
  %s status trainjob/mnist
  %s status trainjob/train-local
  %s why pod/inference-0-prefill-0-worker-0
`, dir, c.AdminKubeconfig(), kubectl, plugin, plugin, plugin, plugin, plugin, plugin)
	if prom != nil {
		printMonitoring(prom)
	}
	runUntilStopped(ctx, runFor)
	return nil
}

// startBinaries runs the four binaries from bin/, each with its own identity and the shared
// OperatorConfiguration, and waits until each reports ready.
func startBinaries(ctx context.Context, c *cluster.Cluster, root, dir string, withKueue, plain bool) ([]*exec.Cmd, []cluster.PrometheusTarget, error) {
	return startBinariesWith(ctx, c, root, dir, withKueue, plain, "")
}

// startBinariesWith is startBinaries with extra lines under the configuration's kueue: section
// (a worker's multiKueue.clusterName).
func startBinariesWith(ctx context.Context, c *cluster.Cluster, root, dir string, withKueue, plain bool, kueueExtra string) ([]*exec.Cmd, []cluster.PrometheusTarget, error) {
	configPath, ports, err := writeConfig(c, dir, withKueue, plain, kueueExtra)
	if err != nil {
		return nil, nil, err
	}
	var cmds []*exec.Cmd
	var targets []cluster.PrometheusTarget
	for i, b := range []struct {
		name string
		args []string
		// job is the scrape job's name as the shipped ServiceMonitor gives it (default: name).
		job string
	}{
		{name: "grove-operator"},
		{name: "grove-webhook"},
		{name: "backend-controller", args: []string{"--backend=kube-scheduler"}, job: "backend-controller-kube-scheduler"},
		{name: "trainer-controller"},
	} {
		// Each runs as its own ServiceAccount with only the roles generated for it, as deployed.
		if err := c.GrantRBAC(ctx, b.name, b.name); err != nil {
			return cmds, targets, err
		}
		kubeconfig, err := c.KubeconfigFor("system:serviceaccount:" + namespace + ":" + b.name)
		if err != nil {
			return cmds, targets, err
		}
		cfg := strings.NewReplacer("METRICS_PORT", fmt.Sprint(ports[3*i]), "HEALTH_PORT", fmt.Sprint(ports[3*i+1]), "WEBHOOK_PORT", fmt.Sprint(ports[3*i+2]), "STATUS_PORT", fmt.Sprint(ports[12+i])).Replace(configPath)
		cfgPath := filepath.Join(dir, b.name+"-config.yaml")
		if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
			return cmds, targets, err
		}
		logFile, err := os.Create(filepath.Join(dir, b.name+".log"))
		if err != nil {
			return cmds, targets, err
		}
		env, err := cluster.DeployedEnv(b.name) // the Go runtime's settings, as deployed
		if err != nil {
			return cmds, targets, err
		}
		cmd := exec.CommandContext(ctx, filepath.Join(root, "bin", b.name), append([]string{"--kubeconfig", kubeconfig, "--config", cfgPath}, b.args...)...)
		cmd.Stdout, cmd.Stderr = logFile, logFile
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		if err := cmd.Start(); err != nil {
			return cmds, targets, fmt.Errorf("starting %s (run `make build`): %w", b.name, err)
		}
		cmds = append(cmds, cmd)
		if err := waitReady(ctx, b.name, ports[3*i+1]); err != nil {
			return cmds, targets, err
		}
		fmt.Printf("%s ready (log: %s)\n", b.name, logFile.Name())
		targets = append(targets, cluster.PrometheusTarget{Job: cmp.Or(b.job, b.name), MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[3*i])})
		if b.name == "grove-webhook" {
			// Admission as deployed: the generated configurations, pointed at the local replica.
			hostPort := fmt.Sprintf("127.0.0.1:%d", ports[3*i+2])
			if err := apiserver.RegisterWebhooks(ctx, c.Client(), "config/webhook", "grove-", hostPort, c.CAPEM()); err != nil {
				return cmds, targets, err
			}
		}
	}
	return cmds, targets, nil
}

// runSamples applies the samples one after another and shows each reach its final state; it
// fails naming the sample that did not within timeout.
func runSamples(ctx context.Context, c *cluster.Cluster, root string, timeout time.Duration, withKueue, plain bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	local := func(name string) manifests { return manifests{file: filepath.Join(root, "hack", "run-local", name)} }
	steps := []struct {
		name  string
		apply manifests
		show  func() error
		skip  bool
	}{
		{name: "config/samples (inference)", apply: manifests{kustomization: filepath.Join(root, "config", "samples")},
			show: func() error {
				if err := showProgress(ctx, c, "default", "inference"); err != nil || plain {
					return err // without gangs, the condition says the gang is not kept together
				}
				return showHonoured(ctx, c, "default", "inference")
			}},
		{name: "training.yaml", apply: local("training.yaml"),
			show: func() error {
				return showPhase(ctx, c, "default", "training-local", grovev1alpha1.PodCliqueSetPhaseSucceeded)
			}},
		{name: "trainjob.yaml", apply: local("trainjob.yaml"),
			show: func() error { return showTrainJob(ctx, c, "default", "train-local", trainerv1alpha1.TrainJobComplete) }},
		// Without gangs the scheduler would place half of this gang on the first burst node.
		{name: "waiting-gang.yaml", apply: local("waiting-gang.yaml"), skip: plain,
			show: func() error { return showWaitingGang(ctx, c, "default", "big-gang") }},
		{name: "kueue.yaml", apply: local("kueue.yaml"), skip: !withKueue, show: func() error {
			if err := showProgress(ctx, c, "default", "queued"); err != nil {
				return err
			}
			fmt.Println("Kueue admitted PodCliqueSet default/queued (see its QueueAdmitted condition and Workload default/queued-0)")
			return nil
		}},
	}
	for _, step := range steps {
		if step.skip {
			continue
		}
		if err := step.apply.apply(ctx, c.Client()); err != nil {
			return fmt.Errorf("applying %s: %w", step.name, err)
		}
		if err := step.show(); err != nil {
			return fmt.Errorf("sample %s did not reach its final state within %s of the first sample: %w", step.name, timeout, err)
		}
	}
	return nil
}

// printMonitoring says where the local Prometheus is and what to ask it first. It serves its HTTP
// API only: its web UI is built with npm, which the pinned Go build leaves out.
func printMonitoring(prom *cluster.Prometheus) {
	fmt.Printf(`Prometheus scrapes the four binaries every 5s and evaluates the shipped alerts (%s).
Its HTTP API is at %s (a Grafana data source can point at it and load
deploy/components/monitoring/grove-dashboard.json). Ask it, e.g.:
  curl -s %s/api/v1/alerts                       the alerts that are pending or firing
  curl -s %s/api/v1/query --data-urlencode 'query=sum by (reason) (grove_pods_gated)'
Queries to try: sum by (reason) (grove_pods_gated)  (pods held back, and by what);
  sum by (workload_type, phase) (grove_podcliquesets)  (workloads in each phase);
  max by (reason) (grove_podgangs_unscheduled_longest_seconds)  (the longest wait for placement);
  histogram_quantile(0.9, sum by (le) (rate(grove_podgang_time_to_scheduled_seconds_bucket[5m]))).
docs/metrics.md lists every metric and the question it answers.
`, prom.RulesPath, prom.URL, prom.URL, prom.URL)
}

// manifests are what one sample step applies: a kustomization, built with kustomize's library, or
// a file.
type manifests struct{ kustomization, file string }

// apply applies the manifests in their order with server-side apply, as `kubectl apply
// --server-side` would, so the local run needs no kubectl.
func (m manifests) apply(ctx context.Context, k client.Client) error {
	var objs []*unstructured.Unstructured
	var err error
	if m.kustomization != "" {
		objs, err = apiserver.Kustomize(m.kustomization)
	} else {
		objs, err = apiserver.ReadManifests(m.file)
	}
	if err != nil {
		return err
	}
	for _, o := range objs {
		// As kubectl does: a namespaced object without a namespace goes to "default".
		if namespaced, err := k.IsObjectNamespaced(o); err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		} else if namespaced && o.GetNamespace() == "" {
			o.SetNamespace("default")
		}
		if err := k.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner("run-local"), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s %s: %w", o.GetKind(), o.GetName(), err)
		}
		fmt.Printf("%s/%s applied\n", strings.ToLower(o.GetKind()), o.GetName())
	}
	return nil
}

// runUntilStopped keeps a local run up until Ctrl-C (or, with -run-for, that long).
func runUntilStopped(ctx context.Context, runFor time.Duration) {
	fmt.Println("Press Ctrl-C to stop everything.")
	if runFor > 0 {
		select {
		case <-ctx.Done():
		case <-time.After(runFor):
		}
	} else {
		<-ctx.Done()
	}
	fmt.Println("stopping ...")
}
