// Package v1alpha1 holds operator.config.grove.io/v1alpha1 OperatorConfiguration: the one file
// all four binaries read (`--config`), each taking the parts it needs. It is a file format, not a
// CRD: loading decodes strictly, applies defaults and validates, naming every bad field.
// +kubebuilder:object:generate=true
// +kubebuilder:skip
// +groupName=operator.config.grove.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupVersion is the API group and version of the configuration file.
var GroupVersion = schema.GroupVersion{Group: "operator.config.grove.io", Version: "v1alpha1"}

// Kind is the kind of the configuration file.
const Kind = "OperatorConfiguration"

// +kubebuilder:object:root=true

// OperatorConfiguration configures the grove-operator, grove-webhook, backend-controller and
// trainer-controller processes.
type OperatorConfiguration struct {
	metav1.TypeMeta `json:",inline"`

	// ClientConnection sets the rate limits of the API client.
	ClientConnection ClientConnectionConfiguration `json:"clientConnection"`
	// LeaderElection configures leader election of the three controller binaries.
	LeaderElection LeaderElectionConfiguration `json:"leaderElection"`
	// Server configures the metrics, health-probe and webhook listeners.
	Server ServerConfiguration `json:"server"`
	// LogLevel is debug, info or error.
	LogLevel LogLevel `json:"logLevel,omitempty"`
	// LogFormat is json or text.
	LogFormat LogFormat `json:"logFormat,omitempty"`
	// Controllers configures each reconciler.
	Controllers ControllerConfiguration `json:"controllers"`
	// CertManagement says who provides the webhook's serving certificate.
	CertManagement CertManagementConfiguration `json:"certManagement"`
	// Authorizer protects the operator's children from edits by anyone but the operator.
	Authorizer AuthorizerConfiguration `json:"authorizer"`
	// Scheduler enables scheduler backends and picks the default one.
	Scheduler SchedulerConfiguration `json:"scheduler"`
	// TopologyAwareScheduling turns topology constraints on.
	TopologyAwareScheduling TopologyAwareSchedulingConfiguration `json:"topologyAwareScheduling"`
	// Network configures multi-node NVLink (upstream Grove's network.autoMNNVLEnabled).
	Network NetworkConfiguration `json:"network,omitempty"`
	// Kueue turns on queueing of PodCliqueSets through Kueue.
	Kueue KueueConfiguration `json:"kueue,omitempty"`
	// Debugging serves Go's profiler, to find what a binary spends its time on under load.
	Debugging DebuggingConfiguration `json:"debugging,omitempty"`
	// StartupOrdering configures how pods wait for the cliques they start after when their
	// scheduler backend places a gang whole (docs/startup-ordering.md).
	StartupOrdering StartupOrderingConfiguration `json:"startupOrdering,omitempty"`
}

// StartupOrderingConfiguration configures the init container that holds a pod of a gang until
// the cliques it starts after are up.
type StartupOrderingConfiguration struct {
	// WaitImage is the init container's image (default busybox:1.37): it runs sh, cat and sleep,
	// reading the pod's grove.io/startup-gate annotation through the downward API. Point it at a
	// mirror in clusters that cannot pull from Docker Hub.
	WaitImage string `json:"waitImage,omitempty"`
}

// NetworkConfiguration configures multi-node NVLink (MNNVL).
type NetworkConfiguration struct {
	// AutoMNNVLEnabled makes the operator keep one NVIDIA ComputeDomain per grove.io/mnnvl-group
	// per PodCliqueSet replica and wire the GPU containers of enrolled cliques to it. The
	// ComputeDomain CRD (computedomains.resource.nvidia.com, from NVIDIA's DRA driver) must be
	// served: the binaries refuse to start otherwise. Off: a PodCliqueSet asking for MNNVL is
	// refused at admission.
	AutoMNNVLEnabled bool `json:"autoMNNVLEnabled,omitempty"`
}

// KueueConfiguration configures the Kueue integration (docs/kueue.md).
type KueueConfiguration struct {
	// Enabled lets PodCliqueSets labelled kueue.x-k8s.io/queue-name be admitted by Kueue gang by
	// gang: the backend-controller keeps one Kueue Workload per queued PodGang and the operator
	// labels and gates the gang's pods for it. Kueue's API (workloads.kueue.x-k8s.io) must be
	// served: the backend-controller refuses to start otherwise. Off: a queued PodCliqueSet is
	// refused at admission.
	Enabled bool `json:"enabled,omitempty"`
	// MultiKueue configures this cluster's part in Kueue's MultiKueue.
	MultiKueue MultiKueueConfiguration `json:"multiKueue,omitempty"`
}

