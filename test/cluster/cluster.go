// Package cluster starts a whole local Kubernetes cluster as processes for e2e tests: etcd,
// kube-apiserver (RBAC, the Workload API), kube-controller-manager (garbage collector, Job,
// namespace and service-account controllers), kube-scheduler, kwok with fake GPU nodes and the
// JobSet controller with its webhooks — all built from Go modules by `make tools`, each logging to
// its own file, all torn down on Stop, on a failed start and on SIGINT/SIGTERM.
package cluster

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kubegrove/grove/test/certs"
	"github.com/kubegrove/grove/test/toolpath"
)

// Options configure a local cluster.
type Options struct {
	// Nodes is the number of kwok nodes (default 4).
	Nodes int
	// Node sets the capacity and topology labels of each node (default: DefaultNode).
	Node func(index int) NodeSpec
	// CRDDirs are extra directories of CRDs to install (JobSet's are always installed).
	CRDDirs []string
	// Dir holds logs, certificates and data; empty means a new temp dir removed on Stop
	// unless KeepDir is set.
	Dir string
	// KeepDir keeps Dir after Stop (for reading logs of a failed run).
	KeepDir bool
	// Scheme is used by Client (default: client-go's kinds plus JobSet).
	Scheme *runtime.Scheme
	// StartTimeout bounds the whole start (default 3 minutes).
	StartTimeout time.Duration
	// APIServerOnly starts only etcd and kube-apiserver (RBAC, audit log, CRDs): no
	// controller-manager, scheduler, kwok nodes or JobSet controller. For tests of what the API
	// server and the project's binaries decide on their own, which start in seconds this way.
	APIServerOnly bool
	// ControllerManagerArgs are extra kube-controller-manager flags, after the cluster's own.
	ControllerManagerArgs []string
	// KwokPodParallelism is how many pod stages kwok plays at once (0: kwok's default, 4). A real
	// cluster has a kubelet per node reporting in parallel; with 4 for all nodes, kwok's status
	// patches become the pace of thousands of pods as soon as the API server answers slowly.
	KwokPodParallelism int
	// Kueue installs Kueue's CRDs and runs its controller (the pinned tool) with the pod and
	// TrainJob integrations.
	Kueue bool
	// KueueFrameworks are Kueue integrations enabled besides pod and TrainJob (its
	// integrations.frameworks, e.g. KueueFrameworkJobSet, whose webhooks then see JobSets naming
	// a queue). Only with Kueue.
	KueueFrameworks []string
	// MultiKueue makes Kueue's configuration that of a MultiKueue manager (short garbage
	// collection and worker-lost timeouts, PodCliqueSets served by the generic adapter): see
	// ConnectWorkers. Only with Kueue.
	MultiKueue *MultiKueueManager
	// FlatGangs serves the Workload API without CompositePodGroup (scheduling.k8s.io/v1alpha3,
	// feature gate CompositePodGroup): a backend in gang mode then makes each PodGang one flat
	// PodGroup. By default the cluster serves hierarchical gangs, as the newest kube-scheduler
	// does; whether the project's binaries place gangs at all is their configuration's choice
	// (GangSchedulerConfig).
	FlatGangs bool
	// SchedulerArgs are extra kube-scheduler flags, after the cluster's own.
	SchedulerArgs []string
	// LeaderElectionTimings are the project's binaries' lease timings (default "leaseDuration: 6s,
	// renewDeadline: 4s, retryPeriod: 1s": fast takeovers for the tests that kill leaders).
	LeaderElectionTimings string
	// CallerStopsOnInterrupt leaves SIGINT and SIGTERM to the caller, which stops the cluster
	// itself (make run-local, whose Ctrl-C is a normal end); by default an interrupted test binary
	// stops the cluster and exits 130.
	CallerStopsOnInterrupt bool
	// JobSetQPS and JobSetBurst are the JobSet controller's client limits (default 200 and 300);
	// make bench gives every controller the same.
	JobSetQPS, JobSetBurst int
}

