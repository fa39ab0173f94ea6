package thirdparty_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv1alpha1 "github.com/kubegrove/grove/apis/kai/v1alpha1"
	kaiv2 "github.com/kubegrove/grove/apis/kai/v2"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	nvidiav1beta1 "github.com/kubegrove/grove/apis/nvidia/v1beta1"
	"github.com/kubegrove/grove/config/thirdparty"
	"github.com/kubegrove/grove/test/upstreamcorpus"
)

// decodeCRDs strictly decodes the CRD of every file in fsys matching pattern, by file name.
func decodeCRDs(t *testing.T, fsys fs.FS, pattern string) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := fs.Glob(fsys, pattern)
	require.NoError(t, err)
	require.NotEmpty(t, files, "no CRD matches %s", pattern)
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, file := range files {
		data, err := fs.ReadFile(fsys, file)
		require.NoError(t, err)
		crd := &apiextensionsv1.CustomResourceDefinition{}
		require.NoError(t, yaml.UnmarshalStrict(data, crd), "%s decodes as a CRD", file)
		out[file] = crd
	}
	return out
}

// byName keys CRDs by their metadata.name.
func byName(crds map[string]*apiextensionsv1.CustomResourceDefinition) map[string]*apiextensionsv1.CustomResourceDefinition {
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range crds {
		out[crd.Name] = crd
	}
	return out
}

