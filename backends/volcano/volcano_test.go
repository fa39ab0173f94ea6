package volcano

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
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(s))
	require.NoError(t, schedulerv1alpha1.AddToScheme(s))
	require.NoError(t, volcanov1beta1.AddToScheme(s))
	return s
}

// gpuQueue is the Volcano queue "gpu" in state.
func gpuQueue(state volcanov1beta1.QueueState) *volcanov1beta1.Queue {
	return &volcanov1beta1.Queue{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Status: volcanov1beta1.QueueStatus{State: state}}
}

func cpuMem(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

// gang: 1 leader (2 cpu, 4Gi) and 3 workers (250m, 256Mi), at least 2 of them.
func gang() *builders.PodGangBuilder {
	return builders.PodGang("ns", "inf-0").Backend("volcano").
		PodGroup("inf-0-leader", 1, "inf-0-leader-0").Requests("inf-0-leader", cpuMem("2", "4Gi")).
		PodGroup("inf-0-worker", 2, "inf-0-worker-0", "inf-0-worker-1", "inf-0-worker-2").Requests("inf-0-worker", cpuMem("250m", "256Mi")).
		Priority("high")
}

func subGroup(name string, size int32) volcanov1beta1.SubGroupPolicySpec {
	return volcanov1beta1.SubGroupPolicySpec{
		Name:           name,
		LabelSelector:  &metav1.LabelSelector{MatchLabels: map[string]string{grovev1alpha1.LabelPodClique: name}},
		MatchLabelKeys: []string{grovev1alpha1.LabelPodClique},
		SubGroupSize:   ptr.To(size),
		MinSubGroups:   ptr.To[int32](1),
	}
}

func TestBuildPodGroupHoldsTheWholeGangAndEachCliquesMinimumInItsQueue(t *testing.T) {
	cases := []struct {
		name      string
		pg        *schedulerv1alpha1.PodGang
		wantQueue string
	}{
		{name: "no queue named: Volcano's default queue", pg: gang().Obj(), wantQueue: "default"},
		{name: "the PodCliqueSet's queue", pg: gang().SchedulerQueue("gpu-training").Obj(), wantQueue: "gpu-training"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := BuildPodGroup(tc.pg)

			want := volcanov1beta1.PodGroupSpec{
				MinMember:         3,
				Queue:             tc.wantQueue,
				PriorityClassName: "high",
				MinResources:      ptr.To(cpuMem("2500m", "4608Mi")),
				SubGroupPolicy:    []volcanov1beta1.SubGroupPolicySpec{subGroup("inf-0-leader", 1), subGroup("inf-0-worker", 2)},
			}
			assert.True(t, equality.Semantic.DeepEqual(want, got.Spec), "want %+v\ngot  %+v", want, got.Spec)
			assert.Equal(t, "inf-0", got.Name)
			assert.Equal(t, "ns", got.Namespace)
			assert.Equal(t, map[string]string{grovev1alpha1.LabelManagedBy: "backend-controller", grovev1alpha1.LabelPodGang: "inf-0"}, got.Labels)
		})
	}
}

func TestBuildPodGroupOfAGangWithoutMinimumStillNeedsOnePod(t *testing.T) {
	got := BuildPodGroup(builders.PodGang("ns", "g").PodGroup("g-a", 0, "g-a-0").Obj())

	assert.Equal(t, int32(1), got.Spec.MinMember, "Volcano treats minMember 0 as no gang at all")
	assert.Nil(t, got.Spec.MinResources)
	assert.Equal(t, []volcanov1beta1.SubGroupPolicySpec{subGroup("g-a", 1)}, got.Spec.SubGroupPolicy)
}

func TestSyncPodGangCreatesTheOwnedPodGroupRepairsItAndIsQuietAtRest(t *testing.T) {
	pg := gang().SchedulerQueue("gpu").Obj()
	c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(pg, gpuQueue(volcanov1beta1.QueueStateOpen)).Build()
	b := New(configv1alpha1.VolcanoConfig{}, c)
	ctx := context.Background()

	reason, message, err := b.SyncPodGang(ctx, pg)
	require.NoError(t, err)
	assert.Equal(t, ReasonPodGroupCreated, reason)
	assert.Equal(t, "Volcano PodGroup inf-0 needs 3 pods in queue gpu", message)

	have := &volcanov1beta1.PodGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, have))
	require.Len(t, have.OwnerReferences, 1)
	assert.Equal(t, "PodGang", have.OwnerReferences[0].Kind)
	assert.True(t, ptr.Deref(have.OwnerReferences[0].Controller, false))
	assert.Equal(t, "gpu", have.Spec.Queue)

	rv := have.ResourceVersion
	_, _, err = b.SyncPodGang(ctx, pg)
	require.NoError(t, err)
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, have))
	assert.Equal(t, rv, have.ResourceVersion, "nothing changed: no write")

	have.Spec.MinMember = 1
	have.Spec.Queue = "other"
	require.NoError(t, c.Update(ctx, have))
	_, _, err = b.SyncPodGang(ctx, pg)
	require.NoError(t, err)
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, have))
	assert.Equal(t, int32(3), have.Spec.MinMember, "an edit is repaired")
	assert.Equal(t, "gpu", have.Spec.Queue)
}

