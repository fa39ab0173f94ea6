// Package app is the process setup the four binaries share: flags, the OperatorConfiguration
// file, logging, the API client's rate limits, a controller-runtime manager with metrics, health
// probes, leader election (controllers) or a webhook server (grove-webhook), and graceful
// shutdown. Each binary only adds what it reconciles or serves.
package app

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"go.uber.org/zap/zapcore"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// Options describe one binary.
type Options struct {
	// Name is the binary's name, used in logs and the default lease name.
	Name string
	// LeaderElection makes the manager elect a leader (the three controller binaries).
	LeaderElection bool
	// LeaseName returns the lease name when the configuration sets none; nil means
	// "<Name>-leader". It runs after flags are parsed, so it may use them.
	LeaseName func() string
	// WebhookServer makes the manager serve admission webhooks (grove-webhook).
	WebhookServer bool
	// Validate checks the binary's flags against the configuration before anything starts.
	Validate func(cfg *configv1alpha1.OperatorConfiguration) error
	// Setup registers the binary's reconcilers or webhooks with the manager.
	Setup func(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error
	// AddToScheme adds kinds beyond the ones every binary knows.
	AddToScheme []func(*runtime.Scheme) error
	// Cache narrows what the manager's informers hold (e.g. only labelled ConfigMaps).
	Cache cache.Options
	// Informers are kinds whose informers start with the manager rather than on the first read
	// (an informer started on demand makes that request wait for its list: the first TrainJob
	// admitted after a start waited ~100 ms); the binary is unready until they have synced.
	Informers []client.Object
}

// Scheme returns the kinds every binary reads: Kubernetes' own and the project's API groups.
func Scheme(extra ...func(*runtime.Scheme) error) (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, grovev1alpha1.AddToScheme, schedulerv1alpha1.AddToScheme, trainerv1alpha1.AddToScheme,
	}, extra...) {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Main parses the command line, runs the binary until SIGTERM or SIGINT, and exits non-zero with
// the reason when it cannot start.
func Main(opts Options) {
	configPath := flag.String("config", "", "path of the OperatorConfiguration file (defaults apply when empty)")
	flag.Parse()
	if err := Run(ctrl.SetupSignalHandler(), *configPath, opts); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", opts.Name, err)
		os.Exit(1)
	}
}

// Run loads the configuration and runs the manager until ctx ends.
func Run(ctx context.Context, configPath string, opts Options) error {
	cfg, err := configv1alpha1.Load(configPath)
	if err != nil {
		return err
	}
	if opts.Validate != nil {
		if err := opts.Validate(cfg); err != nil {
			return err
		}
	}
	ctrl.SetLogger(newLogger(cfg))
	log := ctrl.Log.WithName(opts.Name)
	if m := cfg.Server.Metrics; !m.Secure && !isLoopback(m.BindAddress) {
		// Allowed (a NetworkPolicy may guard the port), but never silently.
		log.Info("metrics are served over plain HTTP without authentication beyond this host; set server.metrics.secure",
			"bindAddress", m.BindAddress, "port", m.Port)
	}

	mgr, certsReady, err := newManager(cfg, opts)
	if err != nil {
		return err
	}
	// Before Setup, which may run inside the started manager (generated certificates), where no
	// readiness check can be added any more.
	if err := warmInformers(mgr, opts.Informers); err != nil {
		return err
	}
	if opts.Setup != nil {
		if err := setupWhenReady(mgr, cfg, opts, certsReady); err != nil {
			return fmt.Errorf("setting up %s: %w", opts.Name, err)
		}
	}
	log.Info("starting", "leaderElection", opts.LeaderElection && *cfg.LeaderElection.Enabled,
		"defaultSchedulerBackend", cfg.Scheduler.DefaultProfileName())
	if err := mgr.Start(ctx); err != nil {
		return fmt.Errorf("running %s: %w", opts.Name, err)
	}
	log.Info("stopped")
	return nil
}

func newLogger(cfg *configv1alpha1.OperatorConfiguration) logr.Logger {
	level := zapcore.InfoLevel
	switch cfg.LogLevel {
	case configv1alpha1.LogLevelDebug:
		level = zapcore.DebugLevel
	case configv1alpha1.LogLevelError:
		level = zapcore.ErrorLevel
	}
	zopts := []zap.Opts{zap.Level(level)}
	if cfg.LogFormat == configv1alpha1.LogFormatText {
		zopts = append(zopts, zap.ConsoleEncoder())
	} else {
		zopts = append(zopts, zap.JSONEncoder())
	}
	return zap.New(zopts...)
}