// featureGates are the feature gates of kube-apiserver and kube-scheduler.
func (o Options) featureGates() string {
	gates := "GenericWorkload=true,TopologyAwareWorkloadScheduling=true"
	if !o.FlatGangs {
		gates += ",CompositePodGroup=true"
	}
	return gates
}

// runtimeConfig are the API versions kube-apiserver serves beyond its defaults.
func (o Options) runtimeConfig() string {
	if !o.FlatGangs {
		return "scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true"
	}
	return "scheduling.k8s.io/v1beta1=true"
}

// Cluster is a running local cluster.
type Cluster struct {
	opts    Options
	dir     string
	ca      *certs.CA
	apiURL  string
	etcdURL string
	admin   *rest.Config
	client  client.Client
	// mu guards procs and components: tests start, kill and restart processes from several
	// goroutines.
	mu    sync.Mutex
	procs []*process // every process, stopped newest first
	// stopping is set once Stop begins; no process starts after it.
	stopping bool
	// restartMu serialises Restart and RestartExited, so a component is never started twice.
	restartMu sync.Mutex
	// components are the cluster's own processes (not the binaries tests start and may kill):
	// a wait fails early when one of them dies.
	components []*process
	stopOnce   sync.Once
	stopSig    chan os.Signal
	// kueue is the Kueue controller's process, once started.
	kueue *process
	// tailsShown is set once a failed test printed the log tails, so Main does not repeat them.
	tailsShown atomic.Bool
	StartedIn  time.Duration
}

// DefaultScheme is client-go's kinds plus JobSet.
func DefaultScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(jobsetv1alpha2.AddToScheme(s))
	return s
}

// Start builds nothing and starts everything; it returns when every component is ready, or
// stops what it started and returns why not.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	begin := time.Now()
	if opts.Nodes == 0 {
		opts.Nodes = 4
	}
	if opts.Node == nil {
		opts.Node = DefaultNode
	}
	if opts.Scheme == nil {
		opts.Scheme = DefaultScheme()
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 3 * time.Minute
	}
	if opts.Kueue {
		utilruntime.Must(kueuev1beta2.AddToScheme(opts.Scheme))
	}
	c := &Cluster{opts: opts, dir: opts.Dir}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "grove-cluster-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	if !opts.CallerStopsOnInterrupt {
		c.stopOnInterrupt()
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n(logs in %s)", err, c.dir)
			c.opts.KeepDir = true
			c.Stop()
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()

	if c.ca, err = certs.NewCA("grove-local-cluster-ca"); err != nil {
		return nil, err
	}
	steps := []func(context.Context) error{c.startEtcd, c.startAPIServer, c.installCRDs}
	if !opts.APIServerOnly {
		steps = append(steps, c.startControlPlane, c.createNodes, c.startJobSet)
	}
	if opts.Kueue {
		steps = append(steps, c.installKueueCRDs)
		if !opts.APIServerOnly {
			steps = append(steps, c.startKueue)
		}
	}
	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	c.StartedIn = time.Since(begin)
	return c, nil
}

// RESTConfig returns the admin (system:masters) client configuration.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.admin) }

// Client returns an admin client with the cluster's scheme.
func (c *Cluster) Client() client.Client { return c.client }

// Dir is where logs, certificates and kubeconfigs are.
func (c *Cluster) Dir() string { return c.dir }

// Keep keeps Dir, with every component's log, after Stop: a run that failed calls it.
func (c *Cluster) Keep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opts.KeepDir = true
}

// AdminKubeconfig is the path of the admin kubeconfig.
func (c *Cluster) AdminKubeconfig() string { return filepath.Join(c.dir, "kubeconfig-admin") }

// CAPEM is the cluster CA, for webhook configurations of processes tests start.
func (c *Cluster) CAPEM() []byte { return c.ca.CertPEM }

// CA signs serving certificates for webhook servers tests start.
func (c *Cluster) CA() *certs.CA { return c.ca }

