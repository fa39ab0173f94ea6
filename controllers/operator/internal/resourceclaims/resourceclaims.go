// Package resourceclaims keeps the ResourceClaims of upstream Grove's DRA resource sharing: the
// PodCliqueSet, PodCliqueScalingGroup and PodClique reconcilers each keep those of their own
// level's resourceSharing entries, owned by their object so they go with it.
package resourceclaims

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// LabelComponentValue marks the ResourceClaims the operator makes (label app.kubernetes.io/component).
const LabelComponentValue = "resource-claim"

// Want is one ResourceClaim an owner keeps.
type Want struct {
	// Name of the claim.
	Name string
	// Entry is the resourceSharing entry it is made from.
	Entry grovev1alpha1.ResourceSharingSpec
}

// For lists the claims an owner with replicas replicas keeps for its entries: one per
// AllReplicas entry, one per replica per PerReplica entry.
func For(owner string, entries []grovev1alpha1.ResourceSharingSpec, replicas int) []Want {
	var out []Want
	for _, e := range entries {
		if e.Scope == grovev1alpha1.ResourceSharingScopePerReplica {
			for i := range replicas {
				out = append(out, Want{Name: grovev1alpha1.ResourceClaimName(owner, e, i), Entry: e})
			}
			continue
		}
		out = append(out, Want{Name: grovev1alpha1.ResourceClaimName(owner, e, 0), Entry: e})
	}
	return out
}

// Keeper creates the missing claims of an owner and deletes those it no longer wants.
type Keeper struct {
	// Client reads claims from the cache and writes them.
	Client client.Client
	// Reader reads external ResourceClaimTemplates and claims of the same name held by others
	// (uncached: read once per claim created); nil means Client.
	Reader client.Reader
	// Recorder, when set, reports a failed sync as a Warning event on the owner.
	Recorder events.EventRecorder
}

// Keep makes owner's claims those of its entries for replicas replicas (see For and Sync); an
// owner without entries has nothing to keep and nothing is read.
func (k Keeper) Keep(ctx context.Context, owner client.Object, gvk schema.GroupVersionKind, pcs string,
	entries []grovev1alpha1.ResourceSharingSpec, replicas int, templates []grovev1alpha1.ResourceClaimTemplateConfig) error {
	if len(entries) == 0 {
		return nil
	}
	_, err := k.Sync(ctx, owner, gvk, pcs, For(owner.GetName(), entries, replicas), templates)
	if err != nil && k.Recorder != nil {
		k.Recorder.Eventf(owner, nil, corev1.EventTypeWarning, "ResourceClaimFailed", "Sync", "%v", err)
	}
	return err
}

func (k Keeper) reader() client.Reader {
	if k.Reader != nil {
		return k.Reader
	}
	return k.Client
}

// Sync makes owner's claims match want. templates are the PodCliqueSet's named templates (they
// shadow ResourceClaimTemplate objects of the same name); pcs labels the claims. A claim of the
// wanted name that another owner holds is reported, never adopted. It returns how many claims it
// created or deleted.
func (k Keeper) Sync(ctx context.Context, owner client.Object, gvk schema.GroupVersionKind, pcs string, want []Want, templates []grovev1alpha1.ResourceClaimTemplateConfig) (int, error) {
	list := &resourcev1.ResourceClaimList{}
	if err := k.Client.List(ctx, list, client.InNamespace(owner.GetNamespace()), client.MatchingLabels{
		grovev1alpha1.LabelPartOf: pcs, grovev1alpha1.LabelComponent: LabelComponentValue,
	}); err != nil {
		return 0, fmt.Errorf("listing ResourceClaims: %w", err)
	}
	have := map[string]*resourcev1.ResourceClaim{}
	for i := range list.Items {
		if metav1.IsControlledBy(&list.Items[i], owner) {
			have[list.Items[i].Name] = &list.Items[i]
		}
	}
	wanted := map[string]bool{}
	var errs []error
	writes := 0
	for _, w := range want {
		wanted[w.Name] = true
		if have[w.Name] != nil {
			continue
		}
		created, err := k.create(ctx, owner, gvk, pcs, w, templates)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if created {
			writes++
		}
	}
	for name, rc := range have {
		if wanted[name] || !rc.DeletionTimestamp.IsZero() {
			continue
		}
		if err := k.Client.Delete(ctx, rc, client.Preconditions{UID: &rc.UID}); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting ResourceClaim %s: %w", name, err))
			continue
		}
		writes++
		log.FromContext(ctx).Info("deleted ResourceClaim", "resourceClaim", klog.KObj(rc), "reason", "its replica is beyond the owner's replicas")
	}
	return writes, errors.Join(errs...)
}

