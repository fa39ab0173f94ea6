package plugins

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

var cfg = configv1alpha1.SchedulerPluginsConfig{SchedulerName: "my-coscheduler", ScheduleTimeoutSeconds: ptr.To[int32](90)}

func requests(cpu, memory, gpu string) corev1.ResourceRequirements {
	r := corev1.ResourceList{}
	if cpu != "" {
		r[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		r[corev1.ResourceMemory] = resource.MustParse(memory)
	}
	if gpu != "" {
		r["nvidia.com/gpu"] = resource.MustParse(gpu)
	}
	return corev1.ResourceRequirements{Requests: r}
}

// leaderSpec's containers ask for 1500m cpu, 1536Mi memory and a GPU, but its init container
// asks for more cpu and memory: a pod of it needs 2 cpu, 4Gi and a GPU.
func leaderSpec() corev1.PodSpec {
	return corev1.PodSpec{
		InitContainers: []corev1.Container{{Name: "init", Image: "i", Resources: requests("2", "4Gi", "")}},
		Containers: []corev1.Container{
			{Name: "main", Image: "i", Resources: requests("1", "1Gi", "1")},
			{Name: "sidecar", Image: "i", Resources: requests("500m", "512Mi", "")},
		},
	}
}

// workerSpec's pods need 250m cpu and 256Mi memory.
func workerSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "i", Resources: requests("250m", "256Mi", "")}}}
}

// podGang carries each group's per-pod requests as the operator writes them.
func podGang() *schedulerv1alpha1.PodGang {
	perPod := func(spec corev1.PodSpec) corev1.ResourceList {
		return resourcehelper.PodRequests(&corev1.Pod{Spec: spec}, resourcehelper.PodResourcesOptions{})
	}
	return &schedulerv1alpha1.PodGang{
		ObjectMeta: metav1.ObjectMeta{Name: "inf-0", Namespace: "ns", UID: types.UID("pg-uid")},
		Spec: schedulerv1alpha1.PodGangSpec{PodGroups: []schedulerv1alpha1.PodGroup{
			{Name: "inf-0-leader", MinReplicas: 2, PodResourceRequests: perPod(leaderSpec())},
			{Name: "inf-0-worker", MinReplicas: 3, PodResourceRequests: perPod(workerSpec())},
		}},
	}
}

// wantPodGroup: 2 leaders (2 cpu, 4Gi, 1 GPU each) and 3 workers (250m, 256Mi each).
func wantPodGroup() *schedv1alpha1.PodGroup {
	return &schedv1alpha1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "inf-0", Namespace: "ns", Labels: map[string]string{
			"app.kubernetes.io/managed-by": "backend-controller", "grove.io/podgang": "inf-0",
		}},
		Spec: schedv1alpha1.PodGroupSpec{
			MinMember: 5,
			MinResources: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("4750m"),
				corev1.ResourceMemory: resource.MustParse("8960Mi"),
				"nvidia.com/gpu":      resource.MustParse("2"),
			},
			ScheduleTimeoutSeconds: ptr.To[int32](90),
		},
	}
}

// requireSemanticEqual compares quantities by value, not by their internal representation.
func requireSemanticEqual(t *testing.T, want, got any) {
	t.Helper()
	if !equality.Semantic.DeepEqual(want, got) {
		require.Equal(t, want, got)
		require.Fail(t, "not semantically equal", "want %#v\ngot  %#v", want, got)
	}
}

func TestBuildPodGroupSumsPerPodRequestsTimesMinReplicas(t *testing.T) {
	got := New(cfg, nil).BuildPodGroup(podGang())

	requireSemanticEqual(t, wantPodGroup(), got)
}

func TestBuildPodGroupCountsNoResourcesForAGroupThatRequestsNone(t *testing.T) {
	pg := podGang()
	pg.Spec.PodGroups[0].PodResourceRequests = nil

	got := New(configv1alpha1.SchedulerPluginsConfig{}, nil).BuildPodGroup(pg)

	assert.Equal(t, int32(5), got.Spec.MinMember, "minMember still counts every group")
	assert.Nil(t, got.Spec.ScheduleTimeoutSeconds)
	requireSemanticEqual(t, corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("750m"),
		corev1.ResourceMemory: resource.MustParse("768Mi"),
	}, got.Spec.MinResources)

	pg.Spec.PodGroups[1].PodResourceRequests = nil
	none := New(cfg, nil).BuildPodGroup(pg)
	assert.Nil(t, none.Spec.MinResources)
}

