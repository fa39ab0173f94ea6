package compatintegration

import (
	"context"
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
		{"narrowest first", []grovev1alpha1.TopologyLevel{level("host", "kubernetes.io/hostname"), level("rack", "example.com/rack")}, "levels must be ordered from the broadest domain to the narrowest"},
		{"a domain twice", []grovev1alpha1.TopologyLevel{level("rack", "a/rack"), level("rack", "b/rack")}, "each domain may appear only once"},
		{"a key twice", []grovev1alpha1.TopologyLevel{level("zone", "k"), level("rack", "k")}, "each key may appear only once"},
		{"an unknown domain", []grovev1alpha1.TopologyLevel{level("galaxy", "k")}, `spec.levels[0].domain: Unsupported value: "galaxy"`},
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
