package coherent

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// podCliqueSetCRD is the CustomResourceDefinition NVIDIA Dynamo reads.
const podCliqueSetCRD = "podcliquesets.grove.io"

// updateStrategiesServed is NVIDIA Dynamo's probe of the installed Grove, written here from its
// description: read CRD podcliquesets.grove.io, take its served v1alpha1 version, and walk the
// openAPIV3Schema's properties spec → updateStrategy → type to its enum. Dynamo uses the Coherent
// strategy iff the enum lists Coherent.
func updateStrategiesServed(ctx context.Context, cs apiextensionsclientset.Interface) ([]string, error) {
	crd, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, podCliqueSetCRD, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, v := range crd.Spec.Versions {
		if v.Name != grovev1alpha1.GroupVersion.Version || !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		typ := v.Schema.OpenAPIV3Schema.Properties["spec"].Properties["updateStrategy"].Properties["type"]
		for _, e := range typ.Enum {
			var s string
			if err := json.Unmarshal(e.Raw, &s); err == nil {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// TestDynamoSeesCoherentInTheInstalledCRD runs Dynamo's probe against the API server: the served
// v1alpha1 schema of podcliquesets.grove.io lists Coherent (beside RollingRecreate and OnDelete)
// in spec.updateStrategy.type's enum. What Dynamo then does is create a PodCliqueSet with the
// Coherent strategy, which must be admitted (a server-side dry run, through every webhook).
func TestDynamoSeesCoherentInTheInstalledCRD(t *testing.T) {
	ctx := context.Background()
	cs, err := apiextensionsclientset.NewForConfig(cluster.Current.RESTConfig())
	require.NoError(t, err)
	served, err := updateStrategiesServed(ctx, cs)
	require.NoError(t, err)
	for _, s := range []grovev1alpha1.UpdateStrategyType{grovev1alpha1.CoherentStrategy, grovev1alpha1.RollingRecreateStrategy, grovev1alpha1.OnDeleteStrategy} {
		assert.Contains(t, served, string(s), "the served schema's spec.updateStrategy.type enum")
	}

	ns := cluster.Current.NewNamespace(t)
	pcs := disaggregated(ns, "dynamo", 1)
	assert.NoError(t, k8s().Create(ctx, pcs, client.DryRunAll), "a Coherent PodCliqueSet is admitted")
}