// Stop stops every component, newest first, and removes the directory unless asked to keep it.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		if c.stopSig != nil {
			signal.Stop(c.stopSig)
		}
		c.restartMu.Lock() // let a restart in progress finish
		c.mu.Lock()
		c.stopping = true
		procs := append([]*process(nil), c.procs...)
		keep := c.opts.KeepDir
		c.mu.Unlock()
		c.restartMu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop(10 * time.Second)
		}
		if !keep && c.opts.Dir == "" {
			_ = os.RemoveAll(c.dir)
		}
	})
}

// LogTails returns the end of every component's log, for a failed test's output.
func (c *Cluster) LogTails(lines int) string {
	var b strings.Builder
	c.mu.Lock()
	procs := append([]*process(nil), c.procs...)
	c.mu.Unlock()
	for _, p := range procs {
		fmt.Fprintf(&b, "--- %s (%s) ---\n%s\n", p.name, p.logPath, p.tail(lines))
	}
	return b.String()
}

// stopOnInterrupt tears the cluster down when the test binary is interrupted, so ^C or a CI
// timeout leaves no processes behind.
func (c *Cluster) stopOnInterrupt() {
	c.stopSig = make(chan os.Signal, 1)
	signal.Notify(c.stopSig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if _, ok := <-c.stopSig; ok {
			c.Stop()
			os.Exit(130)
		}
	}()
}

func (c *Cluster) start(name, tool string, args ...string) (*process, error) {
	return c.startWithEnv(name, tool, nil, args...)
}

// startWithEnv is start with extra environment variables.
func (c *Cluster) startWithEnv(name, tool string, env []string, args ...string) (*process, error) {
	bin, err := toolpath.Bin(tool)
	if err != nil {
		return nil, err
	}
	p, err := startProcess(name, bin, c.dir, args, env...)
	if err != nil {
		return nil, err
	}
	if err := c.addProc(p, true); err != nil {
		return nil, err
	}
	return p, nil
}

// ErrStopping is returned for a process started or restarted once the cluster is stopping.
var ErrStopping = errors.New("the cluster is stopping")

// addProc records a process to stop with the cluster; component marks the cluster's own. A
// process started while the cluster stops (a test's supervisor restarting a binary Stop just
// killed) is killed at once, so nothing outlives the cluster.
func (c *Cluster) addProc(p *process, component bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		p.kill()
		return fmt.Errorf("%w: %s not started", ErrStopping, p.name)
	}
	c.procs = append(c.procs, p)
	if component {
		c.components = append(c.components, p)
	}
	return nil
}

// componentProcs is a snapshot of the cluster's own processes.
func (c *Cluster) componentProcs() []*process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*process(nil), c.components...)
}

// Components names the cluster's own processes, the names Restart accepts.
func (c *Cluster) Components() []string {
	var names []string
	for _, p := range c.componentProcs() {
		names = append(names, p.name)
	}
	return names
}

// Restart stops one of the cluster's own components (SIGKILL when kill, as a crash; else SIGTERM,
// as an upgrade, and SIGKILL after 10 s: kube-apiserver stops serving at once but may linger far
// longer) and starts it again with the same flags and data — etcd keeps its data dir, so a
// restarted kube-apiserver serves every stored object — and waits until it serves again. The
// component's log continues in the same file. Components that exit while it is down (a
// controller-manager that cannot renew its lease gives up) are restarted afterwards too, as a
// kubelet restarts crashed static pods.
func (c *Cluster) Restart(ctx context.Context, component string, kill bool) error {
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	var old *process
	for _, p := range c.componentProcs() {
		if p.name == component {
			old = p
		}
	}
	if old == nil {
		return fmt.Errorf("no component %q (have %v)", component, c.Components())
	}
	if kill {
		old.kill()
	} else {
		old.stop(10 * time.Second)
	}
	if err := c.replace(ctx, old); err != nil {
		return err
	}
	_, err := c.restartExited(ctx)
	return err
}

// RestartExited starts again every component of the cluster that has exited on its own (not
// stopped with Process.Stop), waits until each serves, and returns their names. Tests that
// restart the API server call it now and then: a component that lost its leader lease while the
// API server was down exits a little later.
func (c *Cluster) RestartExited(ctx context.Context) ([]string, error) {
	c.restartMu.Lock()
	defer c.restartMu.Unlock()
	return c.restartExited(ctx)
}

