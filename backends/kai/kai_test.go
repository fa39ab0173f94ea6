package kai

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv1alpha1 "github.com/kubegrove/grove/apis/kai/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// podGang has a standalone router and a scaling-group replica (leader + worker) packed in one
// rack, listed out of name order.
func podGang() *schedulerv1alpha1.PodGang {
	return &schedulerv1alpha1.PodGang{
		ObjectMeta: metav1.ObjectMeta{
			Name: "inf-0", Namespace: "ns", UID: types.UID("pg-uid"),
			Labels:      map[string]string{"kai.scheduler/queue": "q", "kai.scheduler/node-pool": "p"},
			Annotations: map[string]string{"grove.io/topology-name": "topo"},
		},
		Spec: schedulerv1alpha1.PodGangSpec{
			PodGroups: []schedulerv1alpha1.PodGroup{
				{Name: "inf-0-sg-0-worker", MinReplicas: 3, TopologyConstraint: builders.PackKeys("", "kubernetes.io/hostname")},
				{Name: "inf-0-router", MinReplicas: 2},
				{Name: "inf-0-sg-0-leader", MinReplicas: 1},
			},
			TopologyConstraint: builders.PackKeys("topology.kubernetes.io/zone", "topology.kubernetes.io/block"),
			TopologyConstraintGroupConfigs: []schedulerv1alpha1.TopologyConstraintGroupConfig{{
				Name:               "inf-0-sg-0",
				PodGroupNames:      []string{"inf-0-sg-0-leader", "inf-0-sg-0-worker"},
				TopologyConstraint: builders.PackKeys("topology.kubernetes.io/rack", ""),
			}},
			PriorityClassName: "high",
		},
	}
}

// wantPodGroup is the PodGroup of podGang(), spelled out.
func wantPodGroup() *kaiv2alpha2.PodGroup {
	return &kaiv2alpha2.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name: "inf-0", Namespace: "ns",
			Labels: map[string]string{
				"app.kubernetes.io/managed-by": "backend-controller",
				"grove.io/podgang":             "inf-0",
				"kai.scheduler/queue":          "q",
				"kai.scheduler/node-pool":      "p",
			},
		},
		Spec: kaiv2alpha2.PodGroupSpec{
			MinMember:         ptr.To[int32](3 + 2 + 1),
			Queue:             "q",
			PriorityClassName: "high",
			SubGroups: []kaiv2alpha2.SubGroup{
				{Name: "inf-0-router", MinMember: ptr.To[int32](2)},
				{
					Name: "inf-0-sg-0", MinSubGroup: ptr.To[int32](2),
					TopologyConstraint: &kaiv2alpha2.TopologyConstraint{Topology: "topo", RequiredTopologyLevel: "topology.kubernetes.io/rack"},
				},
				{Name: "inf-0-sg-0-leader", Parent: ptr.To("inf-0-sg-0"), MinMember: ptr.To[int32](1)},
				{
					Name: "inf-0-sg-0-worker", Parent: ptr.To("inf-0-sg-0"), MinMember: ptr.To[int32](3),
					TopologyConstraint: &kaiv2alpha2.TopologyConstraint{Topology: "topo", PreferredTopologyLevel: "kubernetes.io/hostname"},
				},
			},
			TopologyConstraint: &kaiv2alpha2.TopologyConstraint{
				Topology: "topo", RequiredTopologyLevel: "topology.kubernetes.io/zone", PreferredTopologyLevel: "topology.kubernetes.io/block",
			},
		},
	}
}

func TestBuildPodGroupNestsSubGroupsUnderTheirTopologyGroup(t *testing.T) {
	got, err := New(configv1alpha1.KAISchedulerConfig{DefaultQueue: "fallback"}, nil).BuildPodGroup(podGang(), "topo")

	require.NoError(t, err)
	assert.Equal(t, wantPodGroup(), got)
}

