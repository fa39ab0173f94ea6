package kai

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv1alpha1 "github.com/kubegrove/grove/apis/kai/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
)

// binding is a ClusterTopologyBinding of a block, a rack and a host level.
func binding() *grovev1alpha1.ClusterTopologyBinding {
	return &grovev1alpha1.ClusterTopologyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "topo", UID: "ct-uid", Generation: 3},
		Spec: grovev1alpha1.ClusterTopologyBindingSpec{Levels: []grovev1alpha1.TopologyLevel{
			{Domain: "block", Key: "example.com/block"}, {Domain: "rack", Key: "example.com/rack"}, {Domain: "host", Key: "kubernetes.io/hostname"},
		}},
	}
}

func withReference(ct *grovev1alpha1.ClusterTopologyBinding, scheduler, ref string) *grovev1alpha1.ClusterTopologyBinding {
	ct.Spec.SchedulerTopologyBindings = append(ct.Spec.SchedulerTopologyBindings,
		grovev1alpha1.SchedulerTopologyBinding{SchedulerName: scheduler, TopologyReference: ref})
	return ct
}

func levels(nodeLabels ...string) []kaiv1alpha1.TopologyLevel {
	out := make([]kaiv1alpha1.TopologyLevel, 0, len(nodeLabels))
	for _, l := range nodeLabels {
		out = append(out, kaiv1alpha1.TopologyLevel{NodeLabel: l})
	}
	return out
}

// writes counts the writes a fake client sees; its Create gives objects a fresh UID, as the
// API server does (the fake client leaves it empty).
type writes struct {
	creates, updates, deletes int
	deleteOpts                []*client.DeleteOptions
}

func topologyClient(t *testing.T, w *writes, objs ...client.Object) client.Client {
	t.Helper()
	return fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			w.creates++
			obj.SetUID(types.UID(fmt.Sprintf("uid-%d", w.creates)))
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			w.updates++
			return c.Update(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			w.updates++
			return c.Patch(ctx, obj, patch, opts...)
		},
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			w.deletes++
			do := &client.DeleteOptions{}
			do.ApplyOptions(opts)
			w.deleteOpts = append(w.deleteOpts, do)
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
}

func getTopology(t *testing.T, c client.Client, name string) *kaiv1alpha1.Topology {
	t.Helper()
	got := &kaiv1alpha1.Topology{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Name: name}, got))
	return got
}

