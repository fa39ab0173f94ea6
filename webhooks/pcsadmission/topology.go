package pcsadmission

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/topologyconstraints"
)

// TopologyDisabledMessage is the reason every topology constraint is rejected while
// topology-aware scheduling is off.
const TopologyDisabledMessage = "topology-aware scheduling is disabled: set topologyAwareScheduling.enabled in the operator configuration"

// Topology is what the topology rules need from outside the PodCliqueSet.
type Topology struct {
	// Enabled is topologyAwareScheduling.enabled of the operator configuration.
	Enabled bool
	// Binding is the spec of the ClusterTopologyBinding the PodCliqueSet names; nil when it does
	// not exist (yet) or was not looked up.
	Binding *grovev1alpha1.ClusterTopologyBindingSpec
}

// domainOrder ranks pack domains from broadest (0) to narrowest: in the order of the named
// ClusterTopologyBinding's levels (upstream Grove's domains are free-form and ordered by the
// binding), or, while the binding does not exist yet, in the conventional order of the domains
// upstream names (region … numa).
type domainOrder struct {
	domains []grovev1alpha1.TopologyDomain
}

func newDomainOrder(binding *grovev1alpha1.ClusterTopologyBindingSpec) domainOrder {
	if binding == nil {
		return domainOrder{domains: grovev1alpha1.TopologyDomainOrder}
	}
	o := domainOrder{}
	for _, l := range binding.Levels {
		o.domains = append(o.domains, l.Domain)
	}
	return o
}

// rank is a domain's place in the order (0 = broadest), or -1 if it has none.
func (o domainOrder) rank(d grovev1alpha1.TopologyDomain) int {
	return slices.Index(o.domains, d)
}

func (o domainOrder) String() string {
	return "domains from broadest to narrowest: " + strings.Join(domainList(o.domains), ", ")
}

func domainList(domains []grovev1alpha1.TopologyDomain) []string {
	out := make([]string, len(domains))
	for i, d := range domains {
		out[i] = string(d)
	}
	return out
}

// validateTopology checks a new PodCliqueSet's topology constraints: none while topology-aware
// scheduling is disabled; one topology name; domains known, each child's required domain as
// narrow as or narrower than its parents', each preferred domain as narrow as or narrower than
// its own required one; and, when the named ClusterTopologyBinding exists, only its domains.
// When it does not exist the PodCliqueSet is admitted with a warning: it waits for the binding.
func validateTopology(pcs *grovev1alpha1.PodCliqueSet, enabled bool, binding *grovev1alpha1.ClusterTopologyBindingSpec) (field.ErrorList, admission.Warnings) {
	all := topologyconstraints.All(pcs)
	if len(all) == 0 {
		return nil, nil
	}
	var errs field.ErrorList
	if !enabled {
		for _, c := range all {
			errs = append(errs, field.Forbidden(c.Path, TopologyDisabledMessage))
		}
		return errs, nil
	}

	name, namePath := topologyconstraints.TopologyName(pcs)
	nameErrs, nameValid := validateTopologyNames(all, name, namePath)
	errs = append(errs, nameErrs...)
	order := newDomainOrder(binding)
	errs = append(errs, validateTopologyDomains(all, name, binding, order)...)
	errs = append(errs, validateTopologyHierarchy(pcs, order)...)

	var warnings admission.Warnings
	if nameValid && binding == nil {
		warnings = append(warnings, fmt.Sprintf("%s: ClusterTopologyBinding %q does not exist yet; the PodCliqueSet waits until it does", namePath, name))
	}
	return errs, warnings
}

