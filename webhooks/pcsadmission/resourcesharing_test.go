package pcsadmission

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

func claimTemplate(name string) grovev1alpha1.ResourceClaimTemplateConfig {
	t := grovev1alpha1.ResourceClaimTemplateConfig{Name: name}
	t.TemplateSpec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}
	return t
}

func share(name string, scope grovev1alpha1.ResourceSharingScope) grovev1alpha1.ResourceSharingSpec {
	return grovev1alpha1.ResourceSharingSpec{Name: name, Scope: scope}
}

// sharing is valid() with a template "gpu" shared at every level.
func sharing() *grovev1alpha1.PodCliqueSet {
	pcs := valid()
	t := &pcs.Spec.Template
	t.ResourceClaimTemplates = []grovev1alpha1.ResourceClaimTemplateConfig{claimTemplate("gpu")}
	t.ResourceSharing = []grovev1alpha1.PCSResourceSharingSpec{{ResourceSharingSpec: share("gpu", grovev1alpha1.ResourceSharingScopePerReplica),
		Filter: &grovev1alpha1.PCSResourceSharingFilter{ChildCliqueNames: []string{"router"}, ChildScalingGroupNames: []string{"prefill"}}}}
	t.Cliques[0].ResourceSharing = []grovev1alpha1.ResourceSharingSpec{share("gpu", grovev1alpha1.ResourceSharingScopeAllReplicas)}
	t.PodCliqueScalingGroupConfigs[0].ResourceSharing = []grovev1alpha1.PCSGResourceSharingSpec{{ResourceSharingSpec: share("gpu", grovev1alpha1.ResourceSharingScopeAllReplicas),
		Filter: &grovev1alpha1.PCSGResourceSharingFilter{ChildCliqueNames: []string{"worker"}}}}
	return pcs
}

func TestResourceSharingRulesRejectWithTheFieldPath(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*grovev1alpha1.PodCliqueSet)
		want   map[string]field.ErrorType
	}{
		{"valid at every level", func(*grovev1alpha1.PodCliqueSet) {}, nil},
		{"a template without a device request", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceClaimTemplates[0].TemplateSpec.Spec.Devices.Requests = nil
		}, map[string]field.ErrorType{"spec.template.resourceClaimTemplates[0].templateSpec.spec.devices.requests": field.ErrorTypeRequired}},
		{"a template named twice at one level", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.Cliques[0].ResourceSharing = append(p.Spec.Template.Cliques[0].ResourceSharing, share("gpu", grovev1alpha1.ResourceSharingScopePerReplica))
		}, map[string]field.ErrorType{"spec.template.cliques[0].resourceSharing[1].name": field.ErrorTypeDuplicate}},
		{"a namespace on an internal template", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing[0].Namespace = "shared"
		}, map[string]field.ErrorType{"spec.template.resourceSharing[0].namespace": field.ErrorTypeInvalid}},
		{"an empty filter", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing[0].Filter = &grovev1alpha1.PCSResourceSharingFilter{}
		}, map[string]field.ErrorType{"spec.template.resourceSharing[0].filter": field.ErrorTypeRequired}},
		{"a filter naming no clique or group of the template", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing[0].Filter = &grovev1alpha1.PCSResourceSharingFilter{ChildCliqueNames: []string{"ghost"}, ChildScalingGroupNames: []string{"worker"}}
		}, map[string]field.ErrorType{
			"spec.template.resourceSharing[0].filter.childCliqueNames[0]":       field.ErrorTypeNotFound,
			"spec.template.resourceSharing[0].filter.childScalingGroupNames[0]": field.ErrorTypeNotFound,
		}},
		{"a scaling-group filter naming a clique outside the group", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing[0].Filter.ChildCliqueNames = []string{"router"}
		}, map[string]field.ErrorType{"spec.template.podCliqueScalingGroups[0].resourceSharing[0].filter.childCliqueNames[0]": field.ErrorTypeNotFound}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := sharing()
			tc.mutate(pcs)
			got := map[string]field.ErrorType{}
			for _, e := range Validate(pcs, kaiEnabled) {
				got[e.Field] = e.Type
			}
			if tc.want == nil {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestResourceSharingNamesTemplatesThatExist(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	external := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "ns"}}
	crossNS := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: "team"}}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(external, crossNS).Build()
	cases := []struct {
		name  string
		entry grovev1alpha1.ResourceSharingSpec
		want  string // the field refused, "" when admitted
	}{
		{"an internal template", share("gpu", grovev1alpha1.ResourceSharingScopeAllReplicas), ""},
		{"a ResourceClaimTemplate of the namespace", share("ext", grovev1alpha1.ResourceSharingScopeAllReplicas), ""},
		{"a ResourceClaimTemplate of another namespace", grovev1alpha1.ResourceSharingSpec{Name: "shared", Namespace: "team", Scope: grovev1alpha1.ResourceSharingScopeAllReplicas}, ""},
		{"a template that exists nowhere", share("ghost", grovev1alpha1.ResourceSharingScopeAllReplicas), "spec.template.cliques[1].resourceSharing[0].name"},
		{"a template of the namespace named in another one", grovev1alpha1.ResourceSharingSpec{Name: "ext", Namespace: "team", Scope: grovev1alpha1.ResourceSharingScopePerReplica}, "spec.template.cliques[1].resourceSharing[0].name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := sharing()
			pcs.Spec.Template.Cliques[1].ResourceSharing = []grovev1alpha1.ResourceSharingSpec{tc.entry}
			errs, err := validateTemplatesExist(context.Background(), reader, pcs)
			require.NoError(t, err)
			if tc.want == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.Equal(t, tc.want, errs[0].Field)
			assert.Equal(t, field.ErrorTypeNotFound, errs[0].Type)
		})
	}
}

func TestResourceSharingIsImmutable(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*grovev1alpha1.PodCliqueSet)
		path   string
	}{
		{"the templates", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceClaimTemplates = append(p.Spec.Template.ResourceClaimTemplates, claimTemplate("more"))
		}, "spec.template.resourceClaimTemplates"},
		{"the PodCliqueSet's sharing", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.ResourceSharing[0].Scope = grovev1alpha1.ResourceSharingScopeAllReplicas
		}, "spec.template.resourceSharing"},
		{"a clique's sharing", func(p *grovev1alpha1.PodCliqueSet) { p.Spec.Template.Cliques[0].ResourceSharing = nil }, "spec.template.cliques[0].resourceSharing"},
		{"a scaling group's sharing", func(p *grovev1alpha1.PodCliqueSet) {
			p.Spec.Template.PodCliqueScalingGroupConfigs[0].ResourceSharing[0].Filter = nil
		}, "spec.template.podCliqueScalingGroups[0].resourceSharing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := sharing()
			pcs := old.DeepCopy()
			tc.mutate(pcs)
			var fields []string
			for _, e := range ValidateImmutable(old, pcs) {
				fields = append(fields, e.Field)
			}
			assert.Equal(t, []string{tc.path}, fields)
		})
	}
}