func TestSyncTopologyCreatesTheBindingsTopologyOwnedByIt(t *testing.T) {
	ct := binding()
	w := &writes{}
	c := topologyClient(t, w, ct)

	st, err := New(configv1alpha1.KAISchedulerConfig{}, c).SyncTopology(context.Background(), ct)

	require.NoError(t, err)
	assert.Equal(t, grovev1alpha1.SchedulerTopologyStatus{
		SchedulerName: "kai-scheduler", TopologyReference: "topo", InSync: true, SchedulerBackendTopologyObservedGeneration: getTopology(t, c, "topo").Generation,
		Message: `KAI Topology "topo" has the binding's levels [example.com/block example.com/rack kubernetes.io/hostname]`,
	}, st)
	got := getTopology(t, c, "topo")
	assert.Equal(t, []kaiv1alpha1.TopologyLevel{
		{NodeLabel: "example.com/block", Alias: "block"}, {NodeLabel: "example.com/rack", Alias: "rack"}, {NodeLabel: "kubernetes.io/hostname", Alias: "host"},
	}, got.Spec.Levels, "the binding's keys in order, aliased by domain")
	assert.Equal(t, []metav1.OwnerReference{{
		APIVersion: "grove.io/v1alpha1", Kind: "ClusterTopologyBinding", Name: "topo", UID: "ct-uid",
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}, got.OwnerReferences, "garbage-collected with the binding")
	assert.Equal(t, "backend-controller", got.Labels["app.kubernetes.io/managed-by"])
}

func TestSyncTopologyWritesNothingWhenInSync(t *testing.T) {
	ctx := context.Background()
	ct := binding()
	w := &writes{}
	c := topologyClient(t, w, ct)
	b := New(configv1alpha1.KAISchedulerConfig{}, c)
	_, err := b.SyncTopology(ctx, ct)
	require.NoError(t, err)
	before := getTopology(t, c, "topo")
	*w = writes{}

	st, err := b.SyncTopology(ctx, ct)

	require.NoError(t, err)
	assert.True(t, st.InSync)
	assert.Equal(t, writes{}, *w, "no write at rest")
	assert.Equal(t, before.ResourceVersion, getTopology(t, c, "topo").ResourceVersion)
}

func TestSyncTopologyRecreatesTheTopologyWhenTheKeysChange(t *testing.T) {
	ctx := context.Background()
	ct := binding()
	w := &writes{}
	c := topologyClient(t, w, ct)
	b := New(configv1alpha1.KAISchedulerConfig{}, c)
	_, err := b.SyncTopology(ctx, ct)
	require.NoError(t, err)
	old := getTopology(t, c, "topo")
	// KAI forbids editing the node labels: a new rack key means a new Topology.
	ct.Spec.Levels[1].Key = "example.com/rack-v2"
	ct.Generation = 4

	st, err := b.SyncTopology(ctx, ct)

	require.NoError(t, err)
	assert.True(t, st.InSync, st.Message)
	got := getTopology(t, c, "topo")
	assert.Equal(t, got.Generation, st.SchedulerBackendTopologyObservedGeneration, "the generation of the Topology compared")
	assert.NotEqual(t, old.UID, got.UID, "deleted and created anew")
	assert.Equal(t, []string{"example.com/block", "example.com/rack-v2", "kubernetes.io/hostname"}, nodeLabels(got))
	assert.True(t, metav1.IsControlledBy(got, ct))
	require.Len(t, w.deleteOpts, 1)
	require.NotNil(t, w.deleteOpts[0].Preconditions)
	assert.Equal(t, ptr.To(old.UID), w.deleteOpts[0].Preconditions.UID, "only the Topology that was read is deleted")
}

func TestSyncTopologyUpdatesAliasesInPlace(t *testing.T) {
	ctx := context.Background()
	ct := binding()
	w := &writes{}
	c := topologyClient(t, w, ct)
	b := New(configv1alpha1.KAISchedulerConfig{}, c)
	_, err := b.SyncTopology(ctx, ct)
	require.NoError(t, err)
	old := getTopology(t, c, "topo")
	ct.Spec.Levels[0].Domain = "zone" // same keys, another domain name
	*w = writes{}

	_, err = b.SyncTopology(ctx, ct)

	require.NoError(t, err)
	got := getTopology(t, c, "topo")
	assert.Equal(t, old.UID, got.UID, "KAI lets aliases be edited")
	assert.Equal(t, "zone", got.Spec.Levels[0].Alias)
	assert.Equal(t, writes{updates: 1}, *w)
}

func TestSyncTopologyRepairsAnEditedAlias(t *testing.T) {
	ctx := context.Background()
	ct := binding()
	w := &writes{}
	c := topologyClient(t, w, ct)
	b := New(configv1alpha1.KAISchedulerConfig{}, c)
	_, err := b.SyncTopology(ctx, ct)
	require.NoError(t, err)
	edited := getTopology(t, c, "topo")
	edited.Spec.Levels[2].Alias = "node"
	require.NoError(t, c.Update(ctx, edited))

	_, err = b.SyncTopology(ctx, ct)

	require.NoError(t, err)
	assert.Equal(t, "host", getTopology(t, c, "topo").Spec.Levels[2].Alias)
}

func TestSyncTopologyOnlyComparesAnExternallyReferencedTopology(t *testing.T) {
	ctx := context.Background()
	ct := withReference(binding(), "kai-scheduler", "cluster-topology")
	external := &kaiv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: "cluster-topology", ResourceVersion: "5"},
		Spec: kaiv1alpha1.TopologySpec{Levels: levels("example.com/block", "example.com/row", "kubernetes.io/hostname")}}
	w := &writes{}
	c := topologyClient(t, w, ct, external)

	st, err := New(configv1alpha1.KAISchedulerConfig{}, c).SyncTopology(ctx, ct)

	require.NoError(t, err)
	assert.False(t, st.InSync)
	assert.Equal(t, "cluster-topology", st.TopologyReference)
	assert.Equal(t, `KAI Topology "cluster-topology" has levels [example.com/block example.com/row kubernetes.io/hostname], `+
		`the binding [example.com/block example.com/rack kubernetes.io/hostname]: its level 2 is example.com/row, the binding's is example.com/rack`, st.Message)
	assert.Equal(t, writes{}, *w, "someone else's Topology is never written")
	assert.Equal(t, external.Spec, getTopology(t, c, "cluster-topology").Spec)
	assert.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: "topo"}, &kaiv1alpha1.Topology{})), "no Topology of its own either")

	// Once someone fixes it, the binding is in sync.
	external = getTopology(t, c, "cluster-topology")
	external.Spec.Levels = levels("example.com/block", "example.com/rack", "kubernetes.io/hostname")
	require.NoError(t, c.Update(ctx, external))
	*w = writes{}
	st, err = New(configv1alpha1.KAISchedulerConfig{}, c).SyncTopology(ctx, ct)
	require.NoError(t, err)
	assert.True(t, st.InSync, st.Message)
	assert.Equal(t, writes{}, *w)
}

