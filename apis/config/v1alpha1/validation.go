package v1alpha1

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks a defaulted configuration and returns every problem with its field path.
func Validate(c *OperatorConfiguration) field.ErrorList {
	var errs field.ErrorList
	if c.APIVersion != GroupVersion.String() {
		errs = append(errs, field.NotSupported(field.NewPath("apiVersion"), c.APIVersion, []string{GroupVersion.String()}))
	}
	if c.Kind != Kind {
		errs = append(errs, field.NotSupported(field.NewPath("kind"), c.Kind, []string{Kind}))
	}

	cc := field.NewPath("clientConnection")
	if c.ClientConnection.QPS <= 0 {
		errs = append(errs, field.Invalid(cc.Child("qps"), c.ClientConnection.QPS, "must be greater than 0"))
	}
	if float32(c.ClientConnection.Burst) < c.ClientConnection.QPS {
		errs = append(errs, field.Invalid(cc.Child("burst"), c.ClientConnection.Burst, "must be at least qps"))
	}

	errs = append(errs, validateLeaderElection(&c.LeaderElection, field.NewPath("leaderElection"))...)
	errs = append(errs, validateServer(&c.Server, field.NewPath("server"))...)
	if d := c.Debugging; d.EnableProfiling && (d.PprofBindPort < 1 || d.PprofBindPort > 65535) {
		errs = append(errs, field.Invalid(field.NewPath("debugging", "pprofBindPort"), d.PprofBindPort, "must be between 1 and 65535"))
	}

	if c.LogLevel != LogLevelDebug && c.LogLevel != LogLevelInfo && c.LogLevel != LogLevelError {
		errs = append(errs, field.NotSupported(field.NewPath("logLevel"), c.LogLevel, []LogLevel{LogLevelDebug, LogLevelInfo, LogLevelError}))
	}
	if c.LogFormat != LogFormatJSON && c.LogFormat != LogFormatText {
		errs = append(errs, field.NotSupported(field.NewPath("logFormat"), c.LogFormat, []LogFormat{LogFormatJSON, LogFormatText}))
	}

	controllers := c.Controllers.all()
	names := make([]string, 0, len(controllers))
	for name := range controllers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if n := controllers[name].ConcurrentSyncs; n != nil && *n < 1 {
			errs = append(errs, field.Invalid(field.NewPath("controllers", name, "concurrentSyncs"), *n, "must be at least 1"))
		}
	}

	cm := field.NewPath("certManagement")
	switch c.CertManagement.Mode {
	case CertManagementAuto:
		for name, v := range map[string]string{"secretName": c.CertManagement.SecretName, "namespace": c.CertManagement.Namespace, "serviceName": c.CertManagement.ServiceName} {
			if v == "" {
				errs = append(errs, field.Required(cm.Child(name), "required when mode is auto"))
			}
		}
	case CertManagementManual:
	default:
		errs = append(errs, field.NotSupported(cm.Child("mode"), c.CertManagement.Mode, []CertManagementMode{CertManagementAuto, CertManagementManual}))
	}

	errs = append(errs, ValidateScheduler(&c.Scheduler, field.NewPath("scheduler"))...)
	return errs
}

func validateLeaderElection(le *LeaderElectionConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if le.Enabled == nil || !*le.Enabled {
		return nil
	}
	if le.RetryPeriod.Duration <= 0 {
		errs = append(errs, field.Invalid(path.Child("retryPeriod"), le.RetryPeriod.Duration.String(), "must be greater than 0"))
	}
	if le.RenewDeadline.Duration <= le.RetryPeriod.Duration {
		errs = append(errs, field.Invalid(path.Child("renewDeadline"), le.RenewDeadline.Duration.String(), "must be greater than retryPeriod"))
	}
	if le.LeaseDuration.Duration <= le.RenewDeadline.Duration {
		errs = append(errs, field.Invalid(path.Child("leaseDuration"), le.LeaseDuration.Duration.String(), "must be greater than renewDeadline"))
	}
	return errs
}

