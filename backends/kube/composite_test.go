package kube

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

func required(key string) *schedulerv1alpha1.TopologyConstraint {
	return &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{Required: ptr.To(key)}}
}

// leaderWorkerGang is a PodGang of a leader (1), a standalone router (2) and one scaling-group
// replica of prefill (3) and decode (2) packed on a rack, the gang on a zone, decode on a host.
func leaderWorkerGang() *schedulerv1alpha1.PodGang {
	return &schedulerv1alpha1.PodGang{
		ObjectMeta: metav1.ObjectMeta{Name: "inf-0", Namespace: "ns", UID: types.UID("pg-uid")},
		Status:     initialized(),
		Spec: schedulerv1alpha1.PodGangSpec{
			PodGroups: []schedulerv1alpha1.PodGroup{
				{Name: "inf-0-leader", MinReplicas: 1},
				{Name: "inf-0-router", MinReplicas: 2},
				{Name: "inf-0-sg-0-prefill", MinReplicas: 3},
				{Name: "inf-0-sg-0-decode", MinReplicas: 2, TopologyConstraint: required("kubernetes.io/hostname")},
			},
			TopologyConstraint: required("topology.kubernetes.io/zone"),
			TopologyConstraintGroupConfigs: []schedulerv1alpha1.TopologyConstraintGroupConfig{
				{Name: "inf-0-sg-0", PodGroupNames: []string{"inf-0-sg-0-prefill", "inf-0-sg-0-decode"}, TopologyConstraint: required("topology.kubernetes.io/rack")},
			},
		},
	}
}

func gangOf(minCount int32) schedulingv1beta1.PodGroupSchedulingPolicy {
	return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}}
}

func topology(key string) []schedulingv1beta1.TopologyConstraint {
	return []schedulingv1beta1.TopologyConstraint{{Key: key}}
}

func TestCompositeWorkloadKeepsEachPodGroupsMinimumAndEachLevelsPackKey(t *testing.T) {
	objs, flattened, ok := BuildCompositeObjects(leaderWorkerGang())

	require.True(t, ok)
	assert.Empty(t, flattened)
	require.Len(t, objs, 7, "one Workload, two CompositePodGroups, four PodGroups")
	workload := objs[0].(*schedulingv1beta1.Workload)
	assert.Nil(t, workload.Spec.PodGroupTemplates)
	assert.Equal(t, []schedulingv1beta1.CompositePodGroupTemplate{{
		Name:                  "gang",
		SchedulingPolicy:      schedulingv1beta1.CompositePodGroupSchedulingPolicy{Gang: &schedulingv1beta1.CompositeGangSchedulingPolicy{MinGroupCount: 3}},
		SchedulingConstraints: &schedulingv1beta1.CompositePodGroupSchedulingConstraints{Topology: topology("topology.kubernetes.io/zone")},
		PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{
			{Name: "inf-0-leader", SchedulingPolicy: gangOf(1)},
			{Name: "inf-0-router", SchedulingPolicy: gangOf(2)},
		},
		CompositePodGroupTemplates: []schedulingv1beta1.CompositePodGroupTemplate{{
			Name:                  "group-0",
			SchedulingPolicy:      schedulingv1beta1.CompositePodGroupSchedulingPolicy{Gang: &schedulingv1beta1.CompositeGangSchedulingPolicy{MinGroupCount: 2}},
			SchedulingConstraints: &schedulingv1beta1.CompositePodGroupSchedulingConstraints{Topology: topology("topology.kubernetes.io/rack")},
			PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{
				{Name: "inf-0-sg-0-prefill", SchedulingPolicy: gangOf(3)},
				{Name: "inf-0-sg-0-decode", SchedulingPolicy: gangOf(2), SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: topology("kubernetes.io/hostname")}},
			},
		}},
	}}, workload.Spec.CompositePodGroupTemplates)

	root, group := objs[1].(*schedulingv1alpha3.CompositePodGroup), objs[2].(*schedulingv1alpha3.CompositePodGroup)
	assert.Equal(t, "inf-0", root.Name)
	assert.Nil(t, root.Spec.ParentCompositePodGroupName, "the PodGang's composite is the root")
	assert.Equal(t, &schedulingv1alpha3.WorkloadReference{WorkloadName: "inf-0", TemplateName: "gang"}, root.Spec.WorkloadRef)
	assert.Equal(t, "inf-0.group-0", group.Name)
	assert.Equal(t, ptr.To("inf-0"), group.Spec.ParentCompositePodGroupName)
	assert.Equal(t, int32(2), group.Spec.SchedulingPolicy.Gang.MinGroupCount)
	assert.Equal(t, []schedulingv1alpha3.TopologyConstraint{{Key: "topology.kubernetes.io/rack"}}, group.Spec.SchedulingConstraints.Topology)

	parents := map[string]string{}
	for _, o := range objs[3:] {
		g := o.(*schedulingv1beta1.PodGroup)
		parents[g.Name] = *g.Spec.ParentCompositePodGroupName
		assert.Equal(t, g.Name, g.Spec.WorkloadRef.TemplateName)
	}
	assert.Equal(t, map[string]string{"inf-0-leader": "inf-0", "inf-0-router": "inf-0", "inf-0-sg-0-prefill": "inf-0.group-0", "inf-0-sg-0-decode": "inf-0.group-0"}, parents)
	assert.Equal(t, int32(3), objs[5].(*schedulingv1beta1.PodGroup).Spec.SchedulingPolicy.Gang.MinCount)
}

