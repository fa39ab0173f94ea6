package pcsadmission

import (
	"context"
	"fmt"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
)

// +kubebuilder:webhook:path=/mutate-grove-io-v1alpha1-podcliqueset,mutating=true,failurePolicy=fail,sideEffects=None,timeoutSeconds=10,groups=grove.io,resources=podcliquesets,verbs=create;update,versions=v1alpha1,name=mpodcliqueset.grove.io,admissionReviewVersions=v1
// +kubebuilder:webhook:path=/validate-grove-io-v1alpha1-podcliqueset,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=10,groups=grove.io,resources=podcliquesets,verbs=create;update,versions=v1alpha1,name=vpodcliqueset.grove.io,admissionReviewVersions=v1

// +kubebuilder:rbac:groups=grove.io,resources=clustertopologybindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.volcano.sh,resources=queues,verbs=get
// +kubebuilder:rbac:groups=kueue.x-k8s.io,resources=localqueues;clusterqueues;admissionchecks,verbs=get

// SetupWithManager serves the PodCliqueSet defaulting and validating webhooks.
func SetupWithManager(mgr ctrl.Manager, cfg *configv1alpha1.OperatorConfiguration, registry *backends.Registry[backends.Admitter]) error {
	var queues client.Reader
	if cfg.Kueue.Enabled {
		// Read through: a queue applied just before its workloads is seen.
		queues = mgr.GetAPIReader()
	}
	mgr.GetWebhookServer().Register(MutatePath, defaultingHandler(mgr.GetScheme(), registry, queues))
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
			Queues:           queues,
		}).
		Complete()
}

// defaultingHandler is the served defaulting webhook.
func defaultingHandler(scheme *runtime.Scheme, registry *backends.Registry[backends.Admitter], queues client.Reader) *admission.Webhook {
	defaulting := admission.WithDefaulter(scheme, admission.Defaulter[*grovev1alpha1.PodCliqueSet](&Defaulter{Backends: registry, Queues: queues}))
	defaulting.Handler = &SchemaDecidesUndecodable{Next: defaulting.Handler}
	return defaulting
}

// MutatePath is where the defaulting webhook is served (the path the marker above generates).
const MutatePath = "/mutate-grove-io-v1alpha1-podcliqueset"

// SchemaDecidesUndecodable lets a PodCliqueSet the Go types cannot decode (a replicas of "3" or
// 2^31, a maxRuntime of "abc") pass defaulting unchanged. Mutating admission runs before the
// API server validates the CRD schema, so failing here would answer with a bare decoding error
// ("json: cannot unmarshal …"); passing it on lets the schema reject it with the field path and
// the rule. Nothing undefaulted can be stored: what the schema accepts but Go cannot decode is
// still refused by the validating webhook, which decodes the same way.
//
// Next (controller-runtime's defaulting handler) decodes the object itself and answers a decoding
// error with 400 Bad Request, its only 400 (the Defaulter never fails): that answer is turned
// into an allowed, unpatched one, so the object is decoded once per request, not twice (each
// decode was about a fifth of the defaulting webhook's CPU per create).
type SchemaDecidesUndecodable struct {
	// Next defaults decodable objects.
	Next admission.Handler
}

// Handle hands the request to Next and passes an object Next could not decode unchanged.
func (h *SchemaDecidesUndecodable) Handle(ctx context.Context, req admission.Request) admission.Response {
	resp := h.Next.Handle(ctx, req)
	if !resp.Allowed && resp.Result != nil && resp.Result.Code == http.StatusBadRequest {
		return admission.Allowed(fmt.Sprintf("not defaulted: %s; the CRD schema decides", resp.Result.Message))
	}
	return resp
}
