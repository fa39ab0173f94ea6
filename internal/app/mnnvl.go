package app

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// RequireComputeDomains fails the start of a binary configured with network.autoMNNVLEnabled on
// a cluster that does not serve NVIDIA's ComputeDomain: MNNVL workloads would be admitted and
// never get their NVLink fabric.
func RequireComputeDomains(mgr ctrl.Manager) error {
	gvk := grovev1alpha1.ComputeDomainGVK
	if _, err := mgr.GetRESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("network.autoMNNVLEnabled is on but the CRD %s (%s) is not served: install NVIDIA's DRA driver, or turn MNNVL off",
				grovev1alpha1.ComputeDomainCRD, gvk.GroupVersion())
		}
		return fmt.Errorf("looking up the CRD %s: %w", grovev1alpha1.ComputeDomainCRD, err)
	}
	return nil
}