// MultiKueueConfiguration configures a worker cluster of Kueue's MultiKueue (docs/kueue.md,
// Multi-cluster).
type MultiKueueConfiguration struct {
	// ClusterName is this cluster's name in the manager's MultiKueueClusters. A PodCliqueSet
	// MultiKueue copied here reports it in its Dispatched condition, which MultiKueue copies back
	// to the manager's object; empty: the condition says only that it runs on a worker.
	ClusterName string `json:"clusterName,omitempty"`
}

// DebuggingConfiguration serves net/http/pprof's /debug/pprof/ endpoints. Off by default: a
// profile shows the binary's internals, so it listens on the loopback address unless told
// otherwise (`kubectl port-forward` reaches it).
type DebuggingConfiguration struct {
	// EnableProfiling turns the endpoints on.
	EnableProfiling bool `json:"enableProfiling,omitempty"`
	// PprofBindHost is the IP the endpoints listen on (default 127.0.0.1).
	PprofBindHost string `json:"pprofBindHost,omitempty"`
	// PprofBindPort is their TCP port (default 2753).
	PprofBindPort int `json:"pprofBindPort,omitempty"`
}

// ClientConnectionConfiguration sets the rate limits of the API client; a 1000-pod gang is
// limited by these, so they are tunable.
type ClientConnectionConfiguration struct {
	// QPS is the sustained request rate.
	QPS float32 `json:"qps,omitempty"`
	// Burst is the short-term request allowance.
	Burst int `json:"burst,omitempty"`
}

// LeaderElectionConfiguration configures leader election. Each binary derives its own lease name
// when ResourceName is empty, so two binaries never contend for one lease.
type LeaderElectionConfiguration struct {
	// Enabled turns leader election on (default true).
	Enabled *bool `json:"enabled,omitempty"`
	// LeaseDuration is how long a lease is valid without renewal.
	LeaseDuration metav1.Duration `json:"leaseDuration,omitempty"`
	// RenewDeadline is how long the leader retries renewing before giving up.
	RenewDeadline metav1.Duration `json:"renewDeadline,omitempty"`
	// RetryPeriod is how often candidates retry.
	RetryPeriod metav1.Duration `json:"retryPeriod,omitempty"`
	// ResourceName overrides the lease name.
	ResourceName string `json:"resourceName,omitempty"`
	// ResourceNamespace is where the lease lives (default: the pod's namespace, else "default").
	ResourceNamespace string `json:"resourceNamespace,omitempty"`
}

// ServerConfiguration configures the listeners.
type ServerConfiguration struct {
	// Metrics serves Prometheus metrics at /metrics: by default plain HTTP on 127.0.0.1 only, so
	// nothing off the host can read it; the deployment serves it securely on every interface.
	Metrics MetricsServer `json:"metrics"`
	// HealthProbes serves /healthz and /readyz.
	HealthProbes Endpoint `json:"healthProbes"`
	// Webhooks serves admission requests (grove-webhook only).
	Webhooks WebhookServer `json:"webhooks"`
	// TrainerStatus receives training progress from TrainJob pods (trainer-controller only).
	TrainerStatus TrainerStatusServer `json:"trainerStatus,omitempty"`
}

// TrainerStatusServer is Kubeflow Trainer v2.3's status server, served by the trainer-controller:
// training code POSTs its progress to
// /apis/trainer.kubeflow.org/v1alpha1/namespaces/{namespace}/trainjobs/{name}/status with a
// service-account token whose audience names that TrainJob, and the server writes it to the
// TrainJob's status.trainerStatus (docs/trainjob.md#progress).
type TrainerStatusServer struct {
	// Enabled serves the endpoint on every trainer-controller replica and wires each TrainJob's
	// trainer containers to it (KUBEFLOW_TRAINER_SERVER_URL, _CA_CERT and _TOKEN, a projected
	// token volume, the ConfigMap <trainjob>-tls-config with the server's CA), as Kubeflow's
	// TrainJobStatus feature gate does. Off by default, like that gate; the deployment turns it on.
	Enabled bool `json:"enabled,omitempty"`
	// BindAddress (default all interfaces) and Port (default 10443, Kubeflow's).
	Endpoint `json:",inline"`
	// ServiceName is the Service in certManagement.namespace in front of the server (default
	// trainer-controller-status): pods post to https://<serviceName>.<namespace>.svc:<port>, and
	// it is the serving certificate's DNS name.
	ServiceName string `json:"serviceName,omitempty"`
	// SecretName holds the generated CA and certificate when certManagement.mode is auto
	// (default trainer-controller-status-cert; the deployment ships it empty).
	SecretName string `json:"secretName,omitempty"`
	// ServerCertDir holds tls.crt, tls.key and ca.crt; ca.crt is what pods trust
	// (default /etc/grove/trainer-status-certs).
	ServerCertDir string `json:"serverCertDir,omitempty"`
	// QPS and Burst limit the server's own API client (default 5 and 10, Kubeflow's), so
	// progress reports never slow the TrainJob reconciler down.
	QPS   float32 `json:"qps,omitempty"`
	Burst int     `json:"burst,omitempty"`
}

