package podcliqueset

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// +kubebuilder:rbac:groups=resource.nvidia.com,resources=computedomains,verbs=get;list;watch;create;delete

// labelComponentComputeDomain marks the ComputeDomains of MNNVL (label app.kubernetes.io/component).
const labelComponentComputeDomain = "computedomain"

// labelMNNVLGroup holds a ComputeDomain's MNNVL group (as upstream labels it).
const labelMNNVLGroup = "grove.io/mnnvl-group"

// newComputeDomain is an empty ComputeDomain object (NVIDIA's kind, kept unstructured: its Go
// module is not a dependency worth taking for three fields).
func newComputeDomain() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(grovev1alpha1.ComputeDomainGVK)
	return u
}

// wantComputeDomain is the ComputeDomain of one MNNVL group in one replica: elastic (numNodes 0,
// as upstream sets it: IMEX daemons follow the pods), its channel's ResourceClaimTemplate named
// like it, owned by the PodCliqueSet.
func wantComputeDomain(pcs *grovev1alpha1.PodCliqueSet, replica int, group string) *unstructured.Unstructured {
	cd := newComputeDomain()
	name := grovev1alpha1.ComputeDomainName(pcs.Name, replica, group)
	cd.SetName(name)
	cd.SetNamespace(pcs.Namespace)
	cd.SetLabels(map[string]string{
		grovev1alpha1.LabelManagedBy:                grovev1alpha1.LabelManagedByValue,
		grovev1alpha1.LabelPartOf:                   pcs.Name,
		grovev1alpha1.LabelComponent:                labelComponentComputeDomain,
		grovev1alpha1.LabelPodCliqueSetReplicaIndex: strconv.Itoa(replica),
		labelMNNVLGroup:                             group,
	})
	cd.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(pcs, grovev1alpha1.GroupVersion.WithKind("PodCliqueSet"))})
	cd.Object["spec"] = map[string]any{
		"numNodes": int64(0),
		"channel":  map[string]any{"resourceClaimTemplate": map[string]any{"name": name}},
	}
	return cd
}

// syncComputeDomains keeps one ComputeDomain per MNNVL group per replica (before the PodCliques
// whose pods claim its channel) and deletes those of replicas scaled away.
func (r *Reconciler) syncComputeDomains(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet) error {
	if !r.AutoMNNVL {
		if groups := pcs.MNNVLGroups(); len(groups) > 0 {
			// Admitted while MNNVL was on: its ComputeDomains stay as they are, unmanaged.
			return fmt.Errorf("the PodCliqueSet asks for MNNVL groups %v but network.autoMNNVLEnabled is off: its ComputeDomains are not kept", groups)
		}
		return nil
	}
	groups := pcs.MNNVLGroups()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(grovev1alpha1.ComputeDomainGVK.GroupVersion().WithKind("ComputeDomainList"))
	if err := r.Client.List(ctx, list, client.InNamespace(pcs.Namespace), client.MatchingLabels{
		grovev1alpha1.LabelPartOf: pcs.Name, grovev1alpha1.LabelComponent: labelComponentComputeDomain,
	}); err != nil {
		return fmt.Errorf("listing ComputeDomains: %w", err)
	}
	have := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], pcs) {
			have[list.Items[i].GetName()] = &list.Items[i]
		}
	}
	want := map[string]bool{}
	var errs []error
	for replica := range int(pcs.Spec.Replicas) {
		for _, group := range groups {
			cd := wantComputeDomain(pcs, replica, group)
			want[cd.GetName()] = true
			if have[cd.GetName()] != nil {
				continue
			}
			err := r.Client.Create(ctx, cd)
			switch {
			case apierrors.IsAlreadyExists(err):
				// the cache is behind on our own creation, or another owner holds the name: the
				// pods then claim that one's channel, which the next pass reports once cached
			case err != nil:
				errs = append(errs, fmt.Errorf("creating ComputeDomain %s: %w", cd.GetName(), err))
			default:
				log.FromContext(ctx).Info("created ComputeDomain", "computeDomain", klog.KObj(cd), "mnnvlGroup", group, "replica", replica)
			}
		}
	}
	for name, cd := range have {
		if want[name] || cd.GetDeletionTimestamp() != nil {
			continue
		}
		uid := cd.GetUID()
		if err := r.Client.Delete(ctx, cd, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting ComputeDomain %s: %w", name, err))
			continue
		}
		log.FromContext(ctx).Info("deleted ComputeDomain", "computeDomain", klog.KObj(cd), "reason", "its replica is beyond spec.replicas")
	}
	err := errors.Join(errs...)
	if err != nil {
		r.Recorder.Eventf(pcs, nil, corev1.EventTypeWarning, "ComputeDomainFailed", "Sync", "%v", err)
	}
	return err
}
