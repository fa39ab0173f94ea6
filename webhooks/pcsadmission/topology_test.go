package pcsadmission

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/topologyconstraints"
	"github.com/kubegrove/grove/test/upstreamcorpus"
	"github.com/kubegrove/grove/test/upstreamshapes"
)

// tc builds a topology constraint; empty strings leave fields unset, and a constraint with
// neither domain has no pack.
func tc(name, required, preferred string) *grovev1alpha1.TopologyConstraint {
	c := &grovev1alpha1.TopologyConstraint{TopologyName: name}
	if required != "" || preferred != "" {
		c.Pack = &grovev1alpha1.TopologyPackConstraint{Required: grovev1alpha1.TopologyDomain(required), Preferred: grovev1alpha1.TopologyDomain(preferred)}
	}
	return c
}

func bindingOf(domains ...grovev1alpha1.TopologyDomain) *grovev1alpha1.ClusterTopologyBindingSpec {
	b := &grovev1alpha1.ClusterTopologyBindingSpec{}
	for _, d := range domains {
		b.Levels = append(b.Levels, grovev1alpha1.TopologyLevel{Domain: d, Key: "example.com/" + string(d)})
	}
	return b
}

// kaiTeamA is KAI with a default queue: a backend that honours every topology constraint.
var kaiTeamA = kaiDefault()

// validOnKAI is valid() with its pods on KAI.
func validOnKAI() *grovev1alpha1.PodCliqueSet {
	p := valid()
	for _, c := range p.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = "kai-scheduler"
	}
	return p
}

// wantErr is one expected error: its field path, type, and a part of its detail.
type wantErr struct {
	path   string
	typ    field.ErrorType
	detail string
}

// Paths of valid()'s constraints: cliques router (0, standalone), leader (1) and worker (2) in
// scaling group prefill (0).
const (
	pcsTC    = "spec.template.topologyConstraint"
	groupTC  = "spec.template.podCliqueScalingGroups[0].topologyConstraint"
	routerTC = "spec.template.cliques[0].topologyConstraint"
	workerTC = "spec.template.cliques[2].topologyConstraint"
)

