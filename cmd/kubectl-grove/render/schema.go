package render

import (
	"context"
	"fmt"
	"io/fs"
	"sort"
	"sync"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celadmission "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/yaml"

	"github.com/kubegrove/grove/config/crd"
)

// schemaDefaults applies the project's CRD schemas as the API server does to every object it
// stores: their defaults (a container port's protocol, for one: what the operator builds from a
// stored PodCliqueSet, and the hashes it computes, depend on them) and their validation (OpenAPI
// rules and CEL x-kubernetes-validations), so a value only the schema refuses is refused here too.
type schemaDefaults map[schema.GroupVersionKind]*crdSchema

type crdSchema struct {
	structural *structuralschema.Structural
	openAPI    validation.SchemaValidator
	cel        *cel.Validator
}

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
			openAPI, _, err := validation.NewSchemaValidator(internal)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out[schema.GroupVersionKind{Group: def.Spec.Group, Version: v.Name, Kind: def.Spec.Names.Kind}] = &crdSchema{
				structural: s, openAPI: openAPI, cel: cel.NewValidator(s, true, celadmission.PerCallLimit),
			}
		}
	}
	return out, nil
}

// apply defaults obj in place as the API server would on create, then validates it against the
// schema; kinds without a schema here (Kubernetes' own, whose defaults need no rendering) are left
// alone.
func (d schemaDefaults) apply(obj client.Object) (field.ErrorList, error) {
	gvk, err := apiutil.GVKForObject(obj, schemeForKinds)
	if err != nil {
		return nil, err
	}
	s := d[gvk]
	if s == nil {
		return nil, nil
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	structuraldefaulting.Default(u, s.structural)
	// What the server fills in itself is not the user's to validate.
	u["apiVersion"], u["kind"] = gvk.GroupVersion().String(), gvk.Kind
	unstructured.RemoveNestedField(u, "metadata", "creationTimestamp")
	delete(u, "status")
	errs := validation.ValidateCustomResource(nil, u, s.openAPI)
	celErrs, _ := s.cel.Validate(context.Background(), nil, s.structural, u, nil, celadmission.RuntimeCELCostBudget)
	errs = append(errs, celErrs...)
	// The schema validator walks properties in map order: sorted by field, a refusal reads the
	// same on every run.
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	return errs, runtime.DefaultUnstructuredConverter.FromUnstructured(u, obj)
}
