package v1alpha1

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func TestDefaultBackendFollowsGREP375(t *testing.T) {
	cases := []struct {
		name        string
		profiles    []SchedulerProfile
		wantDefault SchedulerName
		wantEnabled []SchedulerName
	}{
		{"no profiles: kube-scheduler", nil, SchedulerNameKube, []SchedulerName{SchedulerNameKube}},
		{
			name:        "kube-scheduler listed as default",
			profiles:    []SchedulerProfile{{Name: SchedulerNameKube, Default: true}},
			wantDefault: SchedulerNameKube, wantEnabled: []SchedulerName{SchedulerNameKube},
		},
		{
			name:        "only KAI, marked default: kube-scheduler still enabled",
			profiles:    []SchedulerProfile{{Name: SchedulerNameKAI, Default: true}},
			wantDefault: SchedulerNameKAI, wantEnabled: []SchedulerName{SchedulerNameKube, SchedulerNameKAI},
		},
		{
			name:        "profiles without a default: kube-scheduler is the default",
			profiles:    []SchedulerProfile{{Name: SchedulerNameKAI}, {Name: SchedulerNamePlugins}},
			wantDefault: SchedulerNameKube, wantEnabled: []SchedulerName{SchedulerNameKube, SchedulerNameKAI, SchedulerNamePlugins},
		},
		{
			name:        "kube-scheduler with config is default, KAI enabled too",
			profiles:    []SchedulerProfile{{Name: SchedulerNameKube, Default: true}, {Name: SchedulerNameKAI}},
			wantDefault: SchedulerNameKube, wantEnabled: []SchedulerName{SchedulerNameKube, SchedulerNameKAI},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := SchedulerConfiguration{Profiles: tc.profiles}
			require.Empty(t, ValidateScheduler(&s, nil))
			assert.Equal(t, tc.wantDefault, s.DefaultProfileName())
			assert.Equal(t, tc.wantEnabled, s.EnabledBackends())
			for _, name := range tc.wantEnabled {
				assert.True(t, s.IsEnabled(name), name)
			}
		})
	}
}