func TestTopologyRulesRejectWithTheFieldPath(t *testing.T) {
	enabled := Topology{Enabled: true}
	cases := []struct {
		name     string
		mutate   func(*grovev1alpha1.PodCliqueSet)
		topology Topology
		want     []wantErr
		warnings []string
	}{
		{name: "no constraints, disabled", mutate: func(*grovev1alpha1.PodCliqueSet) {}},
		{name: "no constraints, enabled", mutate: func(*grovev1alpha1.PodCliqueSet) {}, topology: enabled},

		// 1. topology-aware scheduling disabled
		{name: "disabled rejects every constraint", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "block", "")
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc("", "rack", "")
			p.Spec.Template.Cliques[2].TopologyConstraint = tc("", "", "host")
		}, want: []wantErr{
			{pcsTC, field.ErrorTypeForbidden, TopologyDisabledMessage},
			{groupTC, field.ErrorTypeForbidden, TopologyDisabledMessage},
			{workerTC, field.ErrorTypeForbidden, TopologyDisabledMessage},
		}},
		{name: "disabled rejects even an invalid constraint only for being there", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].TopologyConstraint = tc("", "gpu", "")
		}, want: []wantErr{{routerTC, field.ErrorTypeForbidden, "topology-aware scheduling is disabled"}}},

		// 2. one topology name per PodCliqueSet
		{name: "three levels, children inherit the name: waits for the binding", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "block", "rack")
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc("", "rack", "host")
			p.Spec.Template.Cliques[2].TopologyConstraint = tc("grove-topology", "host", "numa")
		}, topology: enabled,
			warnings: []string{`spec.template.topologyConstraint.topologyName: ClusterTopologyBinding "grove-topology" does not exist yet; the PodCliqueSet waits until it does`}},
		{name: "the name may be set on a clique only", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].TopologyConstraint = tc("grove-topology", "rack", "")
		}, topology: enabled,
			warnings: []string{`spec.template.cliques[0].topologyConstraint.topologyName: ClusterTopologyBinding "grove-topology" does not exist yet; the PodCliqueSet waits until it does`}},
		{name: "a second topology name", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "block", "")
			p.Spec.Template.Cliques[2].TopologyConstraint = tc("other-topology", "host", "")
		}, topology: enabled, want: []wantErr{
			{workerTC + ".topologyName", field.ErrorTypeInvalid, `a PodCliqueSet uses one topology: leave it empty to inherit, or set "grove-topology" as spec.template.topologyConstraint.topologyName does`},
		}, warnings: []string{`spec.template.topologyConstraint.topologyName: ClusterTopologyBinding "grove-topology" does not exist yet; the PodCliqueSet waits until it does`}},
		{name: "no topology name anywhere", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("", "block", "")
			p.Spec.Template.Cliques[0].TopologyConstraint = tc("", "", "host")
		}, topology: enabled, want: []wantErr{
			{pcsTC + ".topologyName", field.ErrorTypeRequired, "name the ClusterTopologyBinding"},
			{routerTC + ".topologyName", field.ErrorTypeRequired, "name the ClusterTopologyBinding"},
		}},
		{name: "a topology name that cannot name an object", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("Grove_Topology", "block", "")
		}, topology: enabled, want: []wantErr{{pcsTC + ".topologyName", field.ErrorTypeInvalid, "must be the name of a ClusterTopologyBinding"}}},

		// 3. domains and hierarchy
		{name: "domains the binding lacks", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "gpu", "socket")
		}, topology: Topology{Enabled: true, Binding: bindingOf(grovev1alpha1.TopologyDomainOrder...)}, want: []wantErr{
			{pcsTC + ".pack.required", field.ErrorTypeInvalid, `ClusterTopologyBinding "grove-topology" has no level "gpu"; its domains: region, zone, datacenter, block, rack, host, numa`},
			{pcsTC + ".pack.preferred", field.ErrorTypeInvalid, `has no level "socket"`},
		}},
		{name: "free-form domains are ranked in the binding's order", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "nvl-domain", "")
			p.Spec.Template.Cliques[0].TopologyConstraint = tc("", "block", "")
		}, topology: Topology{Enabled: true, Binding: bindingOf("block", "nvl-domain", "host")}, want: []wantErr{
			{routerTC + ".pack.required", field.ErrorTypeInvalid, "must be equal to or narrower than the PodCliqueSet's required domain nvl-domain (spec.template.topologyConstraint.pack.required); domains from broadest to narrowest: block, nvl-domain, host"},
		}},
		{name: "a binding may order the conventional domains its own way", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "host", "rack")
		}, topology: Topology{Enabled: true, Binding: bindingOf("block", "host", "rack")}},
		{name: "preferred broader than required", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "rack", "block")
		}, topology: Topology{Enabled: true, Binding: bindingOf("block", "rack")}, want: []wantErr{
			{pcsTC + ".pack.preferred", field.ErrorTypeInvalid, "must be equal to or narrower than pack.required (rack); domains from broadest to narrowest: block, rack"},
		}},
		{name: "preferred equal to required", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "rack", "rack")
		}, topology: Topology{Enabled: true, Binding: bindingOf("rack")}},
		{name: "scaling group broader than the PodCliqueSet", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "rack", "")
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc("", "zone", "")
		}, topology: Topology{Enabled: true, Binding: bindingOf("zone", "rack")}, want: []wantErr{
			{groupTC + ".pack.required", field.ErrorTypeInvalid, "must be equal to or narrower than the PodCliqueSet's required domain rack (spec.template.topologyConstraint.pack.required)"},
		}},
		{name: "clique broader than its scaling group", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc("grove-topology", "rack", "")
			p.Spec.Template.Cliques[2].TopologyConstraint = tc("", "block", "")
		}, topology: Topology{Enabled: true, Binding: bindingOf("block", "rack")}, want: []wantErr{
			{workerTC + ".pack.required", field.ErrorTypeInvalid, "must be equal to or narrower than the scaling group's required domain rack (spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required)"},
		}},
		{name: "standalone clique broader than the PodCliqueSet", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "rack", "")
			p.Spec.Template.Cliques[0].TopologyConstraint = tc("", "block", "")
		}, topology: Topology{Enabled: true, Binding: bindingOf("block", "rack")}, want: []wantErr{
			{routerTC + ".pack.required", field.ErrorTypeInvalid, "the PodCliqueSet's required domain rack"},
		}},
		{name: "group member broader than the PodCliqueSet, group without a required domain", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "rack", "")
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc("", "", "host")
			p.Spec.Template.Cliques[2].TopologyConstraint = tc("", "block", "")
		}, topology: Topology{Enabled: true, Binding: bindingOf("block", "rack", "host")}, want: []wantErr{
			{workerTC + ".pack.required", field.ErrorTypeInvalid, "the PodCliqueSet's required domain rack"},
		}},
		{name: "clique broader than both parents is reported once, against the narrower", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "block", "")
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc("", "rack", "")
			p.Spec.Template.Cliques[2].TopologyConstraint = tc("", "zone", "")
		}, topology: Topology{Enabled: true, Binding: bindingOf("zone", "block", "rack")}, want: []wantErr{
			{workerTC + ".pack.required", field.ErrorTypeInvalid, "the scaling group's required domain rack"},
		}},
		{name: "a group broader than the PodCliqueSet does not excuse its member", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "rack", "")
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc("", "block", "")
			p.Spec.Template.Cliques[2].TopologyConstraint = tc("", "block", "")
		}, topology: Topology{Enabled: true, Binding: bindingOf("block", "rack")}, want: []wantErr{
			{groupTC + ".pack.required", field.ErrorTypeInvalid, "the PodCliqueSet's required domain rack"},
			{workerTC + ".pack.required", field.ErrorTypeInvalid, "the PodCliqueSet's required domain rack"},
		}},
		{name: "a free-form domain waits for the binding to decide, its children are not ranked against it", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "gpu", "")
			p.Spec.Template.Cliques[0].TopologyConstraint = tc("", "zone", "")
		}, topology: enabled, warnings: []string{`spec.template.topologyConstraint.topologyName: ClusterTopologyBinding "grove-topology" does not exist yet; the PodCliqueSet waits until it does`}},

		// 4. the named ClusterTopologyBinding
		{name: "every domain is a level of the binding", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "zone", "rack")
			p.Spec.Template.Cliques[2].TopologyConstraint = tc("", "host", "")
		}, topology: Topology{Enabled: true, Binding: bindingOf("zone", "rack", "host")}},
		{name: "domains the binding lacks", mutate: func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint = tc("grove-topology", "block", "rack")
			p.Spec.Template.Cliques[2].TopologyConstraint = tc("", "host", "numa")
		}, topology: Topology{Enabled: true, Binding: bindingOf("zone", "rack", "host")}, want: []wantErr{
			{pcsTC + ".pack.required", field.ErrorTypeInvalid, `ClusterTopologyBinding "grove-topology" has no level "block"; its domains: zone, rack, host`},
			{workerTC + ".pack.preferred", field.ErrorTypeInvalid, `ClusterTopologyBinding "grove-topology" has no level "numa"; its domains: zone, rack, host`},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pcs := validOnKAI()
			c.mutate(pcs)
			errs, warnings := validateTopology(pcs, c.topology.Enabled, c.topology.Binding)
			assertErrors(t, c.want, errs)
			assert.Equal(t, c.warnings, []string(warnings))

			// ValidateCreate reports the same, next to the other rules (validOnKAI() passes them).
			all, w := ValidateCreate(pcs, kaiTeamA, c.topology)
			assertErrors(t, c.want, all)
			assert.Equal(t, c.warnings, []string(w))
		})
	}
}