// Supervise restarts, every period until ctx ends, each of the cluster's own components that
// exited, as a kubelet restarts a crashed static pod, and tells restarted of each (err: a restart
// that failed). kube-scheduler and kube-controller-manager exit when they cannot renew their
// leader lease within its deadline, which an API server saturated by thousands of pod creates on
// two cores can make them miss: without a restart, no pod is bound for the rest of the run.
func (c *Cluster) Supervise(ctx context.Context, period time.Duration, restarted func(names []string, err error)) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		names, err := c.RestartExited(ctx)
		if errors.Is(err, ErrStopping) || ctx.Err() != nil {
			return
		}
		if len(names) > 0 || err != nil {
			restarted(names, err)
		}
	}
}

func (c *Cluster) restartExited(ctx context.Context) ([]string, error) {
	var restarted []string
	for _, p := range c.componentProcs() {
		if done, _ := p.exited(); !done || p.retired.Load() {
			continue
		}
		if err := c.replace(ctx, p); err != nil {
			return restarted, err
		}
		restarted = append(restarted, p.name)
	}
	return restarted, nil
}

// replace starts a new process in place of an exited one and waits until it is ready.
func (c *Cluster) replace(ctx context.Context, old *process) error {
	np, err := old.again()
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.stopping {
		c.mu.Unlock()
		np.kill()
		return fmt.Errorf("%w: %s not restarted", ErrStopping, np.name)
	}
	for i, p := range c.components {
		if p == old {
			c.components[i] = np
		}
	}
	c.procs = append(c.procs, np)
	c.mu.Unlock()
	if np.ready == nil {
		return nil
	}
	return waitUntil(ctx, np.name+" ready after a restart", 2*time.Minute, []*process{np}, np.ready)
}

func freePort() (int, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// FreePorts returns n distinct free loopback ports, none handed out before in this test process.
// Every listener stays open until all are chosen: one closed at once may be handed out again by
// the next (seen: a binary's webhook and metrics ports equal, and its configuration refused; and a
// backend-controller's metrics port taken by the next binary started before it had bound it).
func FreePorts(n int) ([]int, error) {
	handedOutMu.Lock()
	defer handedOutMu.Unlock()
	ports := make([]int, 0, n)
	for len(ports) < n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		port := l.Addr().(*net.TCPAddr).Port
		if handedOut[port] {
			// Handed to a process that may not have bound it yet: the kernel gives a port
			// back once its listener closes, and two binaries would then race for it.
			continue
		}
		handedOut[port] = true
		ports = append(ports, port)
	}
	return ports, nil
}

// handedOut are the ports FreePorts gave out in this test process, never given twice.
var (
	handedOutMu sync.Mutex
	handedOut   = map[int]bool{}
)

