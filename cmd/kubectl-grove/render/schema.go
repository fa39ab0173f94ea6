package render

import (
	"fmt"
	"io/fs"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/kubegrove/grove/config/crd"
)

// schemaDefaults applies the defaults of the project's CRD schemas, as the API server does to
// every object it stores (a container port's protocol, for one): what the operator builds from a
// stored PodCliqueSet, and the hashes it computes, depend on them.
type schemaDefaults map[schema.GroupVersionKind]*structuralschema.Structural

// loadSchemaDefaults parses the embedded CRDs once per process: they are large, and fixed.
var loadSchemaDefaults = sync.OnceValues(parseSchemaDefaults)

func parseSchemaDefaults() (schemaDefaults, error) {
	out := schemaDefaults{}
	files, err := fs.Glob(crd.Bases, "bases/*.yaml")
	if err != nil {
		return nil, err
	}
	for _, f := range files {
		data, err := crd.Bases.ReadFile(f)
		if err != nil {
			return nil, err
		}
		def := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, def); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, v := range def.Spec.Versions {
			if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
				continue
			}
			internal := &apiextensionsinternal.JSONSchemaProps{}
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			s, err := structuralschema.NewStructural(internal)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out[schema.GroupVersionKind{Group: def.Spec.Group, Version: v.Name, Kind: def.Spec.Names.Kind}] = s
		}
	}
	return out, nil
}

// apply defaults obj in place as the API server would on create; kinds without a schema here
// (Kubernetes' own, whose defaults need no rendering) are left alone.
func (d schemaDefaults) apply(obj client.Object) error {
	gvk, err := apiutil.GVKForObject(obj, schemeForKinds)
	if err != nil {
		return err
	}
	s := d[gvk]
	if s == nil {
		return nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return err
	}
	structuraldefaulting.Default(u, s)
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj)
}