// setupWhenReady registers the binary's reconcilers and webhooks. With generated certificates the
// webhook server must not start before the rotator wrote them, so registration — which starts
// the server — waits for them inside the running manager.
func setupWhenReady(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration, opts Options, certsReady <-chan struct{}) error {
	if certsReady == nil {
		return opts.Setup(mgr, cfg)
	}
	return mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		select {
		case <-certsReady:
		case <-ctx.Done():
			return nil
		}
		if err := opts.Setup(mgr, cfg); err != nil {
			return fmt.Errorf("setting up %s: %w", opts.Name, err)
		}
		<-ctx.Done()
		return nil
	}))
}

// newManager builds the manager; certsReady is non-nil when the webhook's certificates are
// generated by the rotator and closes once they are on disk.
func newManager(cfg *configv1alpha1.OperatorConfiguration, opts Options) (ctrl.Manager, <-chan struct{}, error) {
	restCfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("loading kubeconfig: %w", err)
	}
	restCfg.QPS = cfg.ClientConnection.QPS
	restCfg.Burst = cfg.ClientConnection.Burst
	restCfg.UserAgent = opts.Name
	mopts, err := managerOptions(cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	mgr, err := ctrl.NewManager(restCfg, mopts)
	if err != nil {
		return nil, nil, fmt.Errorf("creating manager: %w", err)
	}
	certsReady, err := addHealthChecks(mgr, cfg, opts)
	if err != nil {
		return nil, nil, err
	}
	return mgr, certsReady, nil
}

// managerOptions maps the OperatorConfiguration onto the manager: scheme, cache, metrics,
// probes, profiling, leader election and, for grove-webhook, the webhook server.
func managerOptions(cfg *configv1alpha1.OperatorConfiguration, opts Options) (ctrl.Options, error) {
	scheme, err := Scheme(opts.AddToScheme...)
	if err != nil {
		return ctrl.Options{}, err
	}
	gracefulShutdown := 10 * time.Second
	cacheOpts := opts.Cache
	if cacheOpts.DefaultTransform == nil {
		// No binary reads managedFields; dropping them from every cached object roughly halves
		// the memory a cache of pods takes.
		cacheOpts.DefaultTransform = cache.TransformStripManagedFields()
	}
	mopts := ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsOptions(cfg.Server.Metrics),
		HealthProbeBindAddress:  hostPort(cfg.Server.HealthProbes),
		GracefulShutdownTimeout: &gracefulShutdown,
		Cache:                   cacheOpts,
	}
	if d := cfg.Debugging; d.EnableProfiling {
		mopts.PprofBindAddress = net.JoinHostPort(d.PprofBindHost, strconv.Itoa(d.PprofBindPort))
	}
	if le := cfg.LeaderElection; opts.LeaderElection && *le.Enabled {
		setLeaderElection(&mopts, le, opts)
	}
	if opts.WebhookServer {
		mopts.WebhookServer = webhook.NewServer(webhook.Options{
			Host:    cfg.Server.Webhooks.BindAddress,
			Port:    cfg.Server.Webhooks.Port,
			CertDir: cfg.Server.Webhooks.ServerCertDir,
			// Go's default already, pinned so a GODEBUG setting cannot re-enable TLS 1.0/1.1.
			TLSOpts: []func(*tls.Config){minTLS12},
		})
	}
	return mopts, nil
}

// setLeaderElection turns leader election on with the configured lease; the lease is released
// on a clean stop, so a rolling update hands over at once.
func setLeaderElection(mopts *ctrl.Options, le configv1alpha1.LeaderElectionConfiguration, opts Options) {
	mopts.LeaderElection = true
	mopts.LeaderElectionID = leaseName(le, opts)
	mopts.LeaderElectionNamespace = leaseNamespace(le)
	mopts.LeaderElectionReleaseOnCancel = true
	mopts.LeaseDuration = &le.LeaseDuration.Duration
	mopts.RenewDeadline = &le.RenewDeadline.Duration
	mopts.RetryPeriod = &le.RetryPeriod.Duration
}

// addHealthChecks adds liveness and readiness; grove-webhook is ready only once its serving
// certificate is, and the returned channel closes then (nil for the other binaries).
func addHealthChecks(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration, opts Options) (<-chan struct{}, error) {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	ready := healthz.Ping
	var certsReady <-chan struct{}
	if opts.WebhookServer {
		var err error
		if ready, certsReady, err = webhookReadiness(mgr, cfg); err != nil {
			return nil, err
		}
	}
	return certsReady, mgr.AddReadyzCheck("ready", ready)
}