func (c *Cluster) startEtcd(ctx context.Context) error {
	ports, err := FreePorts(2)
	if err != nil {
		return err
	}
	client := fmt.Sprintf("http://127.0.0.1:%d", ports[0])
	peer := fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	p, err := c.start("etcd", "etcd",
		"--data-dir", filepath.Join(c.dir, "etcd"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "default="+peer,
		"--unsafe-no-fsync", "--quota-backend-bytes", strconv.Itoa(4<<30),
		"--log-level", "warn",
	)
	if err != nil {
		return err
	}
	c.etcdURL = client
	p.ready = func(ctx context.Context) (bool, error) {
		resp, err := http.Get(client + "/health")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}
	return waitUntil(ctx, "etcd health", time.Minute, []*process{p}, p.ready)
}

func (c *Cluster) startAPIServer(ctx context.Context) error {
	serving, err := c.ca.Serving("127.0.0.1", "localhost", "kubernetes.default.svc")
	if err != nil {
		return err
	}
	certDir := filepath.Join(c.dir, "apiserver")
	if err := serving.WriteTLS(certDir); err != nil {
		return err
	}
	caFile, err := writeFile(c.dir, "ca.crt", c.ca.CertPEM)
	if err != nil {
		return err
	}
	saKey, saPub, err := c.serviceAccountKeys()
	if err != nil {
		return err
	}
	policy, err := writeFile(c.dir, "audit-policy.yaml", []byte(auditPolicy))
	if err != nil {
		return err
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	c.apiURL = fmt.Sprintf("https://127.0.0.1:%d", port)
	p, err := c.start("kube-apiserver", "kube-apiserver",
		"--etcd-servers", c.etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--tls-cert-file", filepath.Join(certDir, "tls.crt"), "--tls-private-key-file", filepath.Join(certDir, "tls.key"),
		"--client-ca-file", caFile,
		"--service-account-key-file", saPub, "--service-account-signing-key-file", saKey,
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-cluster-ip-range", "10.96.0.0/16",
		"--authorization-mode", "RBAC",
		"--endpoint-reconciler-type", "none",
		"--feature-gates", c.opts.featureGates(),
		"--runtime-config", c.opts.runtimeConfig(),
		// Pods of a fresh namespace must not wait for its default ServiceAccount; kwok runs no
		// containers that would use a token.
		"--disable-admission-plugins", "ServiceAccount",
		"--allow-privileged",
		"--audit-policy-file", policy, "--audit-log-path", c.auditLogPath(), "--audit-log-format", "json",
		// In MB; 0 would mean lumberjack's default of 100 MB, after which the log is rotated
		// away from the path the tests read.
		"--audit-log-maxsize", "100000",
		"--cert-dir", certDir,
		// On SIGTERM, end open watches after a second instead of waiting for them to time out, so
		// a graceful stop or restart does not linger.
		"--shutdown-watch-termination-grace-period", "1s",
	)
	if err != nil {
		return err
	}
	if _, err := c.KubeconfigFor("admin", "system:masters"); err != nil {
		return err
	}
	if c.admin, err = c.RESTConfigFor("admin", "system:masters"); err != nil {
		return err
	}
	c.admin.QPS, c.admin.Burst = 200, 400
	if c.client, err = client.New(c.admin, client.Options{Scheme: c.opts.Scheme}); err != nil {
		return err
	}
	httpClient, err := rest.HTTPClientFor(c.admin)
	if err != nil {
		return err
	}
	p.ready = func(ctx context.Context) (bool, error) {
		resp, err := httpClient.Get(c.apiURL + "/readyz")
		if err != nil {
			return false, err
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	}
	return waitUntil(ctx, "kube-apiserver /readyz", 2*time.Minute, []*process{p}, p.ready)
}

func (c *Cluster) serviceAccountKeys() (keyPath, pubPath string, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return "", "", err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return "", "", err
	}
	if keyPath, err = writeFile(c.dir, "sa.key", pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})); err != nil {
		return "", "", err
	}
	pubPath, err = writeFile(c.dir, "sa.pub", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}))
	return keyPath, pubPath, err
}

// installCRDs installs JobSet's CRDs and the extra directories, and waits until they are served.
func (c *Cluster) installCRDs(ctx context.Context) error {
	jobsetDir, err := moduleDir("sigs.k8s.io/jobset")
	if err != nil {
		return err
	}
	dirs := append([]string{filepath.Join(jobsetDir, "config", "components", "crd", "bases")}, c.opts.CRDDirs...)
	_, err = envtest.InstallCRDs(c.admin, envtest.CRDInstallOptions{Paths: dirs, ErrorIfPathMissing: true})
	return err
}