func TestSyncTopologyDeletesItsOwnTopologyOnceTheBindingNamesAnother(t *testing.T) {
	ctx := context.Background()
	ct := binding()
	w := &writes{}
	c := topologyClient(t, w, ct)
	b := New(configv1alpha1.KAISchedulerConfig{}, c)
	_, err := b.SyncTopology(ctx, ct)
	require.NoError(t, err)
	own := getTopology(t, c, "topo")
	ct = withReference(ct, "kai-scheduler", "cluster-topology")

	st, err := b.SyncTopology(ctx, ct)

	require.NoError(t, err)
	assert.Equal(t, "cluster-topology", st.TopologyReference)
	assert.True(t, apierrors.IsNotFound(c.Get(ctx, client.ObjectKey{Name: "topo"}, &kaiv1alpha1.Topology{})), "nothing refers to it any more")
	require.Len(t, w.deleteOpts, 1)
	assert.Equal(t, ptr.To(own.UID), w.deleteOpts[0].Preconditions.UID)
}

func TestSyncTopologyReportsAMissingReferencedTopology(t *testing.T) {
	ct := withReference(binding(), "kai-scheduler", "cluster-topology")
	w := &writes{}
	c := topologyClient(t, w, ct)

	st, err := New(configv1alpha1.KAISchedulerConfig{}, c).SyncTopology(context.Background(), ct)

	require.NoError(t, err)
	assert.False(t, st.InSync)
	assert.Equal(t, `KAI Topology "cluster-topology" named in schedulerTopologyBindings does not exist`, st.Message)
	assert.Equal(t, writes{}, *w)
}

func TestSyncTopologyIgnoresOtherSchedulersReferences(t *testing.T) {
	ct := withReference(binding(), "some-other-scheduler", "theirs")
	c := topologyClient(t, &writes{}, ct)

	st, err := New(configv1alpha1.KAISchedulerConfig{}, c).SyncTopology(context.Background(), ct)

	require.NoError(t, err)
	assert.True(t, st.InSync)
	assert.Equal(t, "topo", st.TopologyReference)
	getTopology(t, c, "topo")
}

func TestSyncTopologyNeverTouchesATopologyItDoesNotOwn(t *testing.T) {
	ct := binding()
	theirs := &kaiv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: "topo"}, Spec: kaiv1alpha1.TopologySpec{Levels: levels("example.com/zone")}}
	w := &writes{}
	c := topologyClient(t, w, ct, theirs)

	st, err := New(configv1alpha1.KAISchedulerConfig{}, c).SyncTopology(context.Background(), ct)

	require.NoError(t, err)
	assert.False(t, st.InSync)
	assert.Contains(t, st.Message, "not owned by this binding")
	assert.Equal(t, writes{}, *w)
}

func TestSyncTopologyReplacesTheTopologyOfADeletedBindingOfTheSameName(t *testing.T) {
	ct := binding()
	orphan := &kaiv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: "topo", UID: "old-topology", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "grove.io/v1alpha1", Kind: "ClusterTopologyBinding", Name: "topo", UID: "deleted-ct-uid", Controller: ptr.To(true),
	}}}, Spec: kaiv1alpha1.TopologySpec{Levels: levels("example.com/block", "example.com/rack", "kubernetes.io/hostname")}}
	w := &writes{}
	c := topologyClient(t, w, ct, orphan)

	st, err := New(configv1alpha1.KAISchedulerConfig{}, c).SyncTopology(context.Background(), ct)

	require.NoError(t, err)
	assert.True(t, st.InSync, st.Message)
	got := getTopology(t, c, "topo")
	assert.NotEqual(t, orphan.UID, got.UID)
	assert.True(t, metav1.IsControlledBy(got, ct))
	require.Len(t, w.deleteOpts, 1)
	assert.Equal(t, ptr.To(orphan.UID), w.deleteOpts[0].Preconditions.UID)
}