func webhookReadiness(mgr manager.Manager, cfg *configv1alpha1.OperatorConfiguration) (healthz.Checker, <-chan struct{}, error) {
	if cfg.CertManagement.Mode != configv1alpha1.CertManagementAuto {
		return mgr.GetWebhookServer().StartedChecker(), nil, nil
	}
	cm := cfg.CertManagement
	certsReady, err := RotateServingCertificate(mgr, types.NamespacedName{Namespace: cm.Namespace, Name: cm.SecretName},
		cfg.Server.Webhooks.ServerCertDir, "grove-webhook-ca", fmt.Sprintf("%s.%s.svc", cm.ServiceName, cm.Namespace),
		rotator.WebhookInfo{Name: cm.MutatingWebhookConfigurationName, Type: rotator.Mutating},
		rotator.WebhookInfo{Name: cm.ValidatingWebhookConfigurationName, Type: rotator.Validating})
	if err != nil {
		return nil, nil, err
	}
	return func(req *http.Request) error {
		select {
		case <-certsReady:
			return mgr.GetWebhookServer().StartedChecker()(req)
		default:
			return errors.New("webhook certificates not ready")
		}
	}, certsReady, nil
}

// RotateServingCertificate keeps a self-signed CA and a serving certificate for dnsName in the
// Secret key (which must exist; the deployment ships it empty), rotates them before they expire,
// injects the CA into the given webhook configurations, and copies the Secret's tls.crt, tls.key
// and ca.crt into dir. The channel closes once the files are there.
func RotateServingCertificate(mgr manager.Manager, key types.NamespacedName, dir, caName, dnsName string, webhooks ...rotator.WebhookInfo) (<-chan struct{}, error) {
	certsReady := make(chan struct{})
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      key,
		CertDir:        dir,
		CAName:         caName,
		CAOrganization: "grove",
		DNSName:        dnsName,
		IsReady:        certsReady,
		Webhooks:       webhooks,
		// Every replica may rotate; the Secret is the single source of truth.
		RequireLeaderElection: false,
	})
	if err != nil {
		return nil, fmt.Errorf("adding certificate rotator for %s: %w", key, err)
	}
	cs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(secretToFiles(cs, key, dir)); err != nil {
		return nil, err
	}
	return certsReady, nil
}

// metricsOptions serves /metrics as configured: plain HTTP (on 127.0.0.1 by default), or HTTPS
// with every request's bearer token authenticated by a TokenReview and authorized by a
// SubjectAccessReview for get on /metrics, so a scraper needs only a ServiceAccount bound to
// grove-metrics-reader and nobody else reads anything.
func metricsOptions(m configv1alpha1.MetricsServer) metricsserver.Options {
	opts := metricsserver.Options{BindAddress: hostPort(m.Endpoint)}
	if m.Secure {
		opts.SecureServing = true
		opts.CertDir = m.CertDir
		opts.FilterProvider = filters.WithAuthenticationAndAuthorization
		opts.TLSOpts = []func(*tls.Config){minTLS12}
	}
	return opts
}

func minTLS12(c *tls.Config) { c.MinVersion = tls.VersionTLS12 }

// isLoopback reports whether a bind address reaches this host only.
func isLoopback(addr string) bool {
	if addr == "localhost" {
		return true
	}
	ip := net.ParseIP(addr)
	return ip != nil && ip.IsLoopback()
}

func hostPort(e configv1alpha1.Endpoint) string {
	return net.JoinHostPort(e.BindAddress, strconv.Itoa(e.Port))
}

func leaseName(le configv1alpha1.LeaderElectionConfiguration, opts Options) string {
	switch {
	case le.ResourceName != "":
		return le.ResourceName
	case opts.LeaseName != nil:
		return opts.LeaseName()
	default:
		return opts.Name + "-leader"
	}
}

// serviceAccountNamespaceFile holds the pod's namespace when running in a cluster.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

func leaseNamespace(le configv1alpha1.LeaderElectionConfiguration) string {
	if le.ResourceNamespace != "" {
		return le.ResourceNamespace
	}
	if data, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return "default"
}

// warmInformers starts the informers of objs with the manager and adds the readiness check that
// waits for them (see Options.Informers).
func warmInformers(mgr manager.Manager, objs []client.Object) error {
	if len(objs) == 0 {
		return nil
	}
	for _, obj := range objs {
		if _, err := mgr.GetCache().GetInformer(context.Background(), obj); err != nil {
			return fmt.Errorf("informer for %T: %w", obj, err)
		}
	}
	return mgr.AddReadyzCheck("informers", func(*http.Request) error {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("informers not synced yet")
		}
		return nil
	})
}
