package webhookintegration

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClusterTopologyBindingsAreRefusedAsUpstreamsTAS21Expects applies upstream's TAS-21 cases
// (operator/e2e/tests/topology_test.go) through the served webhook; each answer names the
// element and carries upstream's words. Upstream names the schedulerTopologyBindings path
// schedulerTopologyReferences (not its JSON name); this project names the field as it is spelt.
func TestClusterTopologyBindingsAreRefusedAsUpstreamsTAS21Expects(t *testing.T) {
	t.Parallel()
	const levels = `  levels:
    - {domain: zone, key: topology.kubernetes.io/zone}
    - {domain: rack, key: example.com/rack}
`
	for _, tc := range []struct {
		name, manifest string
		want           []string
	}{
		{name: "duplicate topology domains", manifest: `apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: tas21-invalid-topology}
spec:
  levels:
    - {domain: zone, key: topology.kubernetes.io/zone}
    - {domain: zone, key: example.com/rack}
`, want: []string{"spec.levels[1].domain", "Duplicate value"}},
		{name: "duplicate scheduler backend references", manifest: `apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: tas22-duplicate-backend}
spec:
` + levels + `  schedulerTopologyBindings:
    - {schedulerName: kai-scheduler, topologyReference: kai-topology-a}
    - {schedulerName: kai-scheduler, topologyReference: kai-topology-b}
`, want: []string{"spec.schedulerTopologyBindings[1]", "Duplicate value"}},
		{name: "unknown scheduler backend reference", manifest: `apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: tas22-unknown-backend}
spec:
` + levels + `  schedulerTopologyBindings:
    - {schedulerName: unknown-scheduler, topologyReference: topology}
`, want: []string{"spec.schedulerTopologyBindings[0].schedulerName", "scheduler backend is not enabled in Grove"}},
		{name: "non topology aware scheduler backend reference", manifest: `apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: tas22-non-tas-backend}
spec:
` + levels + `  schedulerTopologyBindings:
    - {schedulerName: default-scheduler, topologyReference: default-topology}
`, want: []string{"spec.schedulerTopologyBindings[0].schedulerName", "scheduler backend does not implement topology-aware scheduling"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := kubectlApply(t, "", tc.manifest)
			require.Error(t, err, out)
			for _, w := range tc.want {
				assert.Contains(t, out, w)
			}
		})
	}
	t.Run("an enabled topology-aware backend is accepted", func(t *testing.T) {
		out, err := kubectlApply(t, "", `apiVersion: grove.io/v1alpha1
kind: ClusterTopologyBinding
metadata: {name: tas21-valid}
spec:
`+levels+`  schedulerTopologyBindings:
    - {schedulerName: kai-scheduler, topologyReference: kai-topology}
`)
		require.NoError(t, err, out)
	})
}