func assertErrors(t *testing.T, want []wantErr, errs field.ErrorList) {
	t.Helper()
	var got, expected []string
	for _, e := range errs {
		got = append(got, e.Field+" "+string(e.Type))
	}
	for _, w := range want {
		expected = append(expected, w.path+" "+string(w.typ))
	}
	if !assert.ElementsMatch(t, expected, got, "%v", errs) {
		return
	}
	for _, w := range want {
		found := false
		for _, e := range errs {
			if e.Field == w.path && e.Type == w.typ && strings.Contains(e.Error(), w.detail) {
				found = true
			}
		}
		assert.True(t, found, "no %s error at %s saying %q in %v", w.typ, w.path, w.detail, errs)
	}
}

func TestTopologyConstraintsAreImmutable(t *testing.T) {
	withTopology := func() *grovev1alpha1.PodCliqueSet {
		p := valid()
		p.Spec.Template.TopologyConstraint = tc("grove-topology", "block", "")
		p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = tc("", "rack", "")
		p.Spec.Template.Cliques[2].TopologyConstraint = tc("", "host", "")
		return p
	}
	cases := []struct {
		name   string
		mutate func(*grovev1alpha1.PodCliqueSet)
		paths  []string
	}{
		{"unchanged", func(*grovev1alpha1.PodCliqueSet) {}, nil},
		{"PodCliqueSet required domain", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.Pack.Required = "zone"
		}, []string{pcsTC}},
		{"PodCliqueSet constraint removed", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.TopologyConstraint = nil }, []string{pcsTC}},
		{"topology name", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.TopologyConstraint.TopologyName = "other-topology"
		}, []string{pcsTC}},
		{"scaling-group preferred domain added", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint.Pack.Preferred = "host"
		}, []string{groupTC}},
		{"clique constraint added", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].TopologyConstraint = tc("", "rack", "")
		}, []string{routerTC}},
		{"clique constraint removed", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[2].TopologyConstraint = nil }, []string{workerTC}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pcs := withTopology()
			c.mutate(pcs)
			var got []string
			for _, e := range ValidateImmutable(withTopology(), pcs) {
				got = append(got, e.Field)
				assert.Contains(t, e.Error(), "field is immutable")
			}
			assert.ElementsMatch(t, c.paths, got)
		})
	}
	t.Run("the rejected value is shown as written", func(t *testing.T) {
		pcs := withTopology()
		pcs.Spec.Template.TopologyConstraint.Pack.Required = "zone"
		errs := ValidateImmutable(withTopology(), pcs)
		require.Len(t, errs, 1)
		assert.Equal(t, `spec.template.topologyConstraint: Invalid value: "{\"topologyName\":\"grove-topology\",\"pack\":{\"required\":\"zone\"}}": field is immutable`, errs[0].Error())
	})
}

