package backends

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

func profile(name configv1alpha1.SchedulerName, isDefault bool, config string) configv1alpha1.SchedulerProfile {
	p := configv1alpha1.SchedulerProfile{Name: name, Default: isDefault}
	if config != "" {
		p.Config = &runtime.RawExtension{Raw: []byte(config)}
	}
	return p
}

func registry(t *testing.T, profiles ...configv1alpha1.SchedulerProfile) *Registry[Syncer] {
	t.Helper()
	r, err := Syncers(configv1alpha1.SchedulerConfiguration{Profiles: profiles}, nil)
	require.NoError(t, err)
	return r
}

func enabledNames[T Backend](r *Registry[T]) []configv1alpha1.SchedulerName {
	var out []configv1alpha1.SchedulerName
	for _, b := range r.Enabled() {
		out = append(out, b.Name())
	}
	return out
}

func TestARegistryPicksEnabledBackendsAndDefault(t *testing.T) {
	cases := []struct {
		name        string
		profiles    []configv1alpha1.SchedulerProfile
		wantEnabled []configv1alpha1.SchedulerName
		wantDefault configv1alpha1.SchedulerName
	}{
		{
			name:        "no profiles: only kube-scheduler, and it is the default",
			wantEnabled: []configv1alpha1.SchedulerName{configv1alpha1.SchedulerNameKube},
			wantDefault: configv1alpha1.SchedulerNameKube,
		},
		{
			name:        "KAI marked default: kube-scheduler still enabled, KAI the default",
			profiles:    []configv1alpha1.SchedulerProfile{profile(configv1alpha1.SchedulerNameKAI, true, "")},
			wantEnabled: []configv1alpha1.SchedulerName{configv1alpha1.SchedulerNameKube, configv1alpha1.SchedulerNameKAI},
			wantDefault: configv1alpha1.SchedulerNameKAI,
		},
		{
			name: "profiles without a default: kube-scheduler is the default",
			profiles: []configv1alpha1.SchedulerProfile{
				profile(configv1alpha1.SchedulerNameKAI, false, ""),
				profile(configv1alpha1.SchedulerNamePlugins, false, ""),
			},
			wantEnabled: []configv1alpha1.SchedulerName{
				configv1alpha1.SchedulerNameKube, configv1alpha1.SchedulerNameKAI, configv1alpha1.SchedulerNamePlugins,
			},
			wantDefault: configv1alpha1.SchedulerNameKube,
		},
		{
			name: "kube-scheduler listed after another profile is still enabled once and first",
			profiles: []configv1alpha1.SchedulerProfile{
				profile(configv1alpha1.SchedulerNamePlugins, true, ""),
				profile(configv1alpha1.SchedulerNameKube, false, `{"gangScheduling":true}`),
			},
			wantEnabled: []configv1alpha1.SchedulerName{configv1alpha1.SchedulerNameKube, configv1alpha1.SchedulerNamePlugins},
			wantDefault: configv1alpha1.SchedulerNamePlugins,
		},
		{
			name:        "kube-scheduler marked default explicitly",
			profiles:    []configv1alpha1.SchedulerProfile{profile(configv1alpha1.SchedulerNameKube, true, ""), profile(configv1alpha1.SchedulerNameKAI, false, "")},
			wantEnabled: []configv1alpha1.SchedulerName{configv1alpha1.SchedulerNameKube, configv1alpha1.SchedulerNameKAI},
			wantDefault: configv1alpha1.SchedulerNameKube,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := registry(t, tc.profiles...)

			assert.Equal(t, tc.wantEnabled, enabledNames(r))
			require.NotNil(t, r.Default())
			assert.Equal(t, tc.wantDefault, r.Default().Name())
			for _, name := range tc.wantEnabled {
				require.NotNil(t, r.Get(name), "Get(%s)", name)
				assert.Equal(t, name, r.Get(name).Name())
			}
		})
	}
}

func TestARegistryLeavesUnprofiledBackendsDisabled(t *testing.T) {
	r := registry(t)

	assert.Nil(t, r.Get(configv1alpha1.SchedulerNameKAI))
	assert.Nil(t, r.Get(configv1alpha1.SchedulerNamePlugins))
	assert.Equal(t, []string{corev1.DefaultSchedulerName}, r.PodSchedulerNames())
}

