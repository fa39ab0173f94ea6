package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Defaults of the configuration file.
const (
	DefaultQPS         = 100
	DefaultBurst       = 150
	DefaultMetricsPort = 8080
	// DefaultMetricsBindAddress keeps plain-HTTP metrics on the host: a scrape from elsewhere
	// needs server.metrics.secure (authenticated and authorized) and an explicit bindAddress.
	DefaultMetricsBindAddress = "127.0.0.1"
	DefaultHealthPort         = 8081
	DefaultWebhookPort        = 9443
	DefaultPprofBindHost      = "127.0.0.1"
	DefaultPprofBindPort      = 2753
	DefaultConcurrentSyncs    = 10
	// DefaultPodCliqueConcurrentSyncs is higher: a PodClique worker spends its time waiting for
	// pod creates, and a scale-out of a hundred small cliques is paced by how many are in flight
	// (measured in make bench S3: 20 workers kept ~35 creates in flight, 10 kept ~20); the
	// PodClique reconciler bounds them at 32 across all workers (podCreatesInFlight).
	DefaultPodCliqueConcurrentSyncs = 20
	DefaultServerCertDir            = "/etc/grove/webhook-certs"
	// DefaultTrainerStatusPort, QPS and burst are Kubeflow Trainer v2.3's status server defaults.
	DefaultTrainerStatusPort          = 10443
	DefaultTrainerStatusQPS           = 5
	DefaultTrainerStatusBurst         = 10
	DefaultTrainerStatusServiceName   = "trainer-controller-status"
	DefaultTrainerStatusSecretName    = "trainer-controller-status-cert"
	DefaultTrainerStatusServerCertDir = "/etc/grove/trainer-status-certs"
	DefaultNamespace                  = "grove-system"
	// DefaultStartupWaitImage is the image of the init container that holds a pod of a gang
	// until its parent cliques are up: anything with sh, cat and sleep.
	DefaultStartupWaitImage = "busybox:1.37"
)

// SetDefaults fills every unset field.
func SetDefaults(c *OperatorConfiguration) {
	if c.APIVersion == "" {
		c.APIVersion = GroupVersion.String()
	}
	if c.Kind == "" {
		c.Kind = Kind
	}
	if c.ClientConnection.QPS == 0 {
		c.ClientConnection.QPS = DefaultQPS
	}
	if c.ClientConnection.Burst == 0 {
		c.ClientConnection.Burst = DefaultBurst
	}

	le := &c.LeaderElection
	if le.Enabled == nil {
		le.Enabled = ptr.To(true)
	}
	setDuration(&le.LeaseDuration, 15*time.Second)
	setDuration(&le.RenewDeadline, 10*time.Second)
	setDuration(&le.RetryPeriod, 2*time.Second)

	setPort(&c.Server.Metrics.Port, DefaultMetricsPort)
	setString(&c.Server.Metrics.BindAddress, DefaultMetricsBindAddress)
	setPort(&c.Server.HealthProbes.Port, DefaultHealthPort)
	setPort(&c.Server.Webhooks.Port, DefaultWebhookPort)
	setString(&c.Debugging.PprofBindHost, DefaultPprofBindHost)
	setPort(&c.Debugging.PprofBindPort, DefaultPprofBindPort)
	setString(&c.StartupOrdering.WaitImage, DefaultStartupWaitImage)
	if c.Server.Webhooks.ServerCertDir == "" {
		c.Server.Webhooks.ServerCertDir = DefaultServerCertDir
	}
	ts := &c.Server.TrainerStatus
	setPort(&ts.Port, DefaultTrainerStatusPort)
	setString(&ts.ServiceName, DefaultTrainerStatusServiceName)
	setString(&ts.SecretName, DefaultTrainerStatusSecretName)
	setString(&ts.ServerCertDir, DefaultTrainerStatusServerCertDir)
	if ts.QPS == 0 {
		ts.QPS = DefaultTrainerStatusQPS
	}
	if ts.Burst == 0 {
		ts.Burst = DefaultTrainerStatusBurst
	}

	if c.LogLevel == "" {
		c.LogLevel = LogLevelInfo
	}
	if c.LogFormat == "" {
		c.LogFormat = LogFormatJSON
	}
	if c.Controllers.PodClique.ConcurrentSyncs == nil {
		c.Controllers.PodClique.ConcurrentSyncs = ptr.To(DefaultPodCliqueConcurrentSyncs)
	}
	for _, o := range c.Controllers.all() {
		if o.ConcurrentSyncs == nil {
			o.ConcurrentSyncs = ptr.To(DefaultConcurrentSyncs)
		}
	}

	cm := &c.CertManagement
	if cm.Mode == "" {
		cm.Mode = CertManagementAuto
	}
	setString(&cm.SecretName, "grove-webhook-server-cert")
	setString(&cm.Namespace, DefaultNamespace)
	setString(&cm.ServiceName, "grove-webhook")
	setString(&cm.MutatingWebhookConfigurationName, "grove-mutating-webhook-configuration")
	setString(&cm.ValidatingWebhookConfigurationName, "grove-validating-webhook-configuration")

	if len(c.Authorizer.ManagerUserNames) == 0 {
		for _, sa := range []string{"grove-operator", "trainer-controller"} {
			c.Authorizer.ManagerUserNames = append(c.Authorizer.ManagerUserNames, "system:serviceaccount:"+cm.Namespace+":"+sa)
		}
	}
}

// all returns every controller's options, so defaulting and validation cannot miss one.
func (c *ControllerConfiguration) all() map[string]*ControllerOptions {
	return map[string]*ControllerOptions{
		"podCliqueSet":          &c.PodCliqueSet,
		"podClique":             &c.PodClique,
		"podCliqueScalingGroup": &c.PodCliqueScalingGroup,
		"podGang":               &c.PodGang,
		"trainJob":              &c.TrainJob,
	}
}

func setDuration(d *metav1.Duration, def time.Duration) {
	if d.Duration == 0 {
		d.Duration = def
	}
}

func setPort(p *int, def int) {
	if *p == 0 {
		*p = def
	}
}

func setString(s *string, def string) {
	if *s == "" {
		*s = def
	}
}