func validatorWith(t *testing.T, objs ...client.Object) *Validator {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	return &Validator{Backends: kaiTeamA, TopologyAwareScheduling: true, Topologies: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()}
}

func TestValidatorLooksUpTheNamedBinding(t *testing.T) {
	ctx := context.Background()
	pcs := validOnKAI()
	pcs.Spec.Template.TopologyConstraint = tc("grove-topology", "block", "rack")
	binding := &grovev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: "grove-topology"}, Spec: *bindingOf("zone", "rack")}

	t.Run("an existing binding's levels are enforced", func(t *testing.T) {
		warnings, err := validatorWith(t, binding).ValidateCreate(ctx, pcs)
		require.Error(t, err)
		assert.True(t, apierrors.IsInvalid(err))
		assert.Contains(t, err.Error(), `spec.template.topologyConstraint.pack.required: Invalid value: "block": ClusterTopologyBinding "grove-topology" has no level "block"; its domains: zone, rack`)
		assert.Empty(t, warnings)
	})
	t.Run("a missing binding admits with a warning", func(t *testing.T) {
		warnings, err := validatorWith(t).ValidateCreate(ctx, pcs)
		require.NoError(t, err)
		assert.Equal(t, []string{`spec.template.topologyConstraint.topologyName: ClusterTopologyBinding "grove-topology" does not exist yet; the PodCliqueSet waits until it does`}, []string(warnings))
	})
	t.Run("a nil reader is a missing binding", func(t *testing.T) {
		warnings, err := (&Validator{Backends: kaiTeamA, TopologyAwareScheduling: true}).ValidateCreate(ctx, pcs)
		require.NoError(t, err)
		assert.Len(t, warnings, 1)
	})
	t.Run("a failed read is an internal error, not a verdict", func(t *testing.T) {
		v := &Validator{Backends: kaiTeamA, TopologyAwareScheduling: true, Topologies: failingReader{}}
		_, err := v.ValidateCreate(ctx, pcs)
		require.Error(t, err)
		assert.True(t, apierrors.IsInternalError(err), "%v", err)
		assert.Contains(t, err.Error(), `reading ClusterTopologyBinding "grove-topology"`)
	})
	t.Run("disabled rejects without reading", func(t *testing.T) {
		v := &Validator{Backends: kaiTeamA, Topologies: failingReader{}}
		_, err := v.ValidateCreate(ctx, pcs)
		require.Error(t, err)
		assert.True(t, apierrors.IsInvalid(err))
		assert.Contains(t, err.Error(), "spec.template.topologyConstraint: Forbidden: "+TopologyDisabledMessage)
	})
	t.Run("updates of existing objects are not blocked by configuration changes", func(t *testing.T) {
		updated := pcs.DeepCopy()
		updated.Spec.Replicas = 5
		_, err := (&Validator{Backends: kaiTeamA}).ValidateUpdate(ctx, pcs, updated)
		require.NoError(t, err)
		_, err = validatorWith(t, binding).ValidateUpdate(ctx, pcs, updated)
		require.NoError(t, err)
	})
	t.Run("updates cannot change a constraint", func(t *testing.T) {
		updated := pcs.DeepCopy()
		updated.Spec.Template.TopologyConstraint.Pack.Preferred = "host"
		_, err := validatorWith(t).ValidateUpdate(ctx, pcs, updated)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "spec.template.topologyConstraint: Invalid value")
		assert.Contains(t, err.Error(), "field is immutable")
	})
}

