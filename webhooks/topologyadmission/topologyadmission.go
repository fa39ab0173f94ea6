// Package topologyadmission is grove-webhook's admission for ClusterTopologyBindings: what the
// CRD schema cannot say — each level's domain and key once, named by the element as upstream
// Grove names it, and scheduler topology bindings only for enabled backends that place by
// topology.
package topologyadmission

import (
	"context"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
)

// +kubebuilder:webhook:path=/validate-grove-io-v1alpha1-clustertopologybinding,mutating=false,failurePolicy=fail,sideEffects=None,timeoutSeconds=10,groups=grove.io,resources=clustertopologybindings,verbs=create;update,versions=v1alpha1,name=vclustertopologybinding.grove.io,admissionReviewVersions=v1

// SetupWithManager serves the ClusterTopologyBinding validating webhook.
func SetupWithManager(mgr ctrl.Manager, registry *backends.Registry[backends.Admitter]) error {
	return ctrl.NewWebhookManagedBy(mgr, &grovev1alpha1.ClusterTopologyBinding{}).WithValidator(&Validator{Backends: registry}).Complete()
}

// Validator refuses bindings the backends cannot serve.
type Validator struct {
	// Backends are the enabled scheduler backends.
	Backends *backends.Registry[backends.Admitter]
}

// ValidateCreate checks a new binding.
func (v *Validator) ValidateCreate(ctx context.Context, ct *grovev1alpha1.ClusterTopologyBinding) (admission.Warnings, error) {
	return nil, refused(ctx, ct, Validate(ct, nil, v.Backends))
}

// ValidateUpdate checks a changed binding; scheduler bindings are checked only when they
// changed, so a binding stored while a backend was enabled stays updatable after it is not.
func (v *Validator) ValidateUpdate(ctx context.Context, old, ct *grovev1alpha1.ClusterTopologyBinding) (admission.Warnings, error) {
	return nil, refused(ctx, ct, Validate(ct, old, v.Backends))
}

// ValidateDelete allows every deletion.
func (v *Validator) ValidateDelete(context.Context, *grovev1alpha1.ClusterTopologyBinding) (admission.Warnings, error) {
	return nil, nil
}

// refused turns the binding's errors into the admission answer and logs the refusal.
func refused(ctx context.Context, ct *grovev1alpha1.ClusterTopologyBinding, errs field.ErrorList) error {
	if len(errs) == 0 {
		return nil
	}
	err := apierrors.NewInvalid(grovev1alpha1.GroupVersion.WithKind("ClusterTopologyBinding").GroupKind(), ct.Name, errs)
	log.FromContext(ctx).V(1).Info("refused ClusterTopologyBinding", "clusterTopologyBinding", ct.Name, "error", err.Error())
	return err
}

// Validate is the binding's rules; old is nil on create.
func Validate(ct, old *grovev1alpha1.ClusterTopologyBinding, registry *backends.Registry[backends.Admitter]) field.ErrorList {
	var errs field.ErrorList
	levels := field.NewPath("spec", "levels")
	domains, keys := map[grovev1alpha1.TopologyDomain]int{}, map[string]int{}
	for i, l := range ct.Spec.Levels {
		if j, dup := domains[l.Domain]; dup {
			errs = append(errs, field.Duplicate(levels.Index(i).Child("domain"), fmt.Sprintf("%s (also %s)", l.Domain, levels.Index(j).Child("domain"))))
		} else {
			domains[l.Domain] = i
		}
		if j, dup := keys[l.Key]; dup {
			errs = append(errs, field.Duplicate(levels.Index(i).Child("key"), fmt.Sprintf("%s (also %s)", l.Key, levels.Index(j).Child("key"))))
		} else {
			keys[l.Key] = i
		}
	}
	if old != nil && reflect.DeepEqual(old.Spec.SchedulerTopologyBindings, ct.Spec.SchedulerTopologyBindings) {
		return errs
	}
	bindings := field.NewPath("spec", "schedulerTopologyBindings")
	for i, b := range ct.Spec.SchedulerTopologyBindings {
		p := bindings.Index(i).Child("schedulerName")
		backend := registry.Get(configv1alpha1.SchedulerName(b.SchedulerName))
		if backend == nil && b.SchedulerName != "" {
			backend = registry.ForPodScheduler(b.SchedulerName) // upstream names kube-scheduler default-scheduler
		}
		if backend == nil {
			errs = append(errs, field.Invalid(p, b.SchedulerName, fmt.Sprintf("scheduler backend is not enabled in Grove (enabled: %v)", enabledNames(registry))))
			continue
		}
		if !backend.KeepsTopology() {
			errs = append(errs, field.Invalid(p, b.SchedulerName, "scheduler backend does not implement topology-aware scheduling"))
		}
	}
	return errs
}

func enabledNames(registry *backends.Registry[backends.Admitter]) []configv1alpha1.SchedulerName {
	var names []configv1alpha1.SchedulerName
	for _, b := range registry.Enabled() {
		names = append(names, b.Name())
	}
	return names
}
