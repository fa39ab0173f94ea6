package v1alpha1

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// KubeSchedulerConfig is the config of the kube-scheduler profile.
type KubeSchedulerConfig struct {
	// GangScheduling makes kube-scheduler place each PodGang as one gang through the Kubernetes
	// Workload API (scheduling.k8s.io/v1beta1 Workload and PodGroup). Off: pods are placed one
	// by one.
	GangScheduling bool `json:"gangScheduling,omitempty"`
}

// KAISchedulerConfig is the config of the kai-scheduler profile.
type KAISchedulerConfig struct {
	// DefaultQueue is the KAI queue of PodCliqueSets without a kai.scheduler/queue label. Empty:
	// such PodCliqueSets are rejected at admission, since KAI schedules nothing without a queue.
	DefaultQueue string `json:"defaultQueue,omitempty"`
}

// SchedulerPluginsConfig is the config of the scheduler-plugins (coscheduling) profile.
type SchedulerPluginsConfig struct {
	// SchedulerName is the pod schedulerName of the scheduler-plugins scheduler (default
	// scheduler-plugins-scheduler, the name its Helm chart gives it).
	SchedulerName string `json:"schedulerName,omitempty"`
	// ScheduleTimeoutSeconds is how long the coscheduling plugin waits for a whole gang before it
	// rejects the members it holds (unset: the plugin's own default).
	ScheduleTimeoutSeconds *int32 `json:"scheduleTimeoutSeconds,omitempty"`
}

// VolcanoConfig is the config of the volcano profile. It has no options: a gang's Volcano queue
// comes from its PodCliqueSet (annotation scheduling.grove.io/volcano-queue, else Volcano's
// "default" queue), and pods name the scheduler Volcano installs, "volcano".
type VolcanoConfig struct{}

// LPXConfig is the config of the lpx-scheduler profile. It has no options.
type LPXConfig struct{}

// ExternalSchedulerConfig is the config of an External (pass-through) profile.
type ExternalSchedulerConfig struct {
	// GangScheduling says the scheduler places each of Grove's PodGangs whole (it reads them
	// itself). Then startup ordering holds dependent pods at start rather than at their gate
	// (docs/startup-ordering.md). Off: the scheduler places pods one by one.
	GangScheduling bool `json:"gangScheduling,omitempty"`
}

// VolcanoPodSchedulerName is the pod schedulerName of Volcano's scheduler.
const VolcanoPodSchedulerName = "volcano"

// DefaultSchedulerPluginsSchedulerName is the pod schedulerName of scheduler-plugins by default.
const DefaultSchedulerPluginsSchedulerName = "scheduler-plugins-scheduler"

// BackendConfig decodes a profile's config into the typed config of its backend, strictly:
// an unknown or mistyped field is an error naming it. A backend without a profile, or a profile
// without config, gets the zero config with defaults.
func (s SchedulerConfiguration) BackendConfig(name SchedulerName) (any, error) {
	var cfg any
	switch p := s.Profile(name); {
	case p != nil && p.Type == SchedulerProfileTypeExternal:
		cfg = &ExternalSchedulerConfig{}
	case name == SchedulerNameLPX:
		cfg = &LPXConfig{}
	case name == SchedulerNameKube:
		cfg = &KubeSchedulerConfig{}
	case name == SchedulerNameKAI:
		cfg = &KAISchedulerConfig{}
	case name == SchedulerNamePlugins:
		cfg = &SchedulerPluginsConfig{}
	case name == SchedulerNameVolcano:
		cfg = &VolcanoConfig{}
	default:
		return nil, fmt.Errorf("unknown scheduler backend %q", name)
	}
	if p := s.Profile(name); p != nil && p.Config != nil && len(p.Config.Raw) > 0 {
		strict, err := kjson.UnmarshalStrict(p.Config.Raw, cfg)
		if err != nil {
			return nil, err
		}
		if len(strict) > 0 {
			return nil, strict[0]
		}
	}
	if c, ok := cfg.(*SchedulerPluginsConfig); ok && c.SchedulerName == "" {
		c.SchedulerName = DefaultSchedulerPluginsSchedulerName
	}
	return cfg, nil
}

// validateBackendConfig checks a profile's config beyond its JSON shape.
func validateBackendConfig(s SchedulerConfiguration, name SchedulerName, path *field.Path) field.ErrorList {
	cfg, err := s.BackendConfig(name)
	if err != nil {
		return field.ErrorList{field.Invalid(path, "", err.Error())}
	}
	var errs field.ErrorList
	switch c := cfg.(type) {
	case *SchedulerPluginsConfig:
		for _, msg := range validation.IsDNS1123Subdomain(c.SchedulerName) {
			errs = append(errs, field.Invalid(path.Child("schedulerName"), c.SchedulerName, msg))
		}
		if c.SchedulerName == "default-scheduler" || c.SchedulerName == "kai-scheduler" || c.SchedulerName == VolcanoPodSchedulerName {
			errs = append(errs, field.Invalid(path.Child("schedulerName"), c.SchedulerName, "is the schedulerName of another backend"))
		}
		if t := c.ScheduleTimeoutSeconds; t != nil && *t < 1 {
			errs = append(errs, field.Invalid(path.Child("scheduleTimeoutSeconds"), *t, "must be at least 1"))
		}
	case *KAISchedulerConfig:
		if c.DefaultQueue != "" {
			for _, msg := range validation.IsDNS1123Subdomain(c.DefaultQueue) {
				errs = append(errs, field.Invalid(path.Child("defaultQueue"), c.DefaultQueue, msg))
			}
		}
	}
	return errs
}

// SchedulerPlugins is the scheduler-plugins backend's config when that backend is enabled, else
// nil. A configuration that passed validation always decodes.
func (s SchedulerConfiguration) SchedulerPlugins() *SchedulerPluginsConfig {
	if !s.IsEnabled(SchedulerNamePlugins) {
		return nil
	}
	cfg, err := s.BackendConfig(SchedulerNamePlugins)
	if err != nil {
		return nil
	}
	return cfg.(*SchedulerPluginsConfig)
}
