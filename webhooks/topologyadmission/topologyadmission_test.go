package topologyadmission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends"
)

func binding(levels []grovev1alpha1.TopologyLevel, refs ...grovev1alpha1.SchedulerTopologyBinding) *grovev1alpha1.ClusterTopologyBinding {
	return &grovev1alpha1.ClusterTopologyBinding{ObjectMeta: metav1.ObjectMeta{Name: "t"},
		Spec: grovev1alpha1.ClusterTopologyBindingSpec{Levels: levels, SchedulerTopologyBindings: refs}}
}

var zoneRack = []grovev1alpha1.TopologyLevel{{Domain: "zone", Key: "topology.kubernetes.io/zone"}, {Domain: "rack", Key: "example.com/rack"}}

func TestBindingsAreRefusedAsUpstreamsTAS21Expects(t *testing.T) {
	withKAI, err := backends.Admitters(configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{{Name: configv1alpha1.SchedulerNameKAI}}})
	require.NoError(t, err)
	kubeOnly, err := backends.Admitters(configv1alpha1.SchedulerConfiguration{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		ct       *grovev1alpha1.ClusterTopologyBinding
		registry *backends.Registry[backends.Admitter]
		want     []string
	}{
		{name: "levels and an enabled topology-aware backend are valid", registry: withKAI,
			ct: binding(zoneRack, grovev1alpha1.SchedulerTopologyBinding{SchedulerName: "kai-scheduler", TopologyReference: "kai-topology"})},
		{name: "a duplicate domain is named by its element", registry: withKAI,
			ct:   binding([]grovev1alpha1.TopologyLevel{{Domain: "zone", Key: "a"}, {Domain: "zone", Key: "b"}}),
			want: []string{"spec.levels[1].domain", "Duplicate value"}},
		{name: "a duplicate key is named by its element", registry: withKAI,
			ct:   binding([]grovev1alpha1.TopologyLevel{{Domain: "zone", Key: "a"}, {Domain: "rack", Key: "a"}}),
			want: []string{"spec.levels[1].key", "Duplicate value"}},
		{name: "an unknown scheduler backend", registry: withKAI,
			ct:   binding(zoneRack, grovev1alpha1.SchedulerTopologyBinding{SchedulerName: "unknown-scheduler", TopologyReference: "topology"}),
			want: []string{"spec.schedulerTopologyBindings[0].schedulerName", "scheduler backend is not enabled in Grove"}},
		{name: "a known backend that is not enabled", registry: kubeOnly,
			ct:   binding(zoneRack, grovev1alpha1.SchedulerTopologyBinding{SchedulerName: "kai-scheduler", TopologyReference: "topology"}),
			want: []string{"spec.schedulerTopologyBindings[0].schedulerName", "scheduler backend is not enabled in Grove"}},
		{name: "kube-scheduler (upstream's default-scheduler) places by no topology", registry: withKAI,
			ct:   binding(zoneRack, grovev1alpha1.SchedulerTopologyBinding{SchedulerName: "default-scheduler", TopologyReference: "default-topology"}),
			want: []string{"spec.schedulerTopologyBindings[0].schedulerName", "scheduler backend does not implement topology-aware scheduling"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := Validate(tc.ct, nil, tc.registry)

			if tc.want == nil {
				assert.Empty(t, errs)
				return
			}
			if assert.Len(t, errs, 1) {
				for _, w := range tc.want {
					assert.Contains(t, errs[0].Error(), w)
				}
			}
		})
	}
}

func TestAStoredSchedulerBindingStaysUpdatableAfterItsBackendIsDisabled(t *testing.T) {
	kubeOnly, err := backends.Admitters(configv1alpha1.SchedulerConfiguration{})
	require.NoError(t, err)
	old := binding(zoneRack, grovev1alpha1.SchedulerTopologyBinding{SchedulerName: "kai-scheduler", TopologyReference: "kai-topology"})
	changed := old.DeepCopy()
	changed.Spec.Levels = append(changed.Spec.Levels, grovev1alpha1.TopologyLevel{Domain: "host", Key: "kubernetes.io/hostname"})

	assert.Empty(t, Validate(changed, old, kubeOnly), "the scheduler bindings did not change")
	assert.NotEmpty(t, Validate(changed, nil, kubeOnly), "the same binding is refused when created")
}