// validateTopologyHierarchy requires a scaling group's required domain to be as narrow as or
// narrower than the PodCliqueSet's, and a clique's as narrow as or narrower than both its scaling
// group's and the PodCliqueSet's. A clique breaking both is reported once, against the narrower.
func validateTopologyHierarchy(pcs *grovev1alpha1.PodCliqueSet, order domainOrder) field.ErrorList {
	type parent struct {
		what   string
		path   *field.Path
		domain grovev1alpha1.TopologyDomain
	}
	// requiredOf is a constraint's required domain, or "" when it has none or an unknown one
	// (reported on its own).
	requiredOf := func(tc *grovev1alpha1.TopologyConstraint) grovev1alpha1.TopologyDomain {
		d := grovev1alpha1.TopologyDomain(topologyconstraints.Required(tc))
		if order.rank(d) < 0 {
			return ""
		}
		return d
	}
	check := func(p *field.Path, d grovev1alpha1.TopologyDomain, parents ...parent) *field.Error {
		var strictest *parent
		for i := range parents {
			if parents[i].domain != "" && (strictest == nil || order.rank(parents[i].domain) > order.rank(strictest.domain)) {
				strictest = &parents[i]
			}
		}
		if d == "" || strictest == nil || order.rank(d) >= order.rank(strictest.domain) {
			return nil
		}
		return field.Invalid(p, d, fmt.Sprintf("must be equal to or narrower than the %s's required domain %s (%s); %s",
			strictest.what, strictest.domain, strictest.path, order))
	}

	var errs field.ErrorList
	tp := field.NewPath("spec", "template")
	pcsParent := parent{"PodCliqueSet", tp.Child("topologyConstraint", "pack", "required"), requiredOf(pcs.Spec.Template.TopologyConstraint)}
	groupOf := map[string]parent{}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		p := tp.Child("podCliqueScalingGroups").Index(i).Child("topologyConstraint", "pack", "required")
		d := requiredOf(g.TopologyConstraint)
		if err := check(p, d, pcsParent); err != nil {
			errs = append(errs, err)
		}
		for _, name := range g.CliqueNames {
			if _, taken := groupOf[name]; !taken { // shared membership is reported by validateGroups
				groupOf[name] = parent{"scaling group", p, d}
			}
		}
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		p := tp.Child("cliques").Index(i).Child("topologyConstraint", "pack", "required")
		parents := []parent{pcsParent}
		if g, ok := groupOf[c.Name]; ok {
			parents = append(parents, g)
		}
		if err := check(p, requiredOf(c.TopologyConstraint), parents...); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// topologyString renders a constraint for an error message as the user wrote it.
func topologyString(tc *grovev1alpha1.TopologyConstraint) string {
	if tc == nil {
		return "null"
	}
	b, err := json.Marshal(tc)
	if err != nil {
		return fmt.Sprint(*tc)
	}
	return string(b)
}

// topologyBinding reads the ClusterTopologyBinding the PodCliqueSet names. It returns nil when
// there is nothing to read (topology-aware scheduling off, no or an invalid name, no reader) or
// the binding does not exist (yet).
func (v *Validator) topologyBinding(ctx context.Context, pcs *grovev1alpha1.PodCliqueSet) (*grovev1alpha1.ClusterTopologyBindingSpec, error) {
	if !v.TopologyAwareScheduling || v.Topologies == nil {
		return nil, nil
	}
	name, _ := topologyconstraints.TopologyName(pcs)
	if name == "" || len(validation.IsDNS1123Subdomain(name)) > 0 {
		return nil, nil
	}
	ctb := &grovev1alpha1.ClusterTopologyBinding{}
	err := v.Topologies.Get(ctx, client.ObjectKey{Name: name}, ctb)
	switch {
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, apierrors.NewInternalError(fmt.Errorf("reading ClusterTopologyBinding %q: %w", name, err))
	}
	return &ctb.Spec, nil
}

// validateTopologyNames requires one topology name per PodCliqueSet, set where the constraints
// need it and valid as a ClusterTopologyBinding name; valid tells whether name is usable.
func validateTopologyNames(all []topologyconstraints.Topology, name string, namePath *field.Path) (errs field.ErrorList, valid bool) {
	valid = name != ""
	for _, c := range all {
		p := c.Path.Child("topologyName")
		switch n := c.Constraint.TopologyName; {
		case n == "" && name == "" && (c.Constraint.Pack != nil || c.Constraint.PackDomain != ""):
			errs = append(errs, field.Required(p, "name the ClusterTopologyBinding the pack domains refer to, here or on a parent (children inherit it)"))
		case n == "":
		case n != name:
			errs = append(errs, field.Invalid(p, n, fmt.Sprintf("a PodCliqueSet uses one topology: leave it empty to inherit, or set %q as %s does", name, namePath)))
		case p.String() == namePath.String():
			for _, msg := range validation.IsDNS1123Subdomain(n) {
				errs = append(errs, field.Invalid(p, n, "must be the name of a ClusterTopologyBinding: "+msg))
				valid = false
			}
		}
	}

	return errs, valid
}

// validateTopologyDomains requires known pack domains, preferred as narrow as or narrower than
// required, and, when the binding exists, domains it has.
func validateTopologyDomains(all []topologyconstraints.Topology, name string, binding *grovev1alpha1.ClusterTopologyBindingSpec, order domainOrder) field.ErrorList {
	var errs field.ErrorList
	var bindingDomains string
	if binding != nil {
		var ds []string
		for _, l := range binding.Levels {
			ds = append(ds, string(l.Domain))
		}
		bindingDomains = strings.Join(ds, ", ")
	}
	for _, c := range all {
		required, preferred := grovev1alpha1.TopologyDomain(topologyconstraints.Required(c.Constraint)), grovev1alpha1.TopologyDomain(topologyconstraints.Preferred(c.Constraint))
		pack := c.Path.Child("pack")
		known := true
		for _, d := range []struct {
			field  string
			domain grovev1alpha1.TopologyDomain
		}{{"required", required}, {"preferred", preferred}} {
			if d.domain == "" {
				continue
			}
			p := pack.Child(d.field)
			if binding != nil {
				if _, ok := binding.KeyOf(d.domain); !ok {
					errs = append(errs, field.Invalid(p, d.domain, fmt.Sprintf("ClusterTopologyBinding %q has no level %q; its domains: %s", name, d.domain, bindingDomains)))
					known = false
				}
				continue
			}
			if order.rank(d.domain) < 0 {
				known = false // a free-form domain: the binding, once it exists, decides
			}
		}
		if known && required != "" && preferred != "" && order.rank(preferred) < order.rank(required) {
			errs = append(errs, field.Invalid(pack.Child("preferred"), preferred,
				fmt.Sprintf("must be equal to or narrower than pack.required (%s); %s", required, order)))
		}
	}
	return errs
}
