package pcsadmission

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// FuzzDefaultAndValidate feeds arbitrary PodCliqueSets through admission: nothing panics,
// defaulting is idempotent, and defaulting never turns a valid object into an invalid one —
// with topology-aware scheduling off, on without the binding, and on with a binding of every
// domain.
func FuzzDefaultAndValidate(f *testing.F) {
	seed, err := json.Marshal(valid())
	require.NoError(f, err)
	f.Add(seed, false)
	f.Add([]byte(`{"spec":{"replicas":3,"workloadType":"Training","template":{"cliques":[{"name":"a","spec":{"replicas":2,"startsAfter":["a"]}}],"podCliqueScalingGroups":[{"name":"g","cliqueNames":["a","b"]}]}}}`), true)
	f.Add([]byte(`{"spec":{"template":{"cliqueStartupType":"CliqueStartupTypeExplicit","cliques":[{"name":"x","spec":{"startsAfter":["y"]}},{"name":"y","spec":{"startsAfter":["x"]}}]}}}`), false)
	f.Add([]byte(`{"spec":{"template":{"topologyConstraint":{"topologyName":"t","pack":{"required":"block","preferred":"rack"}},"podCliqueScalingGroups":[{"name":"g","cliqueNames":["a"],"topologyConstraint":{"pack":{"required":"zone"}}}],"cliques":[{"name":"a","topologyConstraint":{"topologyName":"u","pack":{"preferred":"gpu"}},"spec":{"roleName":"a","replicas":1}}]}}}`), true)
	everyDomain := &grovev1alpha1.ClusterTopologyBindingSpec{}
	for _, d := range grovev1alpha1.TopologyDomainOrder {
		everyDomain.Levels = append(everyDomain.Levels, grovev1alpha1.TopologyLevel{Domain: d, Key: "example.com/" + string(d)})
	}
	topologies := []Topology{{}, {Enabled: true}, {Enabled: true, Binding: everyDomain}}
	f.Fuzz(func(t *testing.T, data []byte, kai bool) {
		pcs := &grovev1alpha1.PodCliqueSet{}
		if json.Unmarshal(data, pcs) != nil {
			return
		}
		scheduler := kubeOnly
		if kai {
			scheduler = kaiDefault()
		}
		validBefore := make([]bool, len(topologies))
		for i, topology := range topologies {
			errs, warnings := ValidateCreate(pcs, scheduler, topology)
			validBefore[i] = len(errs) == 0
			if !topology.Enabled || topology.Binding != nil {
				require.Empty(t, warnings, "only a missing binding warns")
			}
		}
		Default(pcs, scheduler)
		once := pcs.DeepCopy()
		Default(pcs, scheduler)
		require.Equal(t, once, pcs, "defaulting is idempotent")
		for i, topology := range topologies {
			errs, _ := ValidateCreate(pcs, scheduler, topology)
			if validBefore[i] {
				require.Empty(t, errs, "defaulting kept a valid object valid")
			}
		}
		_ = ValidateImmutable(once, pcs)
	})
}