// Endpoint is a listen address.
type Endpoint struct {
	// BindAddress is the IP to listen on; empty means all (for metrics, 127.0.0.1 by default).
	BindAddress string `json:"bindAddress,omitempty"`
	// Port is the TCP port.
	Port int `json:"port,omitempty"`
}

// MetricsServer is the metrics listener.
type MetricsServer struct {
	// BindAddress (default 127.0.0.1) and Port (default 8080). Bind to 0.0.0.0 only with Secure,
	// or anyone who reaches the pod reads the metrics.
	Endpoint `json:",inline"`
	// Secure serves HTTPS and answers only requests whose bearer token the API server
	// authenticates (TokenReview) and authorizes for get on the non-resource URL /metrics
	// (SubjectAccessReview; ClusterRole grove-metrics-reader grants it): 401 without a valid
	// token, 403 without the permission. The binary's identity needs create on tokenreviews and
	// subjectaccessreviews, which config/rbac grants every binary.
	Secure bool `json:"secure,omitempty"`
	// CertDir holds tls.crt and tls.key for Secure; empty: a self-signed certificate is
	// generated at start (Prometheus then scrapes with insecureSkipVerify or its own CA).
	CertDir string `json:"certDir,omitempty"`
}

// WebhookServer is the admission listener.
type WebhookServer struct {
	Endpoint `json:",inline"`
	// ServerCertDir holds tls.crt and tls.key.
	ServerCertDir string `json:"serverCertDir,omitempty"`
}

// LogLevel is a log verbosity.
type LogLevel string

// Log levels.
const (
	LogLevelDebug LogLevel = "debug"
	LogLevelInfo  LogLevel = "info"
	LogLevelError LogLevel = "error"
)

// LogFormat is a log encoding.
type LogFormat string

// Log formats.
const (
	LogFormatJSON LogFormat = "json"
	LogFormatText LogFormat = "text"
)

// ControllerConfiguration configures each reconciler.
type ControllerConfiguration struct {
	PodCliqueSet          ControllerOptions `json:"podCliqueSet"`
	PodClique             ControllerOptions `json:"podClique"`
	PodCliqueScalingGroup ControllerOptions `json:"podCliqueScalingGroup"`
	PodGang               ControllerOptions `json:"podGang"`
	TrainJob              ControllerOptions `json:"trainJob"`
}

// ControllerOptions configures one reconciler.
type ControllerOptions struct {
	// ConcurrentSyncs is how many objects it reconciles at once: 10 by default, 20 for PodCliques.
	ConcurrentSyncs *int `json:"concurrentSyncs,omitempty"`
}

// CertManagementMode says who provides the webhook's serving certificate.
type CertManagementMode string

const (
	// CertManagementAuto: the webhook generates a self-signed CA and certificate, stores them in
	// a Secret, rotates them and injects the CA bundle into the webhook configurations.
	CertManagementAuto CertManagementMode = "auto"
	// CertManagementManual: certificates are mounted into serverCertDir by someone else
	// (cert-manager), who also injects the CA bundle.
	CertManagementManual CertManagementMode = "manual"
)

// CertManagementConfiguration configures the webhook's serving certificate.
type CertManagementConfiguration struct {
	// Mode is auto or manual.
	Mode CertManagementMode `json:"mode,omitempty"`
	// SecretName is the Secret that holds the generated certificate (auto). It must exist (the
	// deployment ships it empty); the rotator fills and rotates it.
	SecretName string `json:"secretName,omitempty"`
	// Namespace is where the Secret and the webhook Service live (auto).
	Namespace string `json:"namespace,omitempty"`
	// ServiceName is the webhook Service, the certificate's DNS name (auto).
	ServiceName string `json:"serviceName,omitempty"`
	// MutatingWebhookConfigurationName receives the CA bundle (auto).
	MutatingWebhookConfigurationName string `json:"mutatingWebhookConfigurationName,omitempty"`
	// ValidatingWebhookConfigurationName receives the CA bundle (auto).
	ValidatingWebhookConfigurationName string `json:"validatingWebhookConfigurationName,omitempty"`
}

// AuthorizerConfiguration configures the admission check that stops users from editing the
// PodCliques, PodGangs and pods the operator manages.
type AuthorizerConfiguration struct {
	// Enabled turns the check on.
	Enabled bool `json:"enabled,omitempty"`
	// ManagerUserNames are the identities of the binaries that manage the objects (default: the
	// grove-operator's and trainer-controller's service accounts in certManagement.namespace).
	ManagerUserNames []string `json:"managerUserNames,omitempty"`
	// ExemptServiceAccountUserNames may edit managed objects too.
	ExemptServiceAccountUserNames []string `json:"exemptServiceAccountUserNames,omitempty"`
}

