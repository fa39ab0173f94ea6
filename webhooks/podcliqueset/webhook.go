package podcliqueset

import (
	ctrl "sigs.k8s.io/controller-runtime"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
)

// +kubebuilder:webhook:path=/mutate-grove-io-v1alpha1-podcliqueset,mutating=true,failurePolicy=fail,sideEffects=None,timeoutSeconds=10,groups=grove.io,resources=podcliquesets,verbs=create;update,versions=v1alpha1,name=mpodcliqueset.grove.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-grove-io-v1alpha1-podcliqueset,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=10,groups=grove.io,resources=podcliquesets,verbs=create;update,versions=v1alpha1,name=vpodcliqueset.grove.io,admissionReviewVersions=v1

// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch

// SetupWithManager serves the PodCliqueSet defaulting and validating webhooks.
func SetupWithManager(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
	registry, err := backends.NewRegistry(cfg.Scheduler, nil)
	if err != nil {
		return err
	}
	return ctrl.NewWebhookManagedBy(mgr, &grovev1alpha1.PodCliqueSet{}).
		WithDefaulter(&Defaulter{Backends: registry}).
		WithValidator(&Validator{
			Backends:                registry,
			TopologyAwareScheduling: cfg.TopologyAwareScheduling.Enabled,
			// Read through to the API server: a binding created just before its workloads is seen.
			Topologies: mgr.GetAPIReader(),
		}).
		Complete()
}
