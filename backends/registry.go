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

// Registry holds the enabled backends of one configuration, each seen as one caller's share T.
// Each binary builds its own from the configuration file with the constructor of its share; it
// holds no state beyond the configuration.
type Registry[T Backend] struct {
	enabled []T
	byName  map[configv1alpha1.SchedulerName]T
	def     T
}

// PodPreparers is grove-operator's registry.
func PodPreparers(cfg configv1alpha1.SchedulerConfiguration) (*Registry[PodPreparer], error) {
	return newRegistry[PodPreparer](cfg, nil, false)
}

// Admitters is grove-webhook's registry.
func Admitters(cfg configv1alpha1.SchedulerConfiguration) (*Registry[Admitter], error) {
	return newRegistry[Admitter](cfg, nil, false)
}

// Syncers is the backend-controller's registry: its backends sync through c.
func Syncers(cfg configv1alpha1.SchedulerConfiguration, c client.Client) (*Registry[Syncer], error) {
	return newRegistry[Syncer](cfg, c, false)
}

// Renderers is kubectl grove's registry. compositePodGroups renders kube-scheduler gangs as a
// cluster serving CompositePodGroup gets them, which a backend-controller finds out at Init.
func Renderers(cfg configv1alpha1.SchedulerConfiguration, compositePodGroups bool) (*Registry[Renderer], error) {
	return newRegistry[Renderer](cfg, nil, compositePodGroups)
}

// newRegistry enables kube-scheduler and every profiled backend, each with its typed config,
// and picks the default (GREP-375): the profile marked default, else kube-scheduler. Two
// defaults, an unknown name or a bad config are errors naming the profile. c is the client the
// backends sync with, nil for every share but Syncer's.
func newRegistry[T Backend](cfg configv1alpha1.SchedulerConfiguration, c client.Client, compositePodGroups bool) (*Registry[T], error) {
	if errs := configv1alpha1.ValidateScheduler(&cfg, field.NewPath("scheduler")); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	r := &Registry[T]{byName: map[configv1alpha1.SchedulerName]T{}}
	for _, name := range cfg.EnabledBackends() {
		typed, err := cfg.BackendConfig(name)
		if err != nil {
			return nil, fmt.Errorf("scheduler backend %s: %w", name, err)
		}
		var b scheduler
		switch conf := typed.(type) {
		case *configv1alpha1.KubeSchedulerConfig:
			k := kube.New(*conf, c)
			k.SetComposite(compositePodGroups)
			b = k
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
		default:
			return nil, fmt.Errorf("scheduler backend %s: no backend for a config of type %T", name, typed)
		}
		share := b.(T) // every scheduler implements every share
		r.enabled = append(r.enabled, share)
		r.byName[name] = share
	}
	r.def = r.byName[cfg.DefaultProfileName()]
	return r, nil
}

// Every scheduler package implements every caller's share.
var (
	_ scheduler = (*kube.Backend)(nil)
	_ scheduler = (*kai.Backend)(nil)
	_ scheduler = (*plugins.Backend)(nil)
	_ scheduler = (*volcano.Backend)(nil)
	_ scheduler = (*passthrough.Backend)(nil)
)

// Get returns an enabled backend, or nil.
func (r *Registry[T]) Get(name configv1alpha1.SchedulerName) T { return r.byName[name] }

// Default returns the backend of workloads that name no scheduler.
func (r *Registry[T]) Default() T { return r.def }

// Enabled returns the enabled backends, kube-scheduler first.
func (r *Registry[T]) Enabled() []T { return r.enabled }

// ForPodScheduler returns the enabled backend whose pods carry schedulerName ("" means the
// default backend), or nil.
func (r *Registry[T]) ForPodScheduler(schedulerName string) T {
	if schedulerName == "" {
		return r.def
	}
	for _, b := range r.enabled {
		if b.PodSchedulerName() == schedulerName {
			return b
		}
	}
	var none T
	return none
}

// ForPodCliqueSet returns the backend of a PodCliqueSet: the one its pods name (the webhook
// makes every clique name the same one), else the default. Nil when that scheduler is not
// enabled.
func (r *Registry[T]) ForPodCliqueSet(pcs *grovev1alpha1.PodCliqueSet) T {
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
func (r *Registry[T]) NotEnabledError(schedulerName string) error {
	return fmt.Errorf("schedulerName %q is no enabled scheduler backend (enabled: %v)", schedulerName, r.PodSchedulerNames())
}

// PodSchedulerNames lists the schedulerNames of the enabled backends, for error messages.
func (r *Registry[T]) PodSchedulerNames() []string {
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
