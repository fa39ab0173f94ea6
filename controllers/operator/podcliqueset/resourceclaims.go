package podcliqueset

import (
	"context"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/internal/resourceclaims"
)

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get

// syncResourceClaims keeps the PodCliqueSet-level claims of resourceSharing: one per AllReplicas
// entry, one per replica per PerReplica entry (a replica scaled away loses its claims), owned by
// the PodCliqueSet so they go with it.
func (r *Reconciler) syncResourceClaims(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet) error {
	entries := make([]grovev1alpha1.ResourceSharingSpec, 0, len(pcs.Spec.Template.ResourceSharing))
	for _, e := range pcs.Spec.Template.ResourceSharing {
		entries = append(entries, e.ResourceSharingSpec)
	}
	k := resourceclaims.Keeper{Client: r.Client, Reader: r.APIReader, Recorder: r.Recorder}
	return k.Keep(ctx, pcs, grovev1alpha1.GroupVersion.WithKind("PodCliqueSet"), pcs.Name, entries, int(pcs.Spec.Replicas), pcs.Spec.Template.ResourceClaimTemplates)
}
