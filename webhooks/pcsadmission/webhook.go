package pcsadmission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
)

// +kubebuilder:webhook:path=/mutate-grove-io-v1alpha1-podcliqueset,mutating=true,failurePolicy=fail,sideEffects=None,timeoutSeconds=10,groups=grove.io,resources=podcliquesets,verbs=create;update,versions=v1alpha1,name=mpodcliqueset.grove.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-grove-io-v1alpha1-podcliqueset,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=10,groups=grove.io,resources=podcliquesets,verbs=create;update,versions=v1alpha1,name=vpodcliqueset.grove.io,admissionReviewVersions=v1

// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=queues,verbs=get

// SetupWithManager serves the PodCliqueSet defaulting and validating webhooks.
func SetupWithManager(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration) error {
	registry, err := backends.NewRegistry(cfg.Scheduler, nil)
	if err != nil {
		return err
	}
	defaulting := admission.WithDefaulter(mgr.GetScheme(), admission.Defaulter[*grovev1alpha1.PodCliqueSet](&Defaulter{Backends: registry}))
	defaulting.Handler = &SchemaDecidesUndecodable{Decoder: admission.NewDecoder(mgr.GetScheme()), Next: defaulting.Handler}
	mgr.GetWebhookServer().Register(MutatePath, defaulting)
	return ctrl.NewWebhookManagedBy(mgr, &grovev1alpha1.PodCliqueSet{}).
		WithValidator(&Validator{
			Backends:                registry,
			TopologyAwareScheduling: cfg.TopologyAwareScheduling.Enabled,
			AutoMNNVL:               cfg.Network.AutoMNNVLEnabled,
			Kueue:                   cfg.Kueue.Enabled,
			// Read through to the API server: a binding created just before its workloads is seen.
			Topologies: mgr.GetAPIReader(),
			// From the cache: a PodCliqueSet created a moment before may be missed, and then the
			// operator reports the collision in status (NameCollision).
			PodCliqueSets: mgr.GetClient(),
			// Read through: a ResourceClaimTemplate applied just before the PodCliqueSet (as
			// upstream Grove's manifests do, in one file) is seen.
			ClaimTemplates: mgr.GetAPIReader(),
			// Read through: a Volcano queue applied just before its workloads is seen.
			SchedulerObjects: mgr.GetAPIReader(),
		}).
		Complete()
}

// MutatePath is where the defaulting webhook is served (the path the marker above generates).
const MutatePath = "/mutate-grove-io-v1alpha1-podcliqueset"

// SchemaDecidesUndecodable lets a PodCliqueSet the Go types cannot decode (a replicas of "3" or
// 2^31, a maxRuntime of "abc") pass defaulting unchanged. Mutating admission runs before the
// API server validates the CRD schema, so failing here would answer with a bare decoding error
// ("json: cannot unmarshal …"); passing it on lets the schema reject it with the field path and
// the rule. Nothing undefaulted can be stored: what the schema accepts but Go cannot decode is
// still refused by the validating webhook, which decodes the same way.
type SchemaDecidesUndecodable struct {
	// Decoder decodes the request's object.
	Decoder admission.Decoder
	// Next defaults decodable objects.
	Next admission.Handler
}

// Handle passes undecodable objects unchanged and hands the rest to Next.
func (h *SchemaDecidesUndecodable) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Delete && len(req.Object.Raw) > 0 {
		if err := h.Decoder.DecodeRaw(req.Object, &grovev1alpha1.PodCliqueSet{}); err != nil {
			return admission.Allowed(fmt.Sprintf("not defaulted: %v; the CRD schema decides", err))
		}
	}
	return h.Next.Handle(ctx, req)
}