func TestSchedulerProfilesAreValidated(t *testing.T) {
	cases := []struct {
		name     string
		profiles []SchedulerProfile
		want     []string
	}{
		{
			name:     "two defaults name both profiles",
			profiles: []SchedulerProfile{{Name: SchedulerNameKube, Default: true}, {Name: SchedulerNameKAI, Default: true}},
			want:     []string{"scheduler.profiles[1].default", "scheduler.profiles[0].default", "only one profile may be the default"},
		},
		{
			name:     "unknown backend lists the valid names",
			profiles: []SchedulerProfile{{Name: "yunikorn"}},
			want:     []string{"scheduler.profiles[0].name", `Unsupported value: "yunikorn"`, `"kube-scheduler", "kai-scheduler", "scheduler-plugins", "volcano", "lpx-scheduler"`, "type External"},
		},
		{
			name:     "an External profile must be a schedulerName",
			profiles: []SchedulerProfile{{Name: "My_Scheduler", Type: SchedulerProfileTypeExternal}},
			want:     []string{"scheduler.profiles[0].name", "schedulerName"},
		},
		{
			name:     "an External profile may not take a built-in backend's pods",
			profiles: []SchedulerProfile{{Name: "kai-scheduler", Type: SchedulerProfileTypeExternal}},
			want:     []string{"scheduler.profiles[0].name", "BuiltIn profile"},
		},
		{
			name:     "an unknown profile type",
			profiles: []SchedulerProfile{{Name: "yunikorn", Type: "Plugin"}},
			want:     []string{"scheduler.profiles[0].type", `Unsupported value: "Plugin"`},
		},
		{
			name:     "lpx-scheduler has no options",
			profiles: []SchedulerProfile{{Name: SchedulerNameLPX, Config: raw(`{"gangScheduling": false}`)}},
			want:     []string{"scheduler.profiles[0].config", `unknown field "gangScheduling"`},
		},
		{
			name:     "a backend listed twice",
			profiles: []SchedulerProfile{{Name: SchedulerNameKAI}, {Name: SchedulerNameKAI}},
			want:     []string{"scheduler.profiles[1].name", "Duplicate value", "scheduler.profiles[0].name"},
		},
		{
			name:     "a misspelt backend option is named",
			profiles: []SchedulerProfile{{Name: SchedulerNameKube, Config: raw(`{"gangScheduler": true}`)}},
			want:     []string{"scheduler.profiles[0].config", `unknown field "gangScheduler"`},
		},
		{
			name:     "a mistyped backend option is named",
			profiles: []SchedulerProfile{{Name: SchedulerNameKube, Config: raw(`{"gangScheduling": "yes"}`)}},
			want:     []string{"scheduler.profiles[0].config", "gangScheduling"},
		},
		{
			name:     "scheduler-plugins may not take another backend's schedulerName",
			profiles: []SchedulerProfile{{Name: SchedulerNamePlugins, Config: raw(`{"schedulerName": "kai-scheduler"}`)}},
			want:     []string{"scheduler.profiles[0].config.schedulerName", "another backend"},
		},
		{
			name:     "scheduler-plugins may not take Volcano's schedulerName",
			profiles: []SchedulerProfile{{Name: SchedulerNamePlugins, Config: raw(`{"schedulerName": "volcano"}`)}},
			want:     []string{"scheduler.profiles[0].config.schedulerName", "another backend"},
		},
		{
			name:     "volcano has no options",
			profiles: []SchedulerProfile{{Name: SchedulerNameVolcano, Config: raw(`{"queue": "gpu"}`)}},
			want:     []string{"scheduler.profiles[0].config", `unknown field "queue"`},
		},
		{
			name:     "scheduler-plugins timeout must be positive",
			profiles: []SchedulerProfile{{Name: SchedulerNamePlugins, Config: raw(`{"scheduleTimeoutSeconds": 0}`)}},
			want:     []string{"scheduler.profiles[0].config.scheduleTimeoutSeconds", "at least 1"},
		},
		{
			name:     "KAI default queue must be a valid name",
			profiles: []SchedulerProfile{{Name: SchedulerNameKAI, Config: raw(`{"defaultQueue": "Team A"}`)}},
			want:     []string{"scheduler.profiles[0].config.defaultQueue"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &OperatorConfiguration{Scheduler: SchedulerConfiguration{Profiles: tc.profiles}}
			SetDefaults(cfg)
			errs := Validate(cfg)
			require.Len(t, errs, 1)
			for _, w := range tc.want {
				assert.Contains(t, errs.ToAggregate().Error(), w)
			}
		})
	}
}

func raw(s string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(s)} }