// SchedulerName names a scheduler backend.
type SchedulerName string

// Scheduler backends this project supports.
const (
	// SchedulerNameKube is Kubernetes' kube-scheduler (pod schedulerName default-scheduler),
	// optionally gang scheduling through the Workload API.
	SchedulerNameKube SchedulerName = "kube-scheduler"
	// SchedulerNameKAI is NVIDIA's KAI scheduler.
	SchedulerNameKAI SchedulerName = "kai-scheduler"
	// SchedulerNamePlugins is scheduler-plugins' coscheduling.
	SchedulerNamePlugins SchedulerName = "scheduler-plugins"
	// SchedulerNameVolcano is the Volcano scheduler (pod schedulerName volcano): one Volcano
	// PodGroup per PodGang.
	SchedulerNameVolcano SchedulerName = "volcano"
	// SchedulerNameLPX is upstream Grove's lpx-scheduler profile: a pass-through backend whose
	// pods name lpx-scheduler, which reads Grove's PodGangs itself; it refuses topology
	// constraints.
	SchedulerNameLPX SchedulerName = "lpx-scheduler"
)

// SupportedSchedulerNames lists every built-in backend a profile may name (an External profile
// names any other scheduler).
var SupportedSchedulerNames = []SchedulerName{SchedulerNameKube, SchedulerNameKAI, SchedulerNamePlugins, SchedulerNameVolcano, SchedulerNameLPX}

// SchedulerProfileType says whether a profile is one of this project's backends or a scheduler
// the cluster runs that Grove only hands pods to (GREP-787's proposal).
type SchedulerProfileType string

const (
	// SchedulerProfileTypeBuiltIn is one of SupportedSchedulerNames (the default).
	SchedulerProfileTypeBuiltIn SchedulerProfileType = "BuiltIn"
	// SchedulerProfileTypeExternal is a pass-through profile: its name is the schedulerName the
	// pods carry; Grove creates no scheduler object for it, acknowledges each PodGang at once,
	// and refuses topology constraints (docs/scheduler-profiles.md).
	SchedulerProfileTypeExternal SchedulerProfileType = "External"
)

// SchedulerConfiguration enables scheduler backends (GREP-375). kube-scheduler is always enabled;
// other backends are enabled by listing a profile.
type SchedulerConfiguration struct {
	// Profiles enable and configure backends; at most one is the default.
	Profiles []SchedulerProfile `json:"profiles,omitempty"`
}

// SchedulerProfile enables one backend.
type SchedulerProfile struct {
	// Name is the backend: one of SupportedSchedulerNames, or for an External profile the pods'
	// schedulerName.
	Name SchedulerName `json:"name"`
	// Type is BuiltIn (default) or External.
	Type SchedulerProfileType `json:"type,omitempty"`
	// Config is the backend's own options, decoded by the backend.
	Config *runtime.RawExtension `json:"config,omitempty"`
	// Default makes this backend the one used when a workload names none.
	Default bool `json:"default,omitempty"`
}

// TopologyAwareSchedulingConfiguration turns topology-aware scheduling on.
type TopologyAwareSchedulingConfiguration struct {
	// Enabled turns it on.
	Enabled bool `json:"enabled,omitempty"`
}

// DefaultProfileName returns the backend workloads get when they name none: the profile marked
// default, else kube-scheduler. Validation rejects two defaults before this is asked.
func (s SchedulerConfiguration) DefaultProfileName() SchedulerName {
	for _, p := range s.Profiles {
		if p.Default {
			return p.Name
		}
	}
	return SchedulerNameKube
}

// EnabledBackends returns kube-scheduler followed by every other profile, in profile order.
func (s SchedulerConfiguration) EnabledBackends() []SchedulerName {
	enabled := []SchedulerName{SchedulerNameKube}
	for _, p := range s.Profiles {
		if p.Name != SchedulerNameKube {
			enabled = append(enabled, p.Name)
		}
	}
	return enabled
}

// IsEnabled reports whether a backend is enabled.
func (s SchedulerConfiguration) IsEnabled(name SchedulerName) bool {
	for _, n := range s.EnabledBackends() {
		if n == name {
			return true
		}
	}
	return false
}

// Profile returns the profile of a backend, or nil if it has none (kube-scheduler may have none).
func (s SchedulerConfiguration) Profile(name SchedulerName) *SchedulerProfile {
	for i := range s.Profiles {
		if s.Profiles[i].Name == name {
			return &s.Profiles[i]
		}
	}
	return nil
}