func TestARegistryRejectsInvalidProfiles(t *testing.T) {
	cases := []struct {
		name         string
		profiles     []configv1alpha1.SchedulerProfile
		wantContains []string
	}{
		{
			name: "two defaults name both profiles",
			profiles: []configv1alpha1.SchedulerProfile{
				profile(configv1alpha1.SchedulerNameKAI, true, ""),
				profile(configv1alpha1.SchedulerNameKube, true, ""),
			},
			wantContains: []string{"scheduler.profiles[0].default", "scheduler.profiles[1].default"},
		},
		{
			name:         "unknown backend name",
			profiles:     []configv1alpha1.SchedulerProfile{profile("yunikorn", false, "")},
			wantContains: []string{"scheduler.profiles[0].name", "yunikorn"},
		},
		{
			name: "unknown field in a profile's config",
			profiles: []configv1alpha1.SchedulerProfile{
				profile(configv1alpha1.SchedulerNameKube, false, ""),
				profile(configv1alpha1.SchedulerNameKAI, true, `{"defaultQueue":"q","queueName":"q"}`),
			},
			wantContains: []string{"scheduler.profiles[1].config", "queueName"},
		},
		{
			name:         "mistyped field in a profile's config",
			profiles:     []configv1alpha1.SchedulerProfile{profile(configv1alpha1.SchedulerNameKube, false, `{"gangScheduling":"yes"}`)},
			wantContains: []string{"scheduler.profiles[0].config"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Syncers(configv1alpha1.SchedulerConfiguration{Profiles: tc.profiles}, nil)

			require.Error(t, err)
			assert.Nil(t, r)
			for _, s := range tc.wantContains {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestARegistryGivesEachBackendItsProfileConfig(t *testing.T) {
	r := registry(t,
		profile(configv1alpha1.SchedulerNameKube, false, `{"gangScheduling":true}`),
		profile(configv1alpha1.SchedulerNamePlugins, false, `{"schedulerName":"my-coscheduler"}`),
	)

	// Only gang mode owns Workload API objects.
	assert.Len(t, r.Get(configv1alpha1.SchedulerNameKube).OwnedTypes(), 2)
	assert.Equal(t, "my-coscheduler", r.Get(configv1alpha1.SchedulerNamePlugins).PodSchedulerName())
	assert.Equal(t, []string{corev1.DefaultSchedulerName, "my-coscheduler"}, r.PodSchedulerNames())

	plain := registry(t)
	assert.Empty(t, plain.Get(configv1alpha1.SchedulerNameKube).OwnedTypes())
}

func TestForPodSchedulerResolvesEnabledBackendsBySchedulerName(t *testing.T) {
	r := registry(t,
		profile(configv1alpha1.SchedulerNameKAI, true, ""),
		profile(configv1alpha1.SchedulerNamePlugins, false, `{"schedulerName":"my-coscheduler"}`),
	)
	cases := []struct {
		schedulerName string
		want          configv1alpha1.SchedulerName // "" means nil
	}{
		{"", configv1alpha1.SchedulerNameKAI},
		{"default-scheduler", configv1alpha1.SchedulerNameKube},
		{"kai-scheduler", configv1alpha1.SchedulerNameKAI},
		{"my-coscheduler", configv1alpha1.SchedulerNamePlugins},
		// The plugins backend's pods carry the configured name, not the default one.
		{configv1alpha1.DefaultSchedulerPluginsSchedulerName, ""},
		{"volcano", ""},
	}
	for _, tc := range cases {
		t.Run("schedulerName "+tc.schedulerName, func(t *testing.T) {
			got := r.ForPodScheduler(tc.schedulerName)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got.Name())
		})
	}
}

func TestForPodSchedulerGivesNilForADisabledBackend(t *testing.T) {
	r := registry(t)

	assert.Nil(t, r.ForPodScheduler("kai-scheduler"))
	assert.Nil(t, r.ForPodScheduler(configv1alpha1.DefaultSchedulerPluginsSchedulerName))
	require.NotNil(t, r.ForPodScheduler(""))
	assert.Equal(t, configv1alpha1.SchedulerNameKube, r.ForPodScheduler("").Name())
}

func TestForPodSchedulerUsesDefaultPluginsSchedulerNameWithoutConfig(t *testing.T) {
	r := registry(t, profile(configv1alpha1.SchedulerNamePlugins, false, ""))

	got := r.ForPodScheduler("scheduler-plugins-scheduler")
	require.NotNil(t, got)
	assert.Equal(t, configv1alpha1.SchedulerNamePlugins, got.Name())
}

func pcsWithSchedulers(names ...string) *grovev1alpha1.PodCliqueSet {
	pcs := &grovev1alpha1.PodCliqueSet{}
	for i, n := range names {
		if n == "<nil>" {
			pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, nil)
			continue
		}
		c := &grovev1alpha1.PodCliqueTemplateSpec{Name: string(rune('a' + i))}
		c.Spec.PodSpec.SchedulerName = n
		pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, c)
	}
	return pcs
}

func TestForPodCliqueSetUsesFirstCliqueSchedulerNameElseDefault(t *testing.T) {
	r := registry(t,
		profile(configv1alpha1.SchedulerNameKAI, true, ""),
		profile(configv1alpha1.SchedulerNamePlugins, false, `{"schedulerName":"my-coscheduler"}`),
	)
	cases := []struct {
		name string
		pcs  *grovev1alpha1.PodCliqueSet
		want configv1alpha1.SchedulerName // "" means nil
	}{
		{"no cliques", pcsWithSchedulers(), configv1alpha1.SchedulerNameKAI},
		{"no clique names a scheduler", pcsWithSchedulers("", ""), configv1alpha1.SchedulerNameKAI},
		{"first clique names kube-scheduler", pcsWithSchedulers("default-scheduler", "kai-scheduler"), configv1alpha1.SchedulerNameKube},
		{"first naming clique wins after unnamed and nil ones", pcsWithSchedulers("<nil>", "", "my-coscheduler"), configv1alpha1.SchedulerNamePlugins},
		{"named scheduler not enabled", pcsWithSchedulers("volcano"), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := r.ForPodCliqueSet(tc.pcs)
			if tc.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tc.want, got.Name())
		})
	}
}