func TestBackendConfigDecodesEachProfileIntoItsType(t *testing.T) {
	s := SchedulerConfiguration{Profiles: []SchedulerProfile{
		{Name: SchedulerNameKube, Config: raw(`{"gangScheduling": true}`)},
		{Name: SchedulerNameKAI, Config: raw(`{"defaultQueue": "team-a"}`)},
		{Name: SchedulerNamePlugins},
		{Name: SchedulerNameVolcano},
		{Name: SchedulerNameLPX},
		{Name: "yunikorn", Type: SchedulerProfileTypeExternal, Config: raw(`{"gangScheduling": true}`)},
	}}
	cases := []struct {
		backend SchedulerName
		want    any
	}{
		{SchedulerNameKube, &KubeSchedulerConfig{GangScheduling: true}},
		{SchedulerNameKAI, &KAISchedulerConfig{DefaultQueue: "team-a"}},
		{SchedulerNamePlugins, &SchedulerPluginsConfig{SchedulerName: DefaultSchedulerPluginsSchedulerName}},
		{SchedulerNameVolcano, &VolcanoConfig{}},
		{SchedulerNameLPX, &LPXConfig{}},
		{"yunikorn", &ExternalSchedulerConfig{GangScheduling: true}},
	}
	for _, tc := range cases {
		t.Run(string(tc.backend), func(t *testing.T) {
			got, err := s.BackendConfig(tc.backend)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	got, err := SchedulerConfiguration{}.BackendConfig(SchedulerNameKube)
	require.NoError(t, err)
	assert.Equal(t, &KubeSchedulerConfig{}, got, "kube-scheduler without a profile is plain")
}

func TestDefaultsFillEveryField(t *testing.T) {
	cfg := &OperatorConfiguration{}
	SetDefaults(cfg)
	require.Empty(t, Validate(cfg))
	assert.Equal(t, "operator.config.grove.io/v1alpha1", cfg.APIVersion)
	assert.Equal(t, float32(DefaultQPS), cfg.ClientConnection.QPS)
	assert.Equal(t, DefaultBurst, cfg.ClientConnection.Burst)
	assert.Equal(t, ptr.To(true), cfg.LeaderElection.Enabled)
	assert.Equal(t, 15*time.Second, cfg.LeaderElection.LeaseDuration.Duration)
	assert.Equal(t, 10*time.Second, cfg.LeaderElection.RenewDeadline.Duration)
	assert.Equal(t, 2*time.Second, cfg.LeaderElection.RetryPeriod.Duration)
	assert.Equal(t, []int{8080, 8081, 9443}, []int{cfg.Server.Metrics.Port, cfg.Server.HealthProbes.Port, cfg.Server.Webhooks.Port})
	assert.Equal(t, "127.0.0.1", cfg.Server.Metrics.BindAddress, "plain-HTTP metrics stay on the host unless asked otherwise")
	assert.False(t, cfg.Server.Metrics.Secure)
	assert.Equal(t, LogLevelInfo, cfg.LogLevel)
	assert.Equal(t, LogFormatJSON, cfg.LogFormat)
	assert.Equal(t, CertManagementAuto, cfg.CertManagement.Mode)
	assert.Equal(t, DebuggingConfiguration{PprofBindHost: "127.0.0.1", PprofBindPort: 2753}, cfg.Debugging, "profiling off, and on the host when turned on")
	assert.Equal(t, TrainerStatusServer{
		Endpoint: Endpoint{Port: 10443}, ServiceName: "trainer-controller-status", SecretName: "trainer-controller-status-cert",
		ServerCertDir: "/etc/grove/trainer-status-certs", QPS: 5, Burst: 10,
	}, cfg.Server.TrainerStatus, "off like Kubeflow's TrainJobStatus gate, on Kubeflow's port and client limits when turned on")
	for name, o := range cfg.Controllers.all() {
		want := DefaultConcurrentSyncs
		if name == "podClique" {
			want = DefaultPodCliqueConcurrentSyncs
		}
		assert.Equal(t, ptr.To(want), o.ConcurrentSyncs, name)
	}
}

func TestDefaultsKeepWhatIsSet(t *testing.T) {
	cfg := &OperatorConfiguration{
		ClientConnection: ClientConnectionConfiguration{QPS: 500, Burst: 1000},
		LeaderElection:   LeaderElectionConfiguration{Enabled: ptr.To(false)},
		LogLevel:         LogLevelDebug,
		Controllers:      ControllerConfiguration{PodClique: ControllerOptions{ConcurrentSyncs: ptr.To(7)}},
	}
	SetDefaults(cfg)
	assert.Equal(t, float32(500), cfg.ClientConnection.QPS)
	assert.Equal(t, 1000, cfg.ClientConnection.Burst)
	assert.Equal(t, ptr.To(false), cfg.LeaderElection.Enabled)
	assert.Equal(t, LogLevelDebug, cfg.LogLevel)
	assert.Equal(t, ptr.To(7), cfg.Controllers.PodClique.ConcurrentSyncs)
}

func TestValidationNamesTheField(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*OperatorConfiguration)
		want   string
	}{
		{"qps not positive", func(c *OperatorConfiguration) { c.ClientConnection.QPS = -1 }, "clientConnection.qps"},
		{"burst below qps", func(c *OperatorConfiguration) { c.ClientConnection.Burst = 10 }, "clientConnection.burst"},
		{"renewDeadline not above retryPeriod", func(c *OperatorConfiguration) { c.LeaderElection.RenewDeadline.Duration = time.Second }, "leaderElection.renewDeadline"},
		{"leaseDuration not above renewDeadline", func(c *OperatorConfiguration) { c.LeaderElection.LeaseDuration.Duration = 5 * time.Second }, "leaderElection.leaseDuration"},
		{"port out of range", func(c *OperatorConfiguration) { c.Server.Metrics.Port = 70000 }, "server.metrics.port"},
		{"two listeners on one port", func(c *OperatorConfiguration) { c.Server.Webhooks.Port = 8080 }, "server.webhooks.port"},
		{"trainer status server on another listener's port", func(c *OperatorConfiguration) {
			c.Server.TrainerStatus.Enabled, c.Server.TrainerStatus.Port = true, 9443
		}, "server.trainerStatus.port"},
		{"trainer status server burst below qps", func(c *OperatorConfiguration) {
			c.Server.TrainerStatus.Enabled, c.Server.TrainerStatus.Burst = true, 1
		}, "server.trainerStatus.burst"},
		{"trainer status Service name not a DNS label", func(c *OperatorConfiguration) {
			c.Server.TrainerStatus.Enabled, c.Server.TrainerStatus.ServiceName = true, "Status.Server"
		}, "server.trainerStatus.serviceName"},
		{"unknown log level", func(c *OperatorConfiguration) { c.LogLevel = "trace" }, "logLevel"},
		{"unknown log format", func(c *OperatorConfiguration) { c.LogFormat = "xml" }, "logFormat"},
		{"zero concurrent syncs", func(c *OperatorConfiguration) { c.Controllers.TrainJob.ConcurrentSyncs = ptr.To(0) }, "controllers.trainJob.concurrentSyncs"},
		{"unknown cert mode", func(c *OperatorConfiguration) { c.CertManagement.Mode = "vault" }, "certManagement.mode"},
		{"wrong kind", func(c *OperatorConfiguration) { c.Kind = "Config" }, "kind"},
		{"profiling on a bad port", func(c *OperatorConfiguration) {
			c.Debugging = DebuggingConfiguration{EnableProfiling: true, PprofBindHost: "127.0.0.1", PprofBindPort: 70000}
		}, "debugging.pprofBindPort"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &OperatorConfiguration{}
			SetDefaults(cfg)
			tc.mutate(cfg)
			errs := Validate(cfg)
			require.Len(t, errs, 1, errs.ToAggregate())
			assert.Equal(t, tc.want, errs[0].Field)
		})
	}
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.yaml")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestLoad(t *testing.T) {
	t.Run("a full file is decoded, defaulted and kept", func(t *testing.T) {
		cfg, err := Load(writeFile(t, `apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
clientConnection: {qps: 50, burst: 80}
logLevel: debug
scheduler:
  profiles:
    - name: kube-scheduler
      config: {gangScheduling: true}
    - name: kai-scheduler
      default: true
`))
		require.NoError(t, err)
		assert.Equal(t, float32(50), cfg.ClientConnection.QPS)
		assert.Equal(t, LogLevelDebug, cfg.LogLevel)
		assert.Equal(t, SchedulerNameKAI, cfg.Scheduler.DefaultProfileName())
		assert.JSONEq(t, `{"gangScheduling":true}`, string(cfg.Scheduler.Profile(SchedulerNameKube).Config.Raw))
		assert.Equal(t, DefaultHealthPort, cfg.Server.HealthProbes.Port)
	})
	t.Run("an empty path gives the defaults", func(t *testing.T) {
		cfg, err := Load("")
		require.NoError(t, err)
		assert.Equal(t, SchedulerNameKube, cfg.Scheduler.DefaultProfileName())
	})
	t.Run("an unknown field is an error naming it", func(t *testing.T) {
		_, err := Load(writeFile(t, "apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\nclientConnection: {qqps: 5}\n"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), `unknown field "clientConnection.qqps"`)
	})
	t.Run("every invalid field is reported", func(t *testing.T) {
		_, err := Load(writeFile(t, `apiVersion: operator.config.grove.io/v1alpha1
kind: OperatorConfiguration
logLevel: loud
scheduler:
  profiles:
    - {name: kube-scheduler, default: true}
    - {name: kai-scheduler, default: true}
`))
		require.Error(t, err)
		for _, want := range []string{"logLevel", "scheduler.profiles[1].default", "scheduler.profiles[0].default"} {
			assert.Contains(t, err.Error(), want)
		}
	})
	t.Run("a missing file is an error", func(t *testing.T) {
		_, err := Load(filepath.Join(t.TempDir(), "absent.yaml"))
		require.ErrorContains(t, err, "reading configuration")
	})
}