func TestBuildPodGroupWithoutConstraintsOrNodePool(t *testing.T) {
	pg := &schedulerv1alpha1.PodGang{
		ObjectMeta: metav1.ObjectMeta{Name: "solo-0", Namespace: "ns"},
		Spec:       schedulerv1alpha1.PodGangSpec{PodGroups: []schedulerv1alpha1.PodGroup{{Name: "solo-0-a", MinReplicas: 2}}},
	}

	got, err := New(configv1alpha1.KAISchedulerConfig{DefaultQueue: "team"}, nil).BuildPodGroup(pg, "")

	require.NoError(t, err)
	assert.Equal(t, &kaiv2alpha2.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "solo-0", Namespace: "ns", Labels: map[string]string{
			"app.kubernetes.io/managed-by": "backend-controller", "grove.io/podgang": "solo-0", "kai.scheduler/queue": "team",
		}},
		Spec: kaiv2alpha2.PodGroupSpec{
			MinMember: ptr.To[int32](2), Queue: "team",
			SubGroups: []kaiv2alpha2.SubGroup{{Name: "solo-0-a", MinMember: ptr.To[int32](2)}},
		},
	}, got)
}

func TestQueueResolution(t *testing.T) {
	cases := []struct {
		name         string
		label        string
		defaultQueue string
		want         string
	}{
		{"label wins over the default queue", "team-a", "fallback", "team-a"},
		{"label without a default queue", "team-a", "", "team-a"},
		{"default queue without a label", "", "fallback", "fallback"},
		{"neither", "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			labels := map[string]string{}
			if tc.label != "" {
				labels["kai.scheduler/queue"] = tc.label
			}
			b := New(configv1alpha1.KAISchedulerConfig{DefaultQueue: tc.defaultQueue}, nil)

			assert.Equal(t, tc.want, b.Queue(labels))

			pg := podGang()
			pg.Labels = labels
			built, err := b.BuildPodGroup(pg, "")
			pcs := &grovev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "inf", Labels: labels}}
			errs := b.ValidatePodCliqueSet(pcs)
			if tc.want == "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "kai.scheduler/queue")
				require.Len(t, errs, 1)
				assert.Equal(t, field.ErrorTypeRequired, errs[0].Type)
				assert.Equal(t, "metadata.labels[kai.scheduler/queue]", errs[0].Field)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, built.Spec.Queue)
			assert.Equal(t, tc.want, built.Labels["kai.scheduler/queue"])
			assert.Empty(t, errs)
		})
	}
}

func TestAQueueLabelOnACliqueIsEnoughAtAdmission(t *testing.T) {
	pcs := &grovev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "inf"}, Spec: grovev1alpha1.PodCliqueSetSpec{
		Template: grovev1alpha1.PodCliqueSetTemplateSpec{Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{
			{Name: "a"}, {Name: "b", Labels: map[string]string{"kai.scheduler/queue": "test"}},
		}},
	}}
	assert.Empty(t, New(configv1alpha1.KAISchedulerConfig{}, nil).ValidatePodCliqueSet(pcs), "upstream Grove manifests label the cliques")
}

func TestMergeKeepsKAIOwnedFieldsAndOverwritesTheRest(t *testing.T) {
	have := &kaiv2alpha2.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "inf-0", Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{
			"kai.scheduler/queue":     "kai-moved",
			"kai.scheduler/node-pool": "kai-pool",
			"grove.io/podgang":        "stale",
			"someone/else":            "kept",
		}},
		Spec: kaiv2alpha2.PodGroupSpec{
			MinMember: ptr.To[int32](99), Queue: "kai-moved", PriorityClassName: "low",
			MarkUnschedulable: ptr.To(true), SchedulingBackoff: ptr.To[int32](5),
			SubGroups: []kaiv2alpha2.SubGroup{{Name: "gone", MinMember: ptr.To[int32](9)}},
		},
	}
	want := wantPodGroup()

	Merge(have, want)

	assert.Equal(t, "7", have.ResourceVersion)
	assert.Equal(t, map[string]string{
		"kai.scheduler/queue":          "kai-moved",
		"kai.scheduler/node-pool":      "kai-pool",
		"grove.io/podgang":             "inf-0",
		"app.kubernetes.io/managed-by": "backend-controller",
		"someone/else":                 "kept",
	}, have.Labels)
	wantSpec := wantPodGroup().Spec
	wantSpec.Queue = "kai-moved"
	wantSpec.MarkUnschedulable = ptr.To(true)
	wantSpec.SchedulingBackoff = ptr.To[int32](5)
	assert.Equal(t, wantSpec, have.Spec)
	assert.Equal(t, wantPodGroup(), want, "Merge does not modify want")
}

