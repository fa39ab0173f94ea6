package podcliqueset

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// FuzzDefaultAndValidate feeds arbitrary PodCliqueSets through admission: nothing panics,
// defaulting is idempotent, and defaulting never turns a valid object into an invalid one.
func FuzzDefaultAndValidate(f *testing.F) {
	seed, err := json.Marshal(valid())
	require.NoError(f, err)
	f.Add(seed, false)
	f.Add([]byte(`{"spec":{"replicas":3,"workloadType":"Training","template":{"cliques":[{"name":"a","spec":{"replicas":2,"startsAfter":["a"]}}],"podCliqueScalingGroups":[{"name":"g","cliqueNames":["a","b"]}]}}}`), true)
	f.Add([]byte(`{"spec":{"template":{"cliqueStartupType":"CliqueStartupTypeExplicit","cliques":[{"name":"x","spec":{"startsAfter":["y"]}},{"name":"y","spec":{"startsAfter":["x"]}}]}}}`), false)
	f.Fuzz(func(t *testing.T, data []byte, kai bool) {
		pcs := &grovev1alpha1.PodCliqueSet{}
		if json.Unmarshal(data, pcs) != nil {
			return
		}
		scheduler := kubeOnly
		if kai {
			scheduler = kaiDefault()
		}
		validBefore := len(ValidateCreate(pcs, scheduler)) == 0
		Default(pcs, scheduler)
		once := pcs.DeepCopy()
		Default(pcs, scheduler)
		require.Equal(t, once, pcs, "defaulting is idempotent")
		errs := ValidateCreate(pcs, scheduler)
		if validBefore {
			require.Empty(t, errs, "defaulting kept a valid object valid")
		}
		_ = ValidateImmutable(once, pcs)
	})
}
