package pcsadmission

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// maxComparedNames bounds the names admission lists for one PodCliqueSet: listing is linear in
// replicas × scaling-group replicas × cliques, and a request at the size limits would take the
// webhook's memory. Beyond it the overlap is a warning; the operator still refuses to share.
const maxComparedNames = 20000

// nameOverlap compares the names a new PodCliqueSet's children get with those of every
// PodCliqueSet of its namespace whose names can overlap with it (`a` and `a-0-g`): a name both
// would use at their current sizes is refused, naming the other PodCliqueSet and the names; an
// overlap that only scaling could bring is a warning, since no request can decide it.
func (v *Validator) nameOverlap(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet) (field.ErrorList, admission.Warnings, error) {
	if v.PodCliqueSets == nil {
		return nil, nil, nil
	}
	list := &grovev1alpha1.PodCliqueSetList{}
	// Read-only: the cache's own objects, not a copy of every PodCliqueSet of the namespace per
	// request (100 creates at once into a namespace copied 100 × 100 objects).
	if err := v.PodCliqueSets.List(ctx, list, client.InNamespace(pcs.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		// A failed read, not a verdict: answered as an internal error (500), which the API server
		// reports as such and grove_admission_requests_total counts as result=error.
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("listing the namespace's PodCliqueSets to compare generated names: %w", err))
	}
	var errs field.ErrorList
	var warnings admission.Warnings
	var mine map[string][]string // listed only when another PodCliqueSet may overlap: rarely
	for i := range list.Items {
		other := &list.Items[i]
		if other.Name == pcs.Name || !grovev1alpha1.NamesMayOverlap(pcs.Name, other.Name) {
			continue
		}
		if grovev1alpha1.GeneratedNameCount(pcs) > maxComparedNames || grovev1alpha1.GeneratedNameCount(other) > maxComparedNames {
			warnings = append(warnings, fmt.Sprintf("the children of PodCliqueSet %s and of %s may be given the same names; they are too many to compare "+
				"at admission (over %d): the one that creates a name second leaves it alone and reports NameCollision", pcs.Name, other.Name, maxComparedNames))
			continue
		}
		if mine == nil {
			mine = grovev1alpha1.GeneratedNames(pcs)
		}
		if shared := sharedNames(mine, grovev1alpha1.GeneratedNames(other)); len(shared) > 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), pcs.Name, fmt.Sprintf(
				"its children would take names PodCliqueSet %s already gives its own (%s); choose a name that does not begin with %q followed by a replica index",
				other.Name, strings.Join(shared, ", "), other.Name+"-")))
			continue
		}
		warnings = append(warnings, fmt.Sprintf("the children of PodCliqueSet %s and of %s can be given the same names once either is scaled; "+
			"the one that creates a name second leaves it alone and reports NameCollision", pcs.Name, other.Name))
	}
	return errs, warnings, nil
}

// sharedNames lists "<Kind> <name>" for the names both sets give objects of one kind.
func sharedNames(a, b map[string][]string) []string {
	var out []string
	for kind, names := range a {
		theirs := sets.New(b[kind]...)
		for _, n := range names {
			if theirs.Has(n) {
				out = append(out, kind+" "+n)
			}
		}
	}
	sort.Strings(out)
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("and %d more", len(out)-5))
	}
	return out
}
