package podcliqueset

import (
	"context"

	corev1 "k8s.io/api/core/v1"

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
	if len(entries) == 0 {
		return nil
	}
	want := resourceclaims.For(pcs.Name, entries, int(pcs.Spec.Replicas))
	k := resourceclaims.Keeper{Client: r.Client, Reader: r.APIReader}
	_, err := k.Sync(ctx, pcs, grovev1alpha1.GroupVersion.WithKind("PodCliqueSet"), pcs.Name, want, pcs.Spec.Template.ResourceClaimTemplates)
	if err != nil {
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, "ResourceClaimFailed", "Sync", "%v", err)
	}
	return err
}