func version(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i := range crd.Spec.Versions {
		if crd.Spec.Versions[i].Name == name {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

// schemaAt is the schema of a property path such as spec.subGroups[].name ([] steps into an
// array's items), or nil.
func schemaAt(s *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	for _, part := range strings.Split(path, ".") {
		name, items := strings.CutSuffix(part, "[]")
		p, ok := s.Properties[name]
		if !ok {
			return nil
		}
		s = &p
		if items {
			if s.Items == nil || s.Items.Schema == nil {
				return nil
			}
			s = s.Items.Schema
		}
	}
	return s
}

// incompatibilities lists what makes the generated CRD disagree on the wire with the published
// one: identity and scope, a served version the published CRD does not serve, and in each served
// version's schema a property missing or of another type or format, an enum value it lacks, or
// a field only the generated schema requires (it would reject what the published one accepts).
func incompatibilities(gen, pub *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	same := func(what, g, p string) {
		if g != p {
			out = append(out, fmt.Sprintf("%s: generated %q, published %q", what, g, p))
		}
	}
	same("group", gen.Spec.Group, pub.Spec.Group)
	same("kind", gen.Spec.Names.Kind, pub.Spec.Names.Kind)
	same("plural", gen.Spec.Names.Plural, pub.Spec.Names.Plural)
	same("scope", string(gen.Spec.Scope), string(pub.Spec.Scope))
	for _, gv := range gen.Spec.Versions {
		if !gv.Served {
			continue
		}
		pv := version(pub, gv.Name)
		if pv == nil || !pv.Served {
			out = append(out, fmt.Sprintf("version %s: served by the generated CRD, not by the published one", gv.Name))
			continue
		}
		if gv.Schema == nil || pv.Schema == nil {
			out = append(out, fmt.Sprintf("version %s: a schema is missing", gv.Name))
			continue
		}
		for _, p := range schemaIncompatibilities("", gv.Schema.OpenAPIV3Schema, pv.Schema.OpenAPIV3Schema) {
			out = append(out, gv.Name+" "+p)
		}
	}
	return out
}

func schemaIncompatibilities(path string, gen, pub *apiextensionsv1.JSONSchemaProps) []string {
	at := path
	if at == "" {
		at = "."
	}
	if gen.Type != pub.Type {
		return []string{fmt.Sprintf("%s: type %q, published %q", at, gen.Type, pub.Type)}
	}
	var out []string
	if gen.Format != "" && pub.Format != "" && gen.Format != pub.Format {
		out = append(out, fmt.Sprintf("%s: format %q, published %q", at, gen.Format, pub.Format))
	}
	if len(pub.Enum) > 0 {
		for _, v := range gen.Enum {
			if !slices.ContainsFunc(pub.Enum, func(p apiextensionsv1.JSON) bool { return bytes.Equal(p.Raw, v.Raw) }) {
				out = append(out, fmt.Sprintf("%s: enum value %s is not in the published enum", at, v.Raw))
			}
		}
	}
	for _, r := range gen.Required {
		if !slices.Contains(pub.Required, r) {
			out = append(out, fmt.Sprintf("%s: requires %s, the published schema does not", at, r))
		}
	}
	names := make([]string, 0, len(gen.Properties))
	for name := range gen.Properties {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		g := gen.Properties[name]
		p, ok := pub.Properties[name]
		if !ok {
			out = append(out, fmt.Sprintf("%s.%s: not in the published schema", path, name))
			continue
		}
		out = append(out, schemaIncompatibilities(path+"."+name, &g, &p)...)
	}
	if gen.Items != nil && gen.Items.Schema != nil {
		if pub.Items == nil || pub.Items.Schema == nil {
			out = append(out, fmt.Sprintf("%s: items have no published schema", at))
		} else {
			out = append(out, schemaIncompatibilities(path+"[]", gen.Items.Schema, pub.Items.Schema)...)
		}
	}
	if gen.AdditionalProperties != nil && gen.AdditionalProperties.Schema != nil {
		if pub.AdditionalProperties == nil || pub.AdditionalProperties.Schema == nil {
			out = append(out, fmt.Sprintf("%s: additional properties have no published schema", at))
		} else {
			out = append(out, schemaIncompatibilities(path+"{}", gen.AdditionalProperties.Schema, pub.AdditionalProperties.Schema)...)
		}
	}
	return out
}

func TestGeneratedCRDsAreTheThirdPartyKindsTheProjectUses(t *testing.T) {
	assert.Equal(t, grovev1alpha1.ComputeDomainGVK, nvidiav1beta1.GroupVersion.WithKind("ComputeDomain"),
		"the local ComputeDomain types are of the kind the operator writes")
	crds := decodeCRDs(t, thirdparty.CRDs, "*/*.yaml")
	tests := []struct {
		file  string
		name  string
		gvk   schema.GroupVersionKind
		scope apiextensionsv1.ResourceScope
	}{
		{"kai/scheduling.run.ai_podgroups.yaml", "podgroups.scheduling.run.ai", kaiv2alpha2.GroupVersion.WithKind("PodGroup"), apiextensionsv1.NamespaceScoped},
		{"kai/scheduling.run.ai_queues.yaml", "queues.scheduling.run.ai", kaiv2.GroupVersion.WithKind("Queue"), apiextensionsv1.ClusterScoped},
		{"kai/kai.scheduler_topologies.yaml", "topologies.kai.scheduler", kaiv1alpha1.GroupVersion.WithKind("Topology"), apiextensionsv1.ClusterScoped},
		{"nvidia/resource.nvidia.com_computedomains.yaml", grovev1alpha1.ComputeDomainCRD, grovev1alpha1.ComputeDomainGVK, apiextensionsv1.NamespaceScoped},
	}
	var files []string
	for _, tc := range tests {
		files = append(files, tc.file)
		t.Run(tc.gvk.Kind, func(t *testing.T) {
			crd := crds[tc.file]
			require.NotNil(t, crd, "%s is generated", tc.file)
			assert.Equal(t, tc.name, crd.Name)
			assert.Equal(t, tc.gvk.Group, crd.Spec.Group)
			assert.Equal(t, tc.gvk.Kind, crd.Spec.Names.Kind)
			assert.Equal(t, tc.scope, crd.Spec.Scope)
			v := version(crd, tc.gvk.Version)
			require.NotNil(t, v, "version %s", tc.gvk.Version)
			assert.True(t, v.Served && v.Storage, "%s is served and stored", tc.gvk.Version)
		})
	}
	assert.ElementsMatch(t, files, keys(crds), "every generated third-party CRD is one the project uses")
}

func keys(m map[string]*apiextensionsv1.CustomResourceDefinition) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// The paths the project's code writes (the KAI backend, the operator's unstructured
// ComputeDomains, tests' Queues) or reads (KAI's PodGroup conditions, a ComputeDomain's status).
func TestGeneratedCRDsHoldTheFieldsTheProjectWritesAndReads(t *testing.T) {
	crds := decodeCRDs(t, thirdparty.CRDs, "*/*.yaml")
	tests := []struct {
		file, version, path, typ string
	}{
		{"kai/scheduling.run.ai_podgroups.yaml", "v2alpha2", "spec.minMember", "integer"},
		{"kai/scheduling.run.ai_podgroups.yaml", "v2alpha2", "spec.queue", "string"},
		{"kai/scheduling.run.ai_podgroups.yaml", "v2alpha2", "spec.priorityClassName", "string"},
		{"kai/scheduling.run.ai_podgroups.yaml", "v2alpha2", "spec.subGroups[].name", "string"},
		{"kai/scheduling.run.ai_podgroups.yaml", "v2alpha2", "spec.subGroups[].parent", "string"},
		{"kai/scheduling.run.ai_podgroups.yaml", "v2alpha2", "spec.subGroups[].minMember", "integer"},
		{"kai/scheduling.run.ai_podgroups.yaml", "v2alpha2", "spec.subGroups[].topologyConstraint.requiredTopologyLevel", "string"},
		{"kai/scheduling.run.ai_podgroups.yaml", "v2alpha2", "spec.topologyConstraint.topology", "string"},
		{"kai/scheduling.run.ai_podgroups.yaml", "v2alpha2", "status.conditions[].type", "string"},
		{"kai/scheduling.run.ai_queues.yaml", "v2", "spec.parentQueue", "string"},
		{"kai/scheduling.run.ai_queues.yaml", "v2", "spec.resources.gpu.quota", "number"},
		{"kai/kai.scheduler_topologies.yaml", "v1alpha1", "spec.levels[].nodeLabel", "string"},
		{"kai/kai.scheduler_topologies.yaml", "v1alpha1", "spec.levels[].alias", "string"},
		{"nvidia/resource.nvidia.com_computedomains.yaml", "v1beta1", "spec.numNodes", "integer"},
		{"nvidia/resource.nvidia.com_computedomains.yaml", "v1beta1", "spec.channel.resourceClaimTemplate.name", "string"},
		{"nvidia/resource.nvidia.com_computedomains.yaml", "v1beta1", "status.status", "string"},
	}
	for _, tc := range tests {
		t.Run(path.Base(tc.file)+"/"+tc.path, func(t *testing.T) {
			crd := crds[tc.file]
			require.NotNil(t, crd, "%s is generated", tc.file)
			v := version(crd, tc.version)
			require.NotNil(t, v, "version %s", tc.version)
			s := schemaAt(v.Schema.OpenAPIV3Schema, tc.path)
			require.NotNil(t, s, "the schema holds %s", tc.path)
			assert.Equal(t, tc.typ, s.Type)
		})
	}
}

// The comparison the upstream tier relies on must catch each way a local type can drift from
// the published CRD: here a generated CRD, changed, is compared with itself unchanged. (The
// schemas' maps are shared by the copies schemaAt returns, so changes go through them.)
func TestIncompatibilitiesReportsEachWayTheGeneratedCRDCanDrift(t *testing.T) {
	crds := decodeCRDs(t, thirdparty.CRDs, "nvidia/*.yaml")
	published := crds["nvidia/resource.nvidia.com_computedomains.yaml"]
	require.NotNil(t, published)
	spec := func(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.JSONSchemaProps {
		return schemaAt(crd.Spec.Versions[0].Schema.OpenAPIV3Schema, "spec")
	}
	tests := []struct {
		name   string
		change func(*apiextensionsv1.CustomResourceDefinition)
		want   string
	}{
		{"identical CRDs are compatible", func(*apiextensionsv1.CustomResourceDefinition) {}, ""},
		{"a renamed field", func(crd *apiextensionsv1.CustomResourceDefinition) {
			rct := spec(crd).Properties["channel"].Properties["resourceClaimTemplate"]
			rct.Properties["nmae"] = rct.Properties["name"]
			delete(rct.Properties, "name")
		}, "v1beta1 .spec.channel.resourceClaimTemplate.nmae: not in the published schema"},
		{"a field of another type", func(crd *apiextensionsv1.CustomResourceDefinition) {
			spec(crd).Properties["numNodes"] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}, `v1beta1 .spec.numNodes: type "string", published "integer"`},
		{"an enum value the published schema lacks", func(crd *apiextensionsv1.CustomResourceDefinition) {
			channel := spec(crd).Properties["channel"]
			mode := channel.Properties["allocationMode"]
			mode.Enum = append(slices.Clone(mode.Enum), apiextensionsv1.JSON{Raw: []byte(`"Some"`)})
			channel.Properties["allocationMode"] = mode
		}, `v1beta1 .spec.channel.allocationMode: enum value "Some" is not in the published enum`},
		{"a field only the generated schema requires", func(crd *apiextensionsv1.CustomResourceDefinition) {
			root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
			s := root.Properties["spec"]
			s.Required = append(slices.Clone(s.Required), "numNodes")
			root.Properties["spec"] = s
		}, "v1beta1 .spec: requires numNodes, the published schema does not"},
		{"another scope", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Scope = apiextensionsv1.ClusterScoped
		}, `scope: generated "Cluster", published "Namespaced"`},
		{"a version the published CRD does not serve", func(crd *apiextensionsv1.CustomResourceDefinition) {
			crd.Spec.Versions[0].Name = "v1"
		}, "version v1: served by the generated CRD, not by the published one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			generated := published.DeepCopy()
			tc.change(generated)
			got := incompatibilities(generated, published)
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, []string{tc.want}, got)
		})
	}
}

// The upstream tier: each CRD KAI and NVIDIA publish (the corpus) is matched by the one generated
// from the project's local types, so what the project writes means the same to the real
// schedulers and drivers as to the local cluster.
func TestGeneratedCRDsAreWireCompatibleWithThePublishedOnes(t *testing.T) {
	upstreamcorpus.Path(t, "crds") // skips the whole tier in one line without the corpus
	generated := byName(decodeCRDs(t, thirdparty.CRDs, "*/*.yaml"))
	for _, dir := range []string{"kai", "nvidia"} {
		t.Run(dir, func(t *testing.T) {
			published := decodeCRDs(t, os.DirFS(upstreamcorpus.Path(t, "crds", dir)), "*.yaml")
			for file, pub := range published {
				t.Run(file, func(t *testing.T) {
					gen := generated[pub.Name]
					require.NotNil(t, gen, "config/thirdparty/%s generates no %s", dir, pub.Name)
					assert.Empty(t, incompatibilities(gen, pub))
				})
			}
		})
	}
}