func TestSyncTopologyReportsWhatKAIRejects(t *testing.T) {
	ct := binding()
	c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(ct).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
			return apierrors.NewInvalid(schema.GroupKind{Group: "kai.scheduler", Kind: "Topology"}, "topo",
				field.ErrorList{field.Invalid(field.NewPath("spec", "levels"), nil, "the kubernetes.io/hostname label can only be used at the lowest level of topology")})
		},
	}).Build()

	st, err := New(configv1alpha1.KAISchedulerConfig{}, c).SyncTopology(context.Background(), ct)

	require.NoError(t, err, "not retried: only a change of the binding helps")
	assert.False(t, st.InSync)
	assert.Contains(t, st.Message, `KAI rejects Topology "topo"`)
	assert.Contains(t, st.Message, "lowest level")
}

func TestBuildTopologyLeavesOutAnAliasThatIsANodeLabel(t *testing.T) {
	ct := binding()
	ct.Spec.Levels[1].Key = "block" // the rack level's key is another level's domain

	got := BuildTopology(ct)

	assert.Equal(t, []kaiv1alpha1.TopologyLevel{
		{NodeLabel: "example.com/block"}, {NodeLabel: "block", Alias: "rack"}, {NodeLabel: "kubernetes.io/hostname", Alias: "host"},
	}, got.Spec.Levels)
}

func TestCompareLevelsNamesTheFirstDifference(t *testing.T) {
	keys := []string{"a", "b"}
	for _, tc := range []struct {
		have []string
		want string
	}{
		{[]string{"a"}, "it lacks level 2 (b)"},
		{[]string{"a", "b", "c"}, "its level 3 (c) is not in the binding"},
		{[]string{"b", "a"}, "its level 1 is b, the binding's is a"},
	} {
		inSync, msg := compareLevels(&kaiv1alpha1.Topology{ObjectMeta: metav1.ObjectMeta{Name: "t"}, Spec: kaiv1alpha1.TopologySpec{Levels: levels(tc.have...)}}, keys)
		assert.False(t, inSync)
		assert.Contains(t, msg, tc.want)
	}
}

func TestTopologyName(t *testing.T) {
	assert.Equal(t, "topo", TopologyName(binding()))
	assert.Equal(t, "topo", TopologyName(withReference(binding(), "other", "x")))
	assert.Equal(t, "cluster-topology", TopologyName(withReference(binding(), "kai-scheduler", "cluster-topology")))
}

func TestSyncPodGangNamesTheBindingsKAITopology(t *testing.T) {
	for _, tc := range []struct {
		name    string
		objs    []client.Object
		wantTop string
	}{
		{"binding without a reference: the Topology named after it", []client.Object{binding()}, "topo"},
		{"binding pointing kai-scheduler elsewhere", []client.Object{withReference(binding(), "kai-scheduler", "cluster-topology")}, "cluster-topology"},
		{"no such binding: its name", nil, "topo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			pg := podGang()
			c := fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(append(tc.objs, pg)...).Build()

			_, _, err := New(configv1alpha1.KAISchedulerConfig{}, c).SyncPodGang(ctx, pg)

			require.NoError(t, err)
			got := &kaiv2alpha2.PodGroup{}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, got))
			want, err := New(configv1alpha1.KAISchedulerConfig{}, nil).BuildPodGroup(pg, tc.wantTop)
			require.NoError(t, err)
			assert.Equal(t, want.Spec, got.Spec)
			assert.Equal(t, tc.wantTop, got.Spec.TopologyConstraint.Topology)
			assert.Equal(t, tc.wantTop, got.Spec.SubGroups[1].TopologyConstraint.Topology)
		})
	}
}

func TestTopologyTypes(t *testing.T) {
	assert.Equal(t, []client.Object{&kaiv1alpha1.Topology{}}, New(configv1alpha1.KAISchedulerConfig{}, nil).TopologyTypes())
}