// manyGroups is a PodGang of n pod groups of minimum 1, and topology groups of size each
// (the first groups*size pod groups), packed on a rack.
func manyGroups(n, groups, size int) *schedulerv1alpha1.PodGang {
	pg := &schedulerv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Name: "big-0", Namespace: "ns"}, Status: initialized()}
	for i := range n {
		pg.Spec.PodGroups = append(pg.Spec.PodGroups, schedulerv1alpha1.PodGroup{Name: fmt.Sprintf("big-0-c%d", i), MinReplicas: int32(i%3 + 1)})
	}
	for g := range groups {
		c := schedulerv1alpha1.TopologyConstraintGroupConfig{Name: fmt.Sprintf("big-0-sg-%d", g), TopologyConstraint: required("rack")}
		for i := range size {
			c.PodGroupNames = append(c.PodGroupNames, fmt.Sprintf("big-0-c%d", g*size+i))
		}
		pg.Spec.TopologyConstraintGroupConfigs = append(pg.Spec.TopologyConstraintGroupConfigs, c)
	}
	return pg
}

// checkTree asserts the Workload obeys the API's limits (8 templates per list, composites at
// most 3 deep, unique template names, every composite requiring all its children) and returns
// each pod group's minimum as the tree keeps it.
func checkTree(t *testing.T, w *schedulingv1beta1.Workload) map[string]int32 {
	t.Helper()
	mins := map[string]int32{}
	names := map[string]bool{}
	var walk func(c schedulingv1beta1.CompositePodGroupTemplate, depth int)
	walk = func(c schedulingv1beta1.CompositePodGroupTemplate, depth int) {
		assert.LessOrEqual(t, depth, 3, "composite %s is too deep", c.Name)
		assert.LessOrEqual(t, len(c.PodGroupTemplates), 8)
		assert.LessOrEqual(t, len(c.CompositePodGroupTemplates), 8)
		assert.Equal(t, int32(len(c.PodGroupTemplates)+len(c.CompositePodGroupTemplates)), c.SchedulingPolicy.Gang.MinGroupCount)
		assert.False(t, names[c.Name], "template name %s used twice", c.Name)
		names[c.Name] = true
		for _, p := range c.PodGroupTemplates {
			assert.False(t, names[p.Name], "template name %s used twice", p.Name)
			names[p.Name] = true
			mins[p.Name] = p.SchedulingPolicy.Gang.MinCount
		}
		for _, child := range c.CompositePodGroupTemplates {
			walk(child, depth+1)
		}
	}
	require.Len(t, w.Spec.CompositePodGroupTemplates, 1)
	walk(w.Spec.CompositePodGroupTemplates[0], 1)
	return mins
}

func wantMins(pg *schedulerv1alpha1.PodGang) map[string]int32 {
	out := map[string]int32{}
	for _, g := range pg.Spec.PodGroups {
		out[g.Name] = g.MinReplicas
	}
	return out
}