func TestSyncPodGangRefusesAQueueVolcanoWouldNeverScheduleFrom(t *testing.T) {
	cases := []struct {
		name    string
		queues  []client.Object
		pg      *schedulerv1alpha1.PodGang
		wantErr string
	}{
		{
			name: "named queue missing", pg: gang().SchedulerQueue("gpu").Obj(),
			wantErr: `spec.schedulerQueueName (the PodCliqueSet's scheduling.grove.io/volcano-queue annotation): Volcano queue "gpu" does not exist`,
		},
		{
			name: "default queue missing", pg: gang().Obj(),
			wantErr: `Volcano queue "default" does not exist`,
		},
		{
			name: "queue closed", pg: gang().SchedulerQueue("gpu").Obj(), queues: []client.Object{gpuQueue(volcanov1beta1.QueueStateClosed)},
			wantErr: `Volcano queue "gpu" is Closed, not Open`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(append(tc.queues, tc.pg)...).Build()

			_, _, err := New(configv1alpha1.VolcanoConfig{}, c).SyncPodGang(context.Background(), tc.pg)

			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantErr)
			list := &volcanov1beta1.PodGroupList{}
			require.NoError(t, c.List(context.Background(), list))
			assert.Empty(t, list.Items, "no PodGroup for a queue that cannot schedule it")
		})
	}
}

func TestPreparePodNamesVolcanoAndThePodGroupInBothAnnotations(t *testing.T) {
	cases := []struct {
		name              string
		schedulerName     string
		labels            map[string]string
		wantSchedulerName string
		wantAnnotations   map[string]string
	}{
		{
			name: "a gang member", labels: map[string]string{grovev1alpha1.LabelPodGang: "inf-0"}, wantSchedulerName: "volcano",
			wantAnnotations: map[string]string{"scheduling.k8s.io/group-name": "inf-0", "scheduling.volcano.sh/group-name": "inf-0"},
		},
		{
			name: "an explicit schedulerName is kept", schedulerName: "volcano-gpu", labels: map[string]string{grovev1alpha1.LabelPodGang: "inf-1"},
			wantSchedulerName: "volcano-gpu",
			wantAnnotations:   map[string]string{"scheduling.k8s.io/group-name": "inf-1", "scheduling.volcano.sh/group-name": "inf-1"},
		},
		{name: "no PodGang label: no group", wantSchedulerName: "volcano"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}, Spec: corev1.PodSpec{SchedulerName: tc.schedulerName}}

			New(configv1alpha1.VolcanoConfig{}, nil).PreparePod(pod)

			assert.Equal(t, tc.wantSchedulerName, pod.Spec.SchedulerName)
			assert.Equal(t, tc.wantAnnotations, pod.Annotations)
		})
	}
}

func volcanoPCS(annotations map[string]string, cliqueQueues ...string) *grovev1alpha1.PodCliqueSet {
	b := builders.PodCliqueSet("ns", "inf")
	for i, q := range cliqueQueues {
		b = b.Clique([]string{"leader", "worker", "router"}[i], 1, func(c *grovev1alpha1.PodCliqueTemplateSpec) {
			if q != "" {
				c.Annotations = map[string]string{grovev1alpha1.AnnotationVolcanoQueue: q}
			}
		})
	}
	pcs := b.Obj()
	pcs.Annotations = annotations
	return pcs
}

func TestValidatePodCliqueSetNamesTheQueueAnnotationThatIsWrong(t *testing.T) {
	key := grovev1alpha1.AnnotationVolcanoQueue
	cases := []struct {
		name string
		pcs  *grovev1alpha1.PodCliqueSet
		want []string
	}{
		{name: "no queue anywhere", pcs: volcanoPCS(nil, "", "")},
		{name: "the PodCliqueSet's queue repeated by a clique", pcs: volcanoPCS(map[string]string{key: "gpu"}, "gpu", "")},
		{name: "cliques agreeing without the PodCliqueSet", pcs: volcanoPCS(nil, "gpu", "gpu")},
		{
			name: "a queue name that is no DNS subdomain", pcs: volcanoPCS(map[string]string{key: "GPU Queue"}, ""),
			want: []string{"metadata.annotations[scheduling.grove.io/volcano-queue]", "RFC 1123"},
		},
		{
			name: "a clique contradicting the PodCliqueSet", pcs: volcanoPCS(map[string]string{key: "gpu"}, "", "cpu"),
			want: []string{"spec.template.cliques[1].annotations[scheduling.grove.io/volcano-queue]", `metadata.annotations[scheduling.grove.io/volcano-queue] says "gpu"`},
		},
		{
			name: "two cliques disagreeing", pcs: volcanoPCS(nil, "gpu", "", "cpu"),
			want: []string{"spec.template.cliques[2].annotations[scheduling.grove.io/volcano-queue]", `spec.template.cliques[0].annotations[scheduling.grove.io/volcano-queue] says "gpu"`},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := New(configv1alpha1.VolcanoConfig{}, nil).ValidatePodCliqueSet(tc.pcs)

			if len(tc.want) == 0 {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			for _, w := range tc.want {
				assert.Contains(t, errs.ToAggregate().Error(), w)
			}
		})
	}
}