func validateServer(s *ServerConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[int]string{}
	endpoints := []struct {
		name string
		port int
	}{{"metrics", s.Metrics.Port}, {"healthProbes", s.HealthProbes.Port}, {"webhooks", s.Webhooks.Port}}
	if ts := s.TrainerStatus; ts.Enabled {
		endpoints = append(endpoints, struct {
			name string
			port int
		}{"trainerStatus", ts.Port})
		tsPath := path.Child("trainerStatus")
		if ts.QPS <= 0 {
			errs = append(errs, field.Invalid(tsPath.Child("qps"), ts.QPS, "must be greater than 0"))
		}
		if float32(ts.Burst) < ts.QPS {
			errs = append(errs, field.Invalid(tsPath.Child("burst"), ts.Burst, "must be at least qps"))
		}
		for _, msg := range validation.IsDNS1035Label(ts.ServiceName) {
			errs = append(errs, field.Invalid(tsPath.Child("serviceName"), ts.ServiceName, msg))
		}
	}
	for _, ep := range endpoints {
		p := path.Child(ep.name, "port")
		if ep.port < 1 || ep.port > 65535 {
			errs = append(errs, field.Invalid(p, ep.port, "must be between 1 and 65535"))
			continue
		}
		if other, dup := seen[ep.port]; dup {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%d (also %s)", ep.port, path.Child(other, "port"))))
			continue
		}
		seen[ep.port] = ep.name
	}
	return errs
}

// ValidateScheduler applies GREP-375's rules: known backend names, no backend listed twice, at
// most one default, and each profile's config decodes into its backend's typed config.
func ValidateScheduler(s *SchedulerConfiguration, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	profiles := path.Child("profiles")
	seen := map[SchedulerName]int{}
	firstDefault := -1
	for i, p := range s.Profiles {
		pp := profiles.Index(i)
		switch {
		case p.Type != "" && p.Type != SchedulerProfileTypeBuiltIn && p.Type != SchedulerProfileTypeExternal:
			errs = append(errs, field.NotSupported(pp.Child("type"), p.Type, []SchedulerProfileType{SchedulerProfileTypeBuiltIn, SchedulerProfileTypeExternal}))
		case p.Type == SchedulerProfileTypeExternal:
			errs = append(errs, validateExternalName(pp.Child("name"), p.Name)...)
			errs = append(errs, validateBackendConfig(*s, p.Name, pp.Child("config"))...)
		case !isSupported(p.Name):
			e := field.NotSupported(pp.Child("name"), p.Name, SupportedSchedulerNames)
			e.Detail += "; a scheduler the cluster runs itself is named by a profile of type External"
			errs = append(errs, e)
		default:
			errs = append(errs, validateBackendConfig(*s, p.Name, pp.Child("config"))...)
		}
		if j, dup := seen[p.Name]; dup {
			errs = append(errs, field.Duplicate(pp.Child("name"), fmt.Sprintf("%s (also %s)", p.Name, profiles.Index(j).Child("name"))))
		} else {
			seen[p.Name] = i
		}
		if p.Default {
			if firstDefault >= 0 {
				errs = append(errs, field.Invalid(pp.Child("default"), true,
					fmt.Sprintf("only one profile may be the default, but %s is too", profiles.Index(firstDefault).Child("default"))))
			} else {
				firstDefault = i
			}
		}
	}
	return errs
}

// reservedPodSchedulers are the schedulerNames the built-in backends' pods carry: an External
// profile may not take one.
var reservedPodSchedulers = []string{"default-scheduler", "kai-scheduler", VolcanoPodSchedulerName, DefaultSchedulerPluginsSchedulerName, string(SchedulerNameLPX)}

// validateExternalName requires an External profile's name to be a valid schedulerName that no
// built-in backend uses.
func validateExternalName(p *field.Path, name SchedulerName) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(string(name)) {
		errs = append(errs, field.Invalid(p, name, "an External profile is named by its pods' schedulerName: "+msg))
	}
	for _, reserved := range append(reservedPodSchedulers, string(SchedulerNameKube), string(SchedulerNamePlugins)) {
		if string(name) == reserved {
			errs = append(errs, field.Invalid(p, name, "is a built-in backend's name or its pods' schedulerName; enable it as a BuiltIn profile"))
		}
	}
	return errs
}

func isSupported(name SchedulerName) bool {
	for _, n := range SupportedSchedulerNames {
		if n == name {
			return true
		}
	}
	return false
}