func TestCompositeTreeFitsTheAPIsLimits(t *testing.T) {
	cases := []struct {
		name          string
		pg            *schedulerv1alpha1.PodGang
		wantFlattened int
	}{
		{"8 pod groups fit one list", manyGroups(8, 0, 0), 0},
		{"20 pod groups are split into parts, losing nothing", manyGroups(20, 0, 0), 0},
		{"100 pod groups are split into parts of parts", manyGroups(100, 0, 0), 0},
		{"10 topology groups of 4 are split into parts and keep their keys", manyGroups(40, 10, 4), 0},
		{"10 topology groups of 10 are too deep: they are flattened, named", manyGroups(100, 10, 10), 10},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, flattened, ok := BuildCompositeObjects(tc.pg)

			require.True(t, ok)
			assert.Len(t, flattened, tc.wantFlattened)
			for _, f := range flattened {
				assert.Contains(t, f, "pack key rack")
			}
			assert.Equal(t, wantMins(tc.pg), checkTree(t, objs[0].(*schedulingv1beta1.Workload)), "every pod group keeps its own minimum")
		})
	}
}

func TestCompositeTreeBeyondTheAPIsLimitsIsNotBuilt(t *testing.T) {
	_, _, ok := BuildCompositeObjects(manyGroups(8*8*8+1, 0, 0))

	assert.False(t, ok, "513 pod groups need composites 4 deep")
}

func compositeBackend(t *testing.T, objs ...client.Object) (*Backend, client.Client) {
	t.Helper()
	mapper := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []string{"Workload", "PodGroup"} {
		mapper.Add(schedulingv1beta1.SchemeGroupVersion.WithKind(gvk), meta.RESTScopeNamespace)
	}
	mapper.Add(schedulingv1alpha3.SchemeGroupVersion.WithKind("CompositePodGroup"), meta.RESTScopeNamespace)
	c := fake.NewClientBuilder().WithScheme(newScheme(t, true)).WithRESTMapper(mapper).WithObjects(objs...).Build()
	b := New(gangCfg, c)
	require.NoError(t, b.Init(context.Background()))
	return b, c
}

func TestInitChoosesCompositeGangModeWhereCompositePodGroupIsServed(t *testing.T) {
	b, _ := compositeBackend(t)

	assert.Equal(t, ModeCompositeGang, b.Mode())
	assert.Len(t, b.OwnedTypes(), 3, "CompositePodGroups are watched for drift too")

	flat := meta.NewDefaultRESTMapper(nil)
	flat.Add(schedulingv1beta1.SchemeGroupVersion.WithKind("Workload"), meta.RESTScopeNamespace)
	flat.Add(schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup"), meta.RESTScopeNamespace)
	fb := New(gangCfg, fake.NewClientBuilder().WithScheme(newScheme(t, true)).WithRESTMapper(flat).Build())
	require.NoError(t, fb.Init(context.Background()))
	assert.Equal(t, ModeGang, fb.Mode())
	assert.Equal(t, ModePlain, New(plainCfg, nil).Mode())
}

func TestSchedulingGroupsNameEachPodGroupsOwnGroupOnlyInCompositeMode(t *testing.T) {
	pg := leaderWorkerGang()
	composite, _ := compositeBackend(t)
	flat := New(gangCfg, nil)

	assert.Equal(t, []schedulerv1alpha1.SchedulingGroup{
		{PodGroup: "inf-0-leader", Name: "inf-0-leader"}, {PodGroup: "inf-0-router", Name: "inf-0-router"},
		{PodGroup: "inf-0-sg-0-prefill", Name: "inf-0-sg-0-prefill"}, {PodGroup: "inf-0-sg-0-decode", Name: "inf-0-sg-0-decode"},
	}, composite.SchedulingGroups(pg))
	for _, g := range flat.SchedulingGroups(pg) {
		assert.Equal(t, "inf-0", g.Name, "a flat gang has one PodGroup")
	}
	assert.Nil(t, New(plainCfg, nil).SchedulingGroups(pg))
	assert.Equal(t, "big-0", composite.SchedulingGroups(manyGroups(8*8*8+1, 0, 0))[0].Name, "beyond the limits the gang is flat")
}

func TestSyncInCompositeModeCreatesTheTreeOnceAndDeletesTheFlatGangsPodGroup(t *testing.T) {
	ctx := context.Background()
	pg := leaderWorkerGang()
	flatGroup := BuildPodGroup(pg)
	flatGroup.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pg, schedulerv1alpha1.GroupVersion.WithKind("PodGang"))}
	b, c := compositeBackend(t, pg, flatGroup)

	reason, msg, err := b.SyncPodGang(ctx, pg)

	require.NoError(t, err)
	assert.Equal(t, ReasonCompositeWorkloadCreated, reason)
	assert.Contains(t, msg, "2 CompositePodGroups and 4 PodGroups")
	groups := &schedulingv1beta1.PodGroupList{}
	require.NoError(t, c.List(ctx, groups))
	var names []string
	for _, g := range groups.Items {
		names = append(names, g.Name)
		requireControlledByPodGang(t, &g, pg)
	}
	assert.ElementsMatch(t, []string{"inf-0-leader", "inf-0-router", "inf-0-sg-0-prefill", "inf-0-sg-0-decode"}, names,
		"the flat gang's PodGroup inf-0 of an earlier mode is deleted")
	composites := &schedulingv1alpha3.CompositePodGroupList{}
	require.NoError(t, c.List(ctx, composites))
	require.Len(t, composites.Items, 2)

	before := map[string]string{}
	for _, g := range groups.Items {
		before[g.Name] = g.ResourceVersion
	}
	_, _, err = b.SyncPodGang(ctx, pg)
	require.NoError(t, err)
	require.NoError(t, c.List(ctx, groups))
	for _, g := range groups.Items {
		assert.Equal(t, before[g.Name], g.ResourceVersion, "quiet at rest: %s", g.Name)
	}
}

