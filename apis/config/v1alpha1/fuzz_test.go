package v1alpha1

import (
	"testing"
)

// FuzzDecodeDefaultAndValidate feeds arbitrary configuration files through what every binary
// does at start — strict decoding, defaults, validation, each profile's backend options — and
// checks that nothing panics and that whatever validates has every default filled.
func FuzzDecodeDefaultAndValidate(f *testing.F) {
	f.Add([]byte("apiVersion: operator.config.grove.io/v1alpha1\nkind: OperatorConfiguration\n"))
	f.Add([]byte("server:\n  metrics: {bindAddress: 0.0.0.0, port: 8443, secure: true}\n  healthProbes: {port: 8081}\n"))
	f.Add([]byte("scheduler:\n  profiles:\n    - {name: kube-scheduler, default: true, config: {gangScheduling: true}}\n    - {name: kai-scheduler, config: {defaultQueue: q}}\n"))
	f.Add([]byte("scheduler: {profiles: [{name: scheduler-plugins, config: {schedulerName: s, scheduleTimeoutSeconds: -1}}]}\nleaderElection: {leaseDuration: -1s}\n"))
	f.Add([]byte("logLevl: debug\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := &OperatorConfiguration{}
		if decodeStrict(data, cfg) != nil {
			return
		}
		SetDefaults(cfg)
		if len(Validate(cfg)) > 0 {
			return
		}
		if cfg.ClientConnection.QPS == 0 || cfg.Server.Metrics.Port == 0 || cfg.Server.Metrics.BindAddress == "" || cfg.LeaderElection.Enabled == nil {
			t.Fatalf("a valid configuration misses defaults: %+v", cfg)
		}
		for _, p := range cfg.Scheduler.Profiles {
			_, _ = cfg.Scheduler.BackendConfig(p.Name)
		}
	})
}