func TestMergeIntoAnEmptyPodGroupTakesEverythingFromWant(t *testing.T) {
	have := &kaiv2alpha2.PodGroup{}

	Merge(have, wantPodGroup())

	assert.Equal(t, wantPodGroup().Labels, have.Labels)
	assert.Equal(t, wantPodGroup().Spec, have.Spec)
}

func TestPreparePodAppliesKAIsPodContract(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		"grove.io/podgang": "inf-0", "grove.io/podclique": "inf-0-router",
	}}}

	New(configv1alpha1.KAISchedulerConfig{}, nil).PreparePod(pod)

	assert.Equal(t, "kai-scheduler", pod.Spec.SchedulerName)
	assert.Equal(t, map[string]string{"pod-group-name": "inf-0", "kai.scheduler/skip-podgrouper": "true"}, pod.Annotations)
	assert.Equal(t, map[string]string{
		"grove.io/podgang": "inf-0", "grove.io/podclique": "inf-0-router", "kai.scheduler/subgroup-name": "inf-0-router",
	}, pod.Labels)
}

func TestPreparePodKeepsAnExistingSchedulerNameAndAnnotations(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"a": "b"}},
		Spec:       corev1.PodSpec{SchedulerName: "kai-scheduler-shard"},
	}

	New(configv1alpha1.KAISchedulerConfig{}, nil).PreparePod(pod)

	assert.Equal(t, "kai-scheduler-shard", pod.Spec.SchedulerName)
	assert.Equal(t, map[string]string{"a": "b", "kai.scheduler/skip-podgrouper": "true"}, pod.Annotations)
	assert.Empty(t, pod.Labels, "no podclique label, no subgroup label")
}

func TestNotHonouredIsEmpty(t *testing.T) {
	pcs := &grovev1alpha1.PodCliqueSet{Spec: grovev1alpha1.PodCliqueSetSpec{Template: grovev1alpha1.PodCliqueSetTemplateSpec{
		TopologyConstraint: &grovev1alpha1.TopologyConstraint{Pack: &grovev1alpha1.TopologyPackConstraint{Required: "zone", Preferred: "host"}},
		Cliques:            []*grovev1alpha1.PodCliqueTemplateSpec{{Name: "a", Spec: grovev1alpha1.PodCliqueSpec{Replicas: 4}}},
	}}}

	assert.Empty(t, New(configv1alpha1.KAISchedulerConfig{}, nil).NotHonoured(pcs, nil))
}

func TestNamesAndOwnedTypes(t *testing.T) {
	b := New(configv1alpha1.KAISchedulerConfig{}, nil)
	assert.Equal(t, configv1alpha1.SchedulerName("kai-scheduler"), b.Name())
	assert.Equal(t, "kai-scheduler", b.PodSchedulerName())
	assert.Equal(t, []client.Object{&kaiv2alpha2.PodGroup{}}, b.OwnedTypes())
	assert.NoError(t, b.OnPodGangDelete(context.Background(), podGang()))
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, schedulerv1alpha1.AddToScheme(s))
	require.NoError(t, grovev1alpha1.AddToScheme(s))
	require.NoError(t, kaiv2alpha2.AddToScheme(s))
	require.NoError(t, kaiv1alpha1.AddToScheme(s))
	return s
}