func (c *Cluster) startControlPlane(ctx context.Context) error {
	kcmConfig, err := c.KubeconfigFor("system:kube-controller-manager", "system:masters")
	if err != nil {
		return err
	}
	schedConfig, err := c.KubeconfigFor("system:kube-scheduler", "system:masters")
	if err != nil {
		return err
	}
	kwokConfigPath, err := c.writeKwokConfig()
	if err != nil {
		return err
	}
	kcm, err := c.start("kube-controller-manager", "kube-controller-manager", append([]string{
		"--kubeconfig", kcmConfig,
		"--authentication-kubeconfig", kcmConfig, "--authorization-kubeconfig", kcmConfig,
		"--secure-port", "0",
		"--controllers", "*",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file", filepath.Join(c.dir, "sa.key"),
		"--root-ca-file", filepath.Join(c.dir, "ca.crt"),
		"--concurrent-gc-syncs", "10",
		// The Workload API's gates too: without GenericWorkload its podgroup-protection
		// controller is off, and a PodGroup keeps its finalizer, and its namespace, forever.
		"--feature-gates", c.opts.featureGates(),
	}, c.opts.ControllerManagerArgs...)...,
	)
	if err != nil {
		return err
	}
	sched, err := c.start("kube-scheduler", "kube-scheduler", append([]string{
		"--kubeconfig", schedConfig,
		"--authentication-kubeconfig", schedConfig, "--authorization-kubeconfig", schedConfig,
		"--secure-port", "0",
		"--feature-gates", c.opts.featureGates(),
	}, c.opts.SchedulerArgs...)...,
	)
	if err != nil {
		return err
	}
	kwokConfig, err := c.KubeconfigFor(kwokUser, "system:masters")
	if err != nil {
		return err
	}
	if err := c.limitKwokDeletes(ctx); err != nil {
		return err
	}
	kwok, err := c.start("kwok", "kwok",
		"--kubeconfig", kwokConfig,
		"--config", kwokConfigPath,
		"--manage-all-nodes=false",
		"--manage-nodes-with-label-selector", LabelKwokNode,
		"--node-lease-duration-seconds", "40",
		"--cidr", "10.244.0.0/16",
		"--node-ip", "10.0.0.1",
	)
	if err != nil {
		return err
	}
	procs := []*process{kcm, sched, kwok}
	for _, lease := range []string{"kube-controller-manager", "kube-scheduler"} {
		if err := c.waitForLease(ctx, "kube-system", lease, procs); err != nil {
			return err
		}
	}
	return waitUntil(ctx, "the default ServiceAccount", time.Minute, procs, func(ctx context.Context) (bool, error) {
		err := c.client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, client.IgnoreNotFound(err)
	})
}

// kwokUser is kwok's identity: the kubelet it plays.
const kwokUser = "system:kwok"

// limitKwokDeletes lets kwok delete only pods that are being deleted, as a kubelet does. kwok
// deletes a pod by name where a kubelet deletes it by UID, and it may play the deletion of one pod
// twice: the second delete then removes the pod a controller created since under the same name
// (measured in make bench: 12,028 pods of a restarted 1000-pod gang deleted by kwok within four
// minutes, each recreated by its PodClique, which reuses its pods' names).
func (c *Cluster) limitKwokDeletes(ctx context.Context) error {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "kwok-deletes-only-pods-being-deleted"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
				},
			}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "kwok", Expression: fmt.Sprintf("request.userInfo.username == %q", kwokUser)}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "has(oldObject.metadata.deletionTimestamp)",
				Message:    "kwok deletes only pods being deleted: a kubelet deletes by UID, kwok by name",
			}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}
	for _, obj := range []client.Object{policy, binding} {
		if err := c.client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("kwok's delete policy: %w", err)
		}
	}
	return nil
}

func (c *Cluster) writeKwokConfig() (string, error) {
	data, err := kwokConfig()
	if err != nil {
		return "", err
	}
	if n := c.opts.KwokPodParallelism; n > 0 {
		// kwok defaults none of a configuration file's other options: they are its defaults.
		data = append(data, fmt.Sprintf(`
---
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: %d
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
  enableDebuggingHandlers: true
  enableContentionProfiling: false
  enableProfilingHandler: true
`, n)...)
	}
	return writeFile(c.dir, "kwok.yaml", data)
}

// waitForLease waits until a component holds its leader lease: the sign that it is running
// its controllers.
func (c *Cluster) waitForLease(ctx context.Context, ns, name string, procs []*process) error {
	return waitUntil(ctx, "leader lease "+ns+"/"+name, 2*time.Minute, procs, func(ctx context.Context) (bool, error) {
		lease, err := getLease(ctx, c.client, ns, name)
		if err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return lease.Spec.HolderIdentity != nil && *lease.Spec.HolderIdentity != "", nil
	})
}