func TestKnownPodSchedulerKnowsEachBackendsDefaultSchedulerName(t *testing.T) {
	cases := []struct {
		schedulerName string
		want          configv1alpha1.SchedulerName
		ok            bool
	}{
		{"default-scheduler", configv1alpha1.SchedulerNameKube, true},
		{"kai-scheduler", configv1alpha1.SchedulerNameKAI, true},
		{"scheduler-plugins-scheduler", configv1alpha1.SchedulerNamePlugins, true},
		{"my-coscheduler", "", false},
		{"", "", false},
	}
	for _, tc := range cases {
		t.Run("schedulerName "+tc.schedulerName, func(t *testing.T) {
			got, ok := KnownPodScheduler(tc.schedulerName)
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestEachBinaryGetsItsShareOfTheSameBackends(t *testing.T) {
	cfg := configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{
		profile(configv1alpha1.SchedulerNameKube, false, `{"gangScheduling":true}`),
		profile(configv1alpha1.SchedulerNameKAI, true, ""),
		profile(configv1alpha1.SchedulerNameVolcano, false, ""),
	}}
	preparers, err := PodPreparers(cfg)
	require.NoError(t, err)
	admitters, err := Admitters(cfg)
	require.NoError(t, err)
	syncers, err := Syncers(cfg, nil)
	require.NoError(t, err)
	renderers, err := Renderers(cfg, false)
	require.NoError(t, err)

	want := []configv1alpha1.SchedulerName{configv1alpha1.SchedulerNameKube, configv1alpha1.SchedulerNameKAI, configv1alpha1.SchedulerNameVolcano}
	assert.Equal(t, want, enabledNames(preparers))
	assert.Equal(t, want, enabledNames(admitters))
	assert.Equal(t, want, enabledNames(syncers))
	assert.Equal(t, want, enabledNames(renderers))
	for _, def := range []Backend{preparers.Default(), admitters.Default(), syncers.Default(), renderers.Default()} {
		assert.Equal(t, configv1alpha1.SchedulerNameKAI, def.Name(), "every share has the same default")
	}
	assert.True(t, admitters.Get(configv1alpha1.SchedulerNameKAI).KeepsTopology(), "KAI keeps a topology object of its own")
	_, syncsTopology := syncers.Get(configv1alpha1.SchedulerNameKAI).(TopologySyncer)
	assert.True(t, syncsTopology, "and its Syncer keeps it")
	for _, name := range []configv1alpha1.SchedulerName{configv1alpha1.SchedulerNameKube, configv1alpha1.SchedulerNameVolcano} {
		assert.False(t, admitters.Get(name).KeepsTopology(), name)
		_, syncsTopology := syncers.Get(name).(TopologySyncer)
		assert.False(t, syncsTopology, name)
	}
}

func TestRenderersBuildKubeGangsFlatOrCompositeAsAsked(t *testing.T) {
	cfg := configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{
		profile(configv1alpha1.SchedulerNameKube, true, `{"gangScheduling":true}`),
	}}
	pg := &schedulerv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g"}, Spec: schedulerv1alpha1.PodGangSpec{
		PodGroups: []schedulerv1alpha1.PodGroup{{Name: "g-a", MinReplicas: 1}, {Name: "g-b", MinReplicas: 2}}}}
	kinds := func(composite bool) []string {
		r, err := Renderers(cfg, composite)
		require.NoError(t, err)
		objs, err := r.Default().BuildObjects(pg, nil)
		require.NoError(t, err)
		var out []string
		for _, o := range objs {
			out = append(out, fmt.Sprintf("%T", o))
		}
		return out
	}
	assert.NotContains(t, kinds(false), "*v1alpha3.CompositePodGroup", "flat: one PodGroup for the gang")
	assert.Contains(t, kinds(true), "*v1alpha3.CompositePodGroup", "composite: the gang is a CompositePodGroup")
}
