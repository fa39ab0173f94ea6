package pcsadmission

import (
	"context"
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaimtemplates,verbs=get

// sharingRef is one resourceSharing entry and where it is.
type sharingRef struct {
	path  *field.Path
	entry grovev1alpha1.ResourceSharingSpec
}

// sharingRefs lists every resourceSharing entry of the template, PodCliqueSet level first.
func sharingRefs(pcs *grovev1alpha1.PodCliqueSet) []sharingRef {
	tp := field.NewPath("spec", "template")
	var refs []sharingRef
	for i, e := range pcs.Spec.Template.ResourceSharing {
		refs = append(refs, sharingRef{tp.Child("resourceSharing").Index(i), e.ResourceSharingSpec})
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		for j, e := range c.ResourceSharing {
			refs = append(refs, sharingRef{tp.Child("cliques").Index(i).Child("resourceSharing").Index(j), e})
		}
	}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		for j, e := range g.ResourceSharing {
			refs = append(refs, sharingRef{tp.Child("podCliqueScalingGroups").Index(i).Child("resourceSharing").Index(j), e.ResourceSharingSpec})
		}
	}
	return refs
}

// validateResourceSharing checks upstream Grove's rules for resource sharing: each template has
// a device request; at each level a template is named once, with a namespace only when it is
// external, and filters name children that exist.
func validateResourceSharing(pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	var errs field.ErrorList
	t := &pcs.Spec.Template
	tp := field.NewPath("spec", "template")
	internal := sets.New[string]()
	for i, rct := range t.ResourceClaimTemplates {
		internal.Insert(rct.Name)
		if len(rct.TemplateSpec.Spec.Devices.Requests) == 0 {
			errs = append(errs, field.Required(tp.Child("resourceClaimTemplates").Index(i).Child("templateSpec", "spec", "devices", "requests"), "a ResourceClaim template needs at least one device request"))
		}
	}
	cliques, groups := sets.New[string](), sets.New[string]()
	for _, c := range t.Cliques {
		if c != nil {
			cliques.Insert(c.Name)
		}
	}
	for _, g := range t.PodCliqueScalingGroupConfigs {
		groups.Insert(g.Name)
	}
	level := func(p *field.Path, entries []grovev1alpha1.ResourceSharingSpec) {
		seen := map[string]int{}
		for i, e := range entries {
			ep := p.Index(i)
			if j, dup := seen[e.Name]; dup {
				errs = append(errs, field.Duplicate(ep.Child("name"), fmt.Sprintf("%s (also %s)", e.Name, p.Index(j).Child("name"))))
			} else {
				seen[e.Name] = i
			}
			if e.Namespace != "" && internal.Has(e.Name) {
				errs = append(errs, field.Invalid(ep.Child("namespace"), e.Namespace, "must be empty: the name is one of spec.template.resourceClaimTemplates, which shadow ResourceClaimTemplate objects"))
			}
		}
	}
	var pcsEntries []grovev1alpha1.ResourceSharingSpec
	for i, e := range t.ResourceSharing {
		pcsEntries = append(pcsEntries, e.ResourceSharingSpec)
		if e.Filter == nil {
			continue
		}
		fp := tp.Child("resourceSharing").Index(i).Child("filter")
		if len(e.Filter.ChildCliqueNames) == 0 && len(e.Filter.ChildScalingGroupNames) == 0 {
			errs = append(errs, field.Required(fp, "name at least one of childCliqueNames and childScalingGroupNames, or leave the filter out to reach every child"))
		}
		for j, n := range e.Filter.ChildCliqueNames {
			if !cliques.Has(n) {
				errs = append(errs, field.NotFound(fp.Child("childCliqueNames").Index(j), n))
			}
		}
		for j, n := range e.Filter.ChildScalingGroupNames {
			if !groups.Has(n) {
				errs = append(errs, field.NotFound(fp.Child("childScalingGroupNames").Index(j), n))
			}
		}
	}
	level(tp.Child("resourceSharing"), pcsEntries)
	for i, c := range t.Cliques {
		if c != nil {
			level(tp.Child("cliques").Index(i).Child("resourceSharing"), c.ResourceSharing)
		}
	}
	for i, g := range t.PodCliqueScalingGroupConfigs {
		gp := tp.Child("podCliqueScalingGroups").Index(i).Child("resourceSharing")
		members := sets.New(g.CliqueNames...)
		var entries []grovev1alpha1.ResourceSharingSpec
		for j, e := range g.ResourceSharing {
			entries = append(entries, e.ResourceSharingSpec)
			if e.Filter == nil {
				continue
			}
			fp := gp.Index(j).Child("filter")
			if len(e.Filter.ChildCliqueNames) == 0 {
				errs = append(errs, field.Required(fp.Child("childCliqueNames"), "name at least one member clique, or leave the filter out to reach them all"))
			}
			for k, n := range e.Filter.ChildCliqueNames {
				if !members.Has(n) {
					errs = append(errs, field.NotFound(fp.Child("childCliqueNames").Index(k), n))
				}
			}
		}
		level(gp, entries)
	}
	return errs
}

// validateTemplatesExist refuses an entry naming a template that is neither one of the
// PodCliqueSet's resourceClaimTemplates nor a ResourceClaimTemplate object in its namespace (or
// the one it names): the operator could make no claim from it and the pods would never start.
func validateTemplatesExist(ctx context.Context, r client.Reader, pcs *grovev1alpha1.PodCliqueSet) (field.ErrorList, error) {
	if r == nil {
		return nil, nil
	}
	internal := sets.New[string]()
	for _, rct := range pcs.Spec.Template.ResourceClaimTemplates {
		internal.Insert(rct.Name)
	}
	var errs field.ErrorList
	found := map[string]bool{}
	for _, ref := range sharingRefs(pcs) {
		if ref.entry.Namespace == "" && internal.Has(ref.entry.Name) {
			continue
		}
		ns := ref.entry.Namespace
		if ns == "" {
			ns = pcs.Namespace
		}
		key := ns + "/" + ref.entry.Name
		ok, checked := found[key]
		if !checked {
			err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.entry.Name}, &resourcev1.ResourceClaimTemplate{})
			switch {
			case err == nil:
				ok = true
			case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
			default:
				return nil, apierrors.NewInternalError(fmt.Errorf("reading ResourceClaimTemplate %s: %w", key, err))
			}
			found[key] = ok
		}
		if !ok {
			errs = append(errs, field.NotFound(ref.path.Child("name"), fmt.Sprintf("%s: no spec.template.resourceClaimTemplates entry and no ResourceClaimTemplate %s", ref.entry.Name, key)))
		}
	}
	return errs, nil
}