func defaultedConfig(t *testing.T, raw string) configv1alpha1.SchedulerPluginsConfig {
	t.Helper()
	p := configv1alpha1.SchedulerProfile{Name: configv1alpha1.SchedulerNamePlugins}
	if raw != "" {
		p.Config = &runtime.RawExtension{Raw: []byte(raw)}
	}
	c, err := configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{p}}.BackendConfig(configv1alpha1.SchedulerNamePlugins)
	require.NoError(t, err)
	return *c.(*configv1alpha1.SchedulerPluginsConfig)
}

func TestPreparePod(t *testing.T) {
	cases := []struct {
		name              string
		config            string
		schedulerName     string
		labels            map[string]string
		wantSchedulerName string
		wantLabels        map[string]string
	}{
		{
			name:              "default schedulerName and the pod's PodGroup",
			labels:            map[string]string{"grove.io/podgang": "inf-0"},
			wantSchedulerName: "scheduler-plugins-scheduler",
			wantLabels:        map[string]string{"grove.io/podgang": "inf-0", "scheduling.x-k8s.io/pod-group": "inf-0"},
		},
		{
			name:              "configured schedulerName",
			config:            `{"schedulerName":"my-coscheduler"}`,
			labels:            map[string]string{"grove.io/podgang": "inf-1"},
			wantSchedulerName: "my-coscheduler",
			wantLabels:        map[string]string{"grove.io/podgang": "inf-1", "scheduling.x-k8s.io/pod-group": "inf-1"},
		},
		{
			name:              "existing schedulerName is kept",
			config:            `{"schedulerName":"my-coscheduler"}`,
			schedulerName:     "other",
			labels:            map[string]string{"grove.io/podgang": "inf-0"},
			wantSchedulerName: "other",
			wantLabels:        map[string]string{"grove.io/podgang": "inf-0", "scheduling.x-k8s.io/pod-group": "inf-0"},
		},
		{
			name:              "no podgang label, no pod-group label",
			wantSchedulerName: "scheduler-plugins-scheduler",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}, Spec: corev1.PodSpec{SchedulerName: tc.schedulerName}}

			New(defaultedConfig(t, tc.config), nil).PreparePod(pod)

			assert.Equal(t, tc.wantSchedulerName, pod.Spec.SchedulerName)
			assert.Equal(t, tc.wantLabels, pod.Labels)
		})
	}
}

func pack(required, preferred string) *grovev1alpha1.TopologyConstraint {
	return &grovev1alpha1.TopologyConstraint{Pack: &grovev1alpha1.TopologyPackConstraint{
		Required: grovev1alpha1.TopologyDomain(required), Preferred: grovev1alpha1.TopologyDomain(preferred),
	}}
}

func pcs(pcsTC, sgTC, clique1TC *grovev1alpha1.TopologyConstraint) *grovev1alpha1.PodCliqueSet {
	return &grovev1alpha1.PodCliqueSet{Spec: grovev1alpha1.PodCliqueSetSpec{Template: grovev1alpha1.PodCliqueSetTemplateSpec{
		TopologyConstraint: pcsTC,
		Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{
			{Name: "leader", Spec: grovev1alpha1.PodCliqueSpec{Replicas: 1}},
			{Name: "worker", Spec: grovev1alpha1.PodCliqueSpec{Replicas: 2}, TopologyConstraint: clique1TC},
		},
		PodCliqueScalingGroupConfigs: []grovev1alpha1.PodCliqueScalingGroupConfig{
			{Name: "sg", CliqueNames: []string{"leader", "worker"}, TopologyConstraint: sgTC},
		},
	}}}
}

func TestValidatePodCliqueSetRejectsEveryRequiredConstraint(t *testing.T) {
	cases := []struct {
		name string
		pcs  *grovev1alpha1.PodCliqueSet
		want []string
	}{
		{"none", pcs(nil, nil, nil), nil},
		{"preferred only", pcs(pack("", "zone"), pack("", "rack"), pack("", "host")), nil},
		{"PodCliqueSet level", pcs(pack("zone", ""), nil, nil), []string{"spec.template.topologyConstraint.pack.required"}},
		{"scaling-group level", pcs(nil, pack("rack", "host"), nil), []string{"spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required"}},
		{"clique level", pcs(nil, nil, pack("host", "")), []string{"spec.template.cliques[1].topologyConstraint.pack.required"}},
		{"every level", pcs(pack("zone", ""), pack("zone", ""), pack("zone", "")), []string{
			"spec.template.topologyConstraint.pack.required",
			"spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required",
			"spec.template.cliques[1].topologyConstraint.pack.required",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := New(cfg, nil).ValidatePodCliqueSet(tc.pcs)

			var paths []string
			for _, e := range errs {
				assert.Equal(t, field.ErrorTypeInvalid, e.Type)
				paths = append(paths, e.Field)
			}
			assert.Equal(t, tc.want, paths)
		})
	}
}