func TestSyncInCompositeModeRecreatesAnEditedCompositePodGroup(t *testing.T) {
	ctx := context.Background()
	pg := leaderWorkerGang()
	b, c := compositeBackend(t, pg)
	_, _, err := b.SyncPodGang(ctx, pg)
	require.NoError(t, err)
	cpg := &schedulingv1alpha3.CompositePodGroup{}
	key := client.ObjectKey{Namespace: "ns", Name: "inf-0.group-0"}
	require.NoError(t, c.Get(ctx, key, cpg))
	cpg.Spec.SchedulingPolicy.Gang.MinGroupCount = 1
	require.NoError(t, c.Update(ctx, cpg))

	_, _, err = b.SyncPodGang(ctx, pg)

	require.NoError(t, err)
	require.NoError(t, c.Get(ctx, key, cpg))
	assert.Equal(t, int32(2), cpg.Spec.SchedulingPolicy.Gang.MinGroupCount)
}

func TestSyncInCompositeModeBeyondTheLimitsIsAFlatGangThatSaysSo(t *testing.T) {
	ctx := context.Background()
	pg := manyGroups(8*8*8+1, 0, 0)
	b, c := compositeBackend(t, pg)

	reason, msg, err := b.SyncPodGang(ctx, pg)

	require.NoError(t, err)
	assert.Equal(t, ReasonWorkloadCreated, reason)
	assert.Contains(t, msg, "flattened: its 513 pod groups exceed CompositePodGroup's limits")
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "big-0"}, &schedulingv1beta1.PodGroup{}))
}

// kube-apiserver without the CompositePodGroup gate drops compositePodGroupTemplates from a
// Workload it stores: the sync fails naming the gate instead of acknowledging a gang that does
// not exist.
func TestSyncInCompositeModeReportsTemplatesTheAPIServerDropped(t *testing.T) {
	ctx := context.Background()
	pg := leaderWorkerGang()
	b, _ := compositeBackend(t, pg)
	b.client = interceptor.NewClient(b.client.(client.WithWatch), interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if w, ok := obj.(*schedulingv1beta1.Workload); ok {
				w.Spec.CompositePodGroupTemplates = nil
			}
			return c.Create(ctx, obj, opts...)
		},
	})

	_, _, err := b.SyncPodGang(ctx, pg)

	require.Error(t, err)
	assert.Contains(t, err.Error(), "CompositePodGroup feature gate")
}
