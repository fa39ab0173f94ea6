package app

import (
	ctrl "sigs.k8s.io/controller-runtime"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/internal/app/servedapis"
)

// RequireComputeDomains fails the start of a binary configured with network.autoMNNVLEnabled on
// a cluster that does not serve NVIDIA's ComputeDomain: MNNVL workloads would be admitted and
// never get their NVLink fabric.
func RequireComputeDomains(mgr ctrl.Manager) error {
	return servedapis.Check(mgr.GetRESTMapper(),
		"network.autoMNNVLEnabled is on and needs the CRD "+grovev1alpha1.ComputeDomainCRD+": install NVIDIA's DRA driver, or turn MNNVL off",
		grovev1alpha1.ComputeDomainGVK)
}
