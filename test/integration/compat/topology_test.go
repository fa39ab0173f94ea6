package compatintegration

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

func TestClusterTopologyBindingLevelsAreValidatedByTheAPIServer(t *testing.T) {
	t.Parallel()
	level := func(domain, key string) grovev1alpha1.TopologyLevel {
		return grovev1alpha1.TopologyLevel{Domain: grovev1alpha1.TopologyDomain(domain), Key: key}
	}
	cases := []struct {
		name   string
		levels []grovev1alpha1.TopologyLevel
		want   string // empty: accepted
	}{
		{"broadest first", []grovev1alpha1.TopologyLevel{level("zone", "topology.kubernetes.io/zone"), level("rack", "example.com/rack"), level("host", "kubernetes.io/hostname")}, ""},
		{"free-form domains in the order listed, as upstream Grove takes them", []grovev1alpha1.TopologyLevel{level("nvl-domain", "nvidia.com/gpu.clique"), level("host", "kubernetes.io/hostname"), level("rack", "example.com/rack")}, ""},
		{"eight levels", []grovev1alpha1.TopologyLevel{level("region", "k/1"), level("zone", "k/2"), level("datacenter", "k/3"), level("block", "k/4"), level("rack", "k/5"), level("nvl", "k/6"), level("host", "k/7"), level("numa", "k/8")}, ""},
		{"a domain that starts with a digit", []grovev1alpha1.TopologyLevel{level("1rack", "k")}, `spec.levels[0].domain: Invalid value: "1rack": spec.levels[0].domain in body should match '^[a-z][a-z0-9-]*$'`},
		{"a domain with capitals", []grovev1alpha1.TopologyLevel{level("Rack", "k")}, `spec.levels[0].domain`},
		{"a domain longer than 63 characters", []grovev1alpha1.TopologyLevel{level("r"+strings.Repeat("a", 63), "k")}, `spec.levels[0].domain: Too long`},
		{"no levels", nil, "spec.levels"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct := &grovev1alpha1.ClusterTopologyBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "topology"},
				Spec:       grovev1alpha1.ClusterTopologyBindingSpec{Levels: tc.levels},
			}
			err := dryRun(context.Background(), ct)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