func TestInitNeedsKAIsPodGroupAndTopologyCRDs(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(kaiv2alpha2.GroupVersion.WithKind("PodGroup"), meta.RESTScopeNamespace)
	noTopology := fake.NewClientBuilder().WithScheme(newScheme(t)).WithRESTMapper(mapper).Build()
	err := New(configv1alpha1.KAISchedulerConfig{}, noTopology).Init(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "kai.scheduler/v1alpha1, Kind=Topology is not served")
	mapper.Add(kaiv1alpha1.GroupVersion.WithKind("Topology"), meta.RESTScopeRoot)
	served := fake.NewClientBuilder().WithScheme(newScheme(t)).WithRESTMapper(mapper).Build()
	assert.NoError(t, New(configv1alpha1.KAISchedulerConfig{}, served).Init(context.Background()))

	missing := fake.NewClientBuilder().WithScheme(newScheme(t)).WithRESTMapper(meta.NewDefaultRESTMapper(nil)).Build()
	err = New(configv1alpha1.KAISchedulerConfig{}, missing).Init(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "install KAI scheduler's CRDs")
}

func TestSyncPodGangCreatesThePodGroupOwnedByThePodGang(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(pg).Build()

	reason, msg, err := New(configv1alpha1.KAISchedulerConfig{}, c).SyncPodGang(ctx, pg)

	require.NoError(t, err)
	assert.Equal(t, "PodGroupCreated", reason)
	assert.Contains(t, msg, "queue q")
	got := &kaiv2alpha2.PodGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, got))
	assert.Equal(t, wantPodGroup().Spec, got.Spec)
	assert.Equal(t, wantPodGroup().Labels, got.Labels)
	assert.Equal(t, []metav1.OwnerReference{{
		APIVersion: "scheduler.grove.io/v1alpha1", Kind: "PodGang", Name: "inf-0", UID: "pg-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}, got.OwnerReferences)
}

func TestSyncPodGangWritesNothingWhenNothingChanged(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(pg).Build()
	b := New(configv1alpha1.KAISchedulerConfig{}, c)
	_, _, err := b.SyncPodGang(ctx, pg)
	require.NoError(t, err)
	key := client.ObjectKey{Namespace: "ns", Name: "inf-0"}
	before := &kaiv2alpha2.PodGroup{}
	require.NoError(t, c.Get(ctx, key, before))

	_, _, err = b.SyncPodGang(ctx, pg)

	require.NoError(t, err)
	after := &kaiv2alpha2.PodGroup{}
	require.NoError(t, c.Get(ctx, key, after))
	assert.Equal(t, before.ResourceVersion, after.ResourceVersion)
}

func TestSyncPodGangRepairsHandEditsButKeepsTheQueueKAIChanged(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(pg).Build()
	b := New(configv1alpha1.KAISchedulerConfig{}, c)
	_, _, err := b.SyncPodGang(ctx, pg)
	require.NoError(t, err)
	key := client.ObjectKey{Namespace: "ns", Name: "inf-0"}
	edited := &kaiv2alpha2.PodGroup{}
	require.NoError(t, c.Get(ctx, key, edited))
	edited.Spec.MinMember = ptr.To[int32](1)
	edited.Spec.SubGroups = edited.Spec.SubGroups[:1]
	edited.Spec.Queue = "kai-moved"
	edited.Labels["kai.scheduler/queue"] = "kai-moved"
	edited.Spec.MarkUnschedulable = ptr.To(true)
	require.NoError(t, c.Update(ctx, edited))

	_, msg, err := b.SyncPodGang(ctx, pg)

	require.NoError(t, err)
	assert.Contains(t, msg, "queue kai-moved")
	got := &kaiv2alpha2.PodGroup{}
	require.NoError(t, c.Get(ctx, key, got))
	want := wantPodGroup()
	want.Spec.Queue = "kai-moved"
	want.Spec.MarkUnschedulable = ptr.To(true)
	want.Labels["kai.scheduler/queue"] = "kai-moved"
	assert.Equal(t, want.Spec, got.Spec)
	assert.Equal(t, want.Labels, got.Labels)
}

func TestSyncPodGangWithoutAQueueFails(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	pg.Labels = nil
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(pg).Build()

	_, _, err := New(configv1alpha1.KAISchedulerConfig{}, c).SyncPodGang(ctx, pg)

	require.Error(t, err)
	list := &kaiv2alpha2.PodGroupList{}
	require.NoError(t, c.List(ctx, list))
	assert.Empty(t, list.Items)
}