func TestValidatePodCliqueSetRefusesARequiredTopologyAndReportsAPreferredOne(t *testing.T) {
	pcs := volcanoPCS(nil, "")
	pcs.Spec.Template.TopologyConstraint = &grovev1alpha1.TopologyConstraint{Pack: &grovev1alpha1.TopologyPackConstraint{Required: "rack"}}
	b := New(configv1alpha1.VolcanoConfig{}, nil)

	errs := b.ValidatePodCliqueSet(pcs)
	require.Len(t, errs, 1)
	assert.Equal(t, "spec.template.topologyConstraint.pack.required", errs[0].Field)

	pcs.Spec.Template.TopologyConstraint = &grovev1alpha1.TopologyConstraint{Pack: &grovev1alpha1.TopologyPackConstraint{Preferred: "host"}}
	assert.Empty(t, b.ValidatePodCliqueSet(pcs))
	assert.Equal(t, []string{`spec.template.topologyConstraint.pack.preferred: preferred topology "host" is ignored by the volcano backend`}, b.NotHonoured(pcs, nil))
}

// noKind answers every read as if the API server served no such kind.
type noKind struct{ client.Reader }

func (noKind) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return &meta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "scheduling.volcano.sh", Kind: "Queue"}}
}

func TestValidatePodCliqueSetInClusterRefusesAQueueThatCannotScheduleIt(t *testing.T) {
	key := grovev1alpha1.AnnotationVolcanoQueue
	withQueues := func(objs ...client.Object) client.Reader {
		return fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(objs...).Build()
	}
	cases := []struct {
		name   string
		reader client.Reader
		old    *grovev1alpha1.PodCliqueSet
		pcs    *grovev1alpha1.PodCliqueSet
		want   string
	}{
		{name: "an open queue", reader: withQueues(gpuQueue(volcanov1beta1.QueueStateOpen)), pcs: volcanoPCS(map[string]string{key: "gpu"}, "")},
		{name: "a queue Volcano has not reported on yet", reader: withQueues(gpuQueue("")), pcs: volcanoPCS(nil, "gpu")},
		{
			name: "a missing queue", reader: withQueues(), pcs: volcanoPCS(map[string]string{key: "gpu"}, ""),
			want: `metadata.annotations[scheduling.grove.io/volcano-queue]: Invalid value: "gpu": Volcano queue "gpu" does not exist`,
		},
		{
			name: "no queue named and no default queue", reader: withQueues(), pcs: volcanoPCS(nil, ""),
			want: `Invalid value: "default": Volcano queue "default" does not exist`,
		},
		{
			name: "a closing queue", reader: withQueues(gpuQueue(volcanov1beta1.QueueStateClosing)), pcs: volcanoPCS(map[string]string{key: "gpu"}, ""),
			want: `Volcano queue "gpu" is Closing, not Open`,
		},
		{
			name: "Volcano not installed", reader: noKind{}, pcs: volcanoPCS(map[string]string{key: "gpu"}, ""),
			want: `scheduling.volcano.sh/v1beta1, Kind=Queue is not served (Volcano is not installed)`,
		},
		{
			name: "an update that keeps the queue reads nothing", reader: noKind{},
			old: volcanoPCS(map[string]string{key: "gpu"}, ""), pcs: volcanoPCS(map[string]string{key: "gpu"}, ""),
		},
		{
			name: "an update that changes the queue is checked", reader: withQueues(),
			old: volcanoPCS(map[string]string{key: "gpu"}, ""), pcs: volcanoPCS(map[string]string{key: "cpu"}, ""),
			want: `Volcano queue "cpu" does not exist`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs, err := New(configv1alpha1.VolcanoConfig{}, nil).ValidatePodCliqueSetInCluster(context.Background(), tc.reader, tc.old, tc.pcs)

			require.NoError(t, err)
			if tc.want == "" {
				assert.Empty(t, errs)
				return
			}
			require.Len(t, errs, 1)
			assert.Contains(t, errs.ToAggregate().Error(), tc.want)
		})
	}
}

func crd(served bool, specProperties map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"versions": []any{
		map[string]any{"name": "v1beta1", "served": served, "schema": map[string]any{"openAPIV3Schema": map[string]any{
			"properties": map[string]any{"spec": map[string]any{"properties": specProperties}},
		}}},
	}}}}
}

func TestHasSubGroupPolicyTellsVolcano114FromOlder(t *testing.T) {
	assert.True(t, hasSubGroupPolicy(crd(true, map[string]any{"minMember": map[string]any{}, "subGroupPolicy": map[string]any{}})))
	assert.False(t, hasSubGroupPolicy(crd(true, map[string]any{"minMember": map[string]any{}})), "Volcano 1.13 would prune the subgroups")
	assert.False(t, hasSubGroupPolicy(crd(false, map[string]any{"subGroupPolicy": map[string]any{}})), "v1beta1 not served")
}