func TestNotHonouredListsPreferredConstraints(t *testing.T) {
	assert.Empty(t, New(cfg, nil).NotHonoured(pcs(pack("zone", ""), nil, nil), nil), "a gang of several pods is honoured")

	got := New(cfg, nil).NotHonoured(pcs(pack("", "zone"), nil, pack("", "host")), nil)

	require.Len(t, got, 2)
	assert.Contains(t, got[0], "spec.template.topologyConstraint.pack.preferred")
	assert.Contains(t, got[0], `"zone"`)
	assert.Contains(t, got[1], "spec.template.cliques[1].topologyConstraint.pack.preferred")
	assert.Contains(t, got[1], `"host"`)
}

func TestNamesAndOwnedTypes(t *testing.T) {
	b := New(cfg, nil)
	assert.Equal(t, configv1alpha1.SchedulerName("scheduler-plugins"), b.Name())
	assert.Equal(t, "my-coscheduler", b.PodSchedulerName())
	assert.Equal(t, []client.Object{&schedv1alpha1.PodGroup{}}, b.OwnedTypes())
	assert.NoError(t, b.OnPodGangDelete(context.Background(), podGang()))
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, schedulerv1alpha1.AddToScheme(s))
	require.NoError(t, grovev1alpha1.AddToScheme(s))
	require.NoError(t, schedv1alpha1.AddToScheme(s))
	return s
}

func TestInitNeedsTheCoschedulingPodGroupCRD(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schedv1alpha1.SchemeGroupVersion.WithKind("PodGroup"), meta.RESTScopeNamespace)
	served := fake.NewClientBuilder().WithScheme(newScheme(t)).WithRESTMapper(mapper).Build()
	assert.NoError(t, New(cfg, served).Init(context.Background()))

	missing := fake.NewClientBuilder().WithScheme(newScheme(t)).WithRESTMapper(meta.NewDefaultRESTMapper(nil)).Build()
	err := New(cfg, missing).Init(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "install scheduler-plugins' CRDs")
}

// syncClient holds the PodGang and no PodClique: the backend reads none.
func syncClient(t *testing.T, pg *schedulerv1alpha1.PodGang) client.Client {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(pg).Build()
}

func TestSyncPodGangCreatesThePodGroupFromThePodGangAlone(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	c := syncClient(t, pg)

	reason, msg, err := New(cfg, c).SyncPodGang(ctx, pg)

	require.NoError(t, err)
	assert.Equal(t, "PodGroupCreated", reason)
	assert.Contains(t, msg, "5 pods")
	got := &schedv1alpha1.PodGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, got))
	requireSemanticEqual(t, wantPodGroup().Spec, got.Spec)
	assert.Equal(t, wantPodGroup().Labels, got.Labels)
	assert.Equal(t, []metav1.OwnerReference{{
		APIVersion: "scheduler.grove.io/v1alpha1", Kind: "PodGang", Name: "inf-0", UID: "pg-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}, got.OwnerReferences)
}

func TestSyncPodGangWritesNothingWhenNothingChanged(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	c := syncClient(t, pg)
	b := New(cfg, c)
	_, _, err := b.SyncPodGang(ctx, pg)
	require.NoError(t, err)
	key := client.ObjectKey{Namespace: "ns", Name: "inf-0"}
	before := &schedv1alpha1.PodGroup{}
	require.NoError(t, c.Get(ctx, key, before))

	_, _, err = b.SyncPodGang(ctx, pg)

	require.NoError(t, err)
	after := &schedv1alpha1.PodGroup{}
	require.NoError(t, c.Get(ctx, key, after))
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion)
}

func TestSyncPodGangRepairsAnEditedPodGroup(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	c := syncClient(t, pg)
	b := New(cfg, c)
	_, _, err := b.SyncPodGang(ctx, pg)
	require.NoError(t, err)
	key := client.ObjectKey{Namespace: "ns", Name: "inf-0"}
	edited := &schedv1alpha1.PodGroup{}
	require.NoError(t, c.Get(ctx, key, edited))
	edited.Spec.MinMember = 1
	edited.Spec.MinResources = nil
	edited.Labels["someone/else"] = "kept"
	require.NoError(t, c.Update(ctx, edited))

	_, _, err = b.SyncPodGang(ctx, pg)

	require.NoError(t, err)
	got := &schedv1alpha1.PodGroup{}
	require.NoError(t, c.Get(ctx, key, got))
	requireSemanticEqual(t, wantPodGroup().Spec, got.Spec)
	assert.Equal(t, "kept", got.Labels["someone/else"])
}
