package backends

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	"github.com/kubegrove/grove/backends/kai"
	"github.com/kubegrove/grove/backends/kube"
	"github.com/kubegrove/grove/backends/passthrough"
	"github.com/kubegrove/grove/backends/plugins"
	"github.com/kubegrove/grove/backends/volcano"
)

// Registry holds the enabled backends of one configuration. Each binary builds its own from the
// configuration file; it holds no state beyond the configuration.
type Registry struct {
	enabled []SchedulerBackend
	byName  map[configv1alpha1.SchedulerName]SchedulerBackend
	def     SchedulerBackend
}

// NewRegistry enables kube-scheduler and every profiled backend, each with its typed config,
// and picks the default (GREP-375): the profile marked default, else kube-scheduler. Two
// defaults, an unknown name or a bad config are errors naming the profile. c is the client the
// backends sync with; binaries that never sync may pass nil.
func NewRegistry(cfg configv1alpha1.SchedulerConfiguration, c client.Client) (*Registry, error) {
	if errs := configv1alpha1.ValidateScheduler(&cfg, field.NewPath("scheduler")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	r := &Registry{byName: map[configv1alpha1.SchedulerName]SchedulerBackend{}}
	for _, name := range cfg.EnabledBackends() {
		typed, err := cfg.BackendConfig(name)
		if err != nil {
			return nil, fmt.Errorf("scheduler backend %s: %w", name, err)
		}
		var b SchedulerBackend
		switch conf := typed.(type) {
		case *configv1alpha1.KubeSchedulerConfig:
			b = kube.New(*conf, c)
		case *configv1alpha1.KAISchedulerConfig:
			b = kai.New(*conf, c)
		case *configv1alpha1.SchedulerPluginsConfig:
			b = plugins.New(*conf, c)
		case *configv1alpha1.VolcanoConfig:
			b = volcano.New(*conf, c)
		case *configv1alpha1.LPXConfig:
			b = passthrough.LPX()
		case *configv1alpha1.ExternalSchedulerConfig:
			b = passthrough.New(name, *conf)
		}
		r.enabled = append(r.enabled, b)
		r.byName[name] = b
	}
	r.def = r.byName[cfg.DefaultProfileName()]
	return r, nil
}

// Get returns an enabled backend, or nil.
func (r *Registry) Get(name configv1alpha1.SchedulerName) SchedulerBackend { return r.byName[name] }

// Default returns the backend of workloads that name no scheduler.
func (r *Registry) Default() SchedulerBackend { return r.def }

// Enabled returns the enabled backends, kube-scheduler first.
func (r *Registry) Enabled() []SchedulerBackend { return r.enabled }

// ForPodScheduler returns the enabled backend whose pods carry schedulerName ("" means the
// default backend), or nil.
func (r *Registry) ForPodScheduler(schedulerName string) SchedulerBackend {
	if schedulerName == "" {
		return r.def
	}
	for _, b := range r.enabled {
		if b.PodSchedulerName() == schedulerName {
			return b
		}
	}
	return nil
}

// ForPodCliqueSet returns the backend of a PodCliqueSet: the one its pods name (the webhook
// makes every clique name the same one), else the default. Nil when that scheduler is not
// enabled.
func (r *Registry) ForPodCliqueSet(pcs *grovev1alpha1.PodCliqueSet) SchedulerBackend {
	return r.ForPodScheduler(SchedulerNameOf(pcs))
}

// SchedulerNameOf is the schedulerName a PodCliqueSet's pods name: the first clique's that sets
// one, else "".
func SchedulerNameOf(pcs *grovev1alpha1.PodCliqueSet) string {
	for _, c := range pcs.Spec.Template.Cliques {
		if c != nil && c.Spec.PodSpec.SchedulerName != "" {
			return c.Spec.PodSpec.SchedulerName
		}
	}
	return ""
}

// NotEnabledError says that no enabled backend serves schedulerName.
func (r *Registry) NotEnabledError(schedulerName string) error {
	return fmt.Errorf("schedulerName %q is no enabled scheduler backend (enabled: %v)", schedulerName, r.PodSchedulerNames())
}

// PodSchedulerNames lists the schedulerNames of the enabled backends, for error messages.
func (r *Registry) PodSchedulerNames() []string {
	out := make([]string, 0, len(r.enabled))
	for _, b := range r.enabled {
		out = append(out, b.PodSchedulerName())
	}
	return out
}

// knownPodSchedulers are the schedulerNames each backend's pods carry by default, so admission
// can tell "this backend is not enabled" from "no such scheduler".
var knownPodSchedulers = map[string]configv1alpha1.SchedulerName{
	kube.SchedulerName:                                  configv1alpha1.SchedulerNameKube,
	kaiv2alpha2.SchedulerName:                           configv1alpha1.SchedulerNameKAI,
	configv1alpha1.DefaultSchedulerPluginsSchedulerName: configv1alpha1.SchedulerNamePlugins,
	configv1alpha1.VolcanoPodSchedulerName:              configv1alpha1.SchedulerNameVolcano,
	string(configv1alpha1.SchedulerNameLPX):             configv1alpha1.SchedulerNameLPX,
}

// KnownPodScheduler returns the backend whose pods carry schedulerName by default, enabled or not.
func KnownPodScheduler(schedulerName string) (configv1alpha1.SchedulerName, bool) {
	b, ok := knownPodSchedulers[schedulerName]
	return b, ok
}