type failingReader struct{ client.Reader }

func (failingReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("connection refused")
}

// Upstream Grove's topology workloads, as the project builds them from the facts of upstream's
// tas-*.yaml (test/upstreamshapes), pass the topology rules with KAI enabled as upstream assumes:
// without a binding each naming a topology waits for it, warned once at its first constraint;
// with a binding of every domain nothing is refused; a binding without block refuses exactly the
// constraints that pack into a block, at their level.
func TestUpstreamTopologyShapesPassTheTopologyRules(t *testing.T) {
	waits := func(path, topology string) []string {
		return []string{path + `.topologyName: ClusterTopologyBinding "` + topology + `" does not exist yet; the PodCliqueSet waits until it does`}
	}
	noBlock := func(path string) []wantErr {
		return []wantErr{{path + ".pack.required", field.ErrorTypeInvalid, `has no level "block"; its domains: zone, rack, host`}}
	}
	const (
		clique0TC = "spec.template.cliques[0].topologyConstraint"
		clique1TC = "spec.template.cliques[1].topologyConstraint"
	)
	cases := []struct {
		upstream string
		warnings []string
		noBlock  []wantErr
	}{
		{"tas-hierarchy.yaml", waits(pcsTC, "grove-topology"), noBlock(pcsTC)},
		{"tas-host-level.yaml", waits(clique0TC, "grove-topology"), nil},
		{"tas-indep-clq.yaml", waits(clique0TC, "grove-topology"), noBlock(clique1TC)},
		{"tas-insuffic.yaml", waits(pcsTC, "grove-topology"), nil},
		{"tas-large-scale.yaml", waits(pcsTC, "grove-topology"), noBlock(pcsTC)},
		{"tas-multi-topology-gb200.yaml", waits(pcsTC, "gb200-topology"), noBlock(pcsTC)},
		{"tas-multi-topology-h100.yaml", waits(pcsTC, "h100-topology"), noBlock(pcsTC)},
		{"tas-multirep.yaml", waits(pcsTC, "grove-topology"), nil},
		{"tas-no-constraint.yaml", nil, nil},
		{"tas-pcs-multi-pcsg-multi-replica.yaml", waits(pcsTC, "grove-topology"), noBlock(pcsTC)},
		{"tas-pcs-multi-pcsg.yaml", waits(pcsTC, "grove-topology"), noBlock(pcsTC)},
		{"tas-pcs-pclq.yaml", waits(pcsTC, "grove-topology"), noBlock(pcsTC)},
		{"tas-pcsg-pclq.yaml", waits(groupTC, "grove-topology"), nil},
		{"tas-pcsg-scale.yaml", waits(pcsTC, "grove-topology"), noBlock(pcsTC)},
		{"tas-preferred-pack.yaml", waits(pcsTC, "grove-topology"), noBlock(pcsTC)},
		{"tas-sl-pcs-only.yaml", waits(pcsTC, "grove-topology"), nil},
		{"tas-sl-pcsg-only.yaml", waits(groupTC, "grove-topology"), nil},
		{"tas-standalone-pclq-only-pcs-zone.yaml", waits(pcsTC, "grove-topology"), nil},
		{"tas-topology-condition.yaml", waits(pcsTC, "tas20-topology"), nil},
	}
	require.Len(t, cases, len(upstreamshapes.Topology()), "a case per topology shape")
	for _, c := range cases {
		t.Run(c.upstream, func(t *testing.T) {
			shape, ok := upstreamshapes.ByUpstream(c.upstream)
			require.True(t, ok)
			pcs := shape.Build("ns")
			Default(pcs, kaiEnabled)
			errs, warnings := ValidateCreate(pcs, kaiEnabled, Topology{Enabled: true})
			assert.Empty(t, errs)
			assert.Equal(t, c.warnings, []string(warnings))
			errs, warnings = ValidateCreate(pcs, kaiEnabled, Topology{Enabled: true, Binding: bindingOf(grovev1alpha1.TopologyDomainOrder...)})
			assert.Empty(t, errs, "with a binding of every domain")
			assert.Empty(t, warnings, "with the binding there")
			errs, _ = ValidateCreate(pcs, kaiEnabled, Topology{Enabled: true, Binding: bindingOf("zone", "rack", "host")})
			assertErrors(t, c.noBlock, errs)
		})
	}
}