func (k Keeper) create(ctx context.Context, owner client.Object, gvk schema.GroupVersionKind, pcs string, w Want,
	templates []grovev1alpha1.ResourceClaimTemplateConfig) (bool, error) {
	spec, source, err := k.resolve(ctx, owner.GetNamespace(), w.Entry, templates)
	if err != nil {
		return false, err
	}
	rc := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name: w.Name, Namespace: owner.GetNamespace(),
			Labels: map[string]string{
				grovev1alpha1.LabelManagedBy: grovev1alpha1.LabelManagedByValue,
				grovev1alpha1.LabelPartOf:    pcs,
				grovev1alpha1.LabelComponent: LabelComponentValue,
			},
			Annotations:     spec.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, gvk)},
		},
		Spec: *spec.Spec.DeepCopy(),
	}
	for k, v := range spec.Labels {
		if _, reserved := rc.Labels[k]; !reserved {
			rc.Labels[k] = v
		}
	}
	err = k.Client.Create(ctx, rc)
	if apierrors.IsAlreadyExists(err) {
		existing := &resourcev1.ResourceClaim{}
		if getErr := k.reader().Get(ctx, client.ObjectKeyFromObject(rc), existing); getErr == nil && !metav1.IsControlledBy(existing, owner) {
			return false, fmt.Errorf("ResourceClaim %s exists and belongs to another owner: delete it or rename the PodCliqueSet", w.Name)
		}
		return false, nil // ours; the cache is behind
	}
	if err != nil {
		return false, fmt.Errorf("creating ResourceClaim %s: %w", w.Name, err)
	}
	log.FromContext(ctx).Info("created ResourceClaim", "resourceClaim", klog.KObj(rc), "template", source, "scope", w.Entry.Scope)
	return true, nil
}

// resolve finds an entry's template: the PodCliqueSet's of that name when the entry names no
// namespace, else the ResourceClaimTemplate object; source says which, for the log.
func (k Keeper) resolve(ctx context.Context, namespace string, e grovev1alpha1.ResourceSharingSpec,
	templates []grovev1alpha1.ResourceClaimTemplateConfig) (*resourcev1.ResourceClaimTemplateSpec, string, error) {
	if e.Namespace == "" {
		for i := range templates {
			if templates[i].Name == e.Name {
				return &templates[i].TemplateSpec, "resourceClaimTemplates/" + e.Name, nil
			}
		}
	}
	ns := e.Namespace
	if ns == "" {
		ns = namespace
	}
	rct := &resourcev1.ResourceClaimTemplate{}
	if err := k.reader().Get(ctx, client.ObjectKey{Namespace: ns, Name: e.Name}, rct); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", fmt.Errorf("resourceSharing %q: no resourceClaimTemplates entry and no ResourceClaimTemplate %s/%s", e.Name, ns, e.Name)
		}
		return nil, "", fmt.Errorf("reading ResourceClaimTemplate %s/%s: %w", ns, e.Name, err)
	}
	return &rct.Spec, "ResourceClaimTemplate " + ns + "/" + e.Name, nil
}

// Deleted lets only deletions of claims through to their owner's reconciler: it recreates them.
// Their creation is its own doing, and their status (allocation, reservations) is the
// scheduler's and the kubelet's business.
func Deleted() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