// Upstream Grove's topology e2e manifests themselves (the upstream corpus tier) pass the topology
// rules unchanged, with KAI enabled as upstream assumes; none has a binding here, so each naming
// a topology gets the warning.
func TestUpstreamTopologyManifestsPassTheTopologyRules(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(upstreamcorpus.Path(t, "compat", "grove-e2e"), "tas-*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "upstream's topology manifests")
	sort.Strings(files)
	seen := 0
	for _, file := range files {
		f, err := os.Open(file)
		require.NoError(t, err)
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 4096)
		for {
			pcs := &grovev1alpha1.PodCliqueSet{}
			err := dec.Decode(pcs)
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err, file)
			if pcs.Kind != "PodCliqueSet" {
				continue
			}
			seen++
			t.Run(filepath.Base(file), func(t *testing.T) {
				Default(pcs, kaiEnabled)
				errs, warnings := ValidateCreate(pcs, kaiEnabled, Topology{Enabled: true})
				assert.Empty(t, errs)
				if name, _ := topologyconstraints.TopologyName(pcs); name != "" {
					require.Len(t, warnings, 1)
					assert.Contains(t, warnings[0], `ClusterTopologyBinding "`+name+`" does not exist yet`)
				} else {
					assert.Empty(t, warnings)
				}
				errs, _ = ValidateCreate(pcs, kaiEnabled, Topology{Enabled: true, Binding: bindingOf(grovev1alpha1.TopologyDomainOrder...)})
				assert.Empty(t, errs, "with a binding of every domain")
			})
		}
		require.NoError(t, f.Close())
	}
	assert.NotZero(t, seen)
}
