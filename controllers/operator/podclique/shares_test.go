package podclique

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	volcanov1beta1 "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/operator/coherent"
	"github.com/kubegrove/grove/test/builders"
)

// midUpdate starts the PodGangMap of replica 0 of PodCliqueSet "inf" after the first step of a
// Coherent update to v2: the new anchor holds 2 router pods and prefill replica 0, the old one
// (epoch 100) the other 3 router pods, the old tail prefill replica 1.
func midUpdate() *builders.PodGangMapBuilder {
	return builders.PodGangMap("ns", "inf-0").
		Anchor("100", "v1").Pods("inf-0-router", 3).
		Tail("101", "v1").DependsOn("100").GroupReplicas("prefill", 1).
		Anchor("200", "v2").Pods("inf-0-router", 2).GroupReplicas("prefill", 0)
}

func coherentClique(name string, replicas int32) *builders.PodCliqueBuilder {
	return builders.PodClique("ns", name).OfReplica("inf", "0").Replicas(replicas, 1).UpdateStrategy(grovev1alpha1.CoherentStrategy).GenerationHash("v2")
}

func TestACoherentCliqueJoinsThePodGangsItsPodGangMapSays(t *testing.T) {
	for _, tc := range []struct {
		name  string
		pclq  *grovev1alpha1.PodClique
		pgm   *grovev1alpha1.PodGangMap
		known bool
		want  []coherent.Share
	}{
		{name: "a standalone clique: the new anchor's indices first, the old anchor's after",
			pclq: coherentClique("inf-0-router", 5).Obj(), pgm: midUpdate().Obj(), known: true,
			want: []coherent.Share{{PodGang: "inf-0-200", From: 0, Replicas: 2, Current: true}, {PodGang: "inf-0-100", From: 2, Replicas: 3}}},
		{name: "a scaling-group member joins the gang its group gave it",
			pclq: coherentClique("inf-0-prefill-0-leader", 1).OfGroupReplica("inf-0-prefill", "0").InGang("inf-0-200").Obj(), pgm: midUpdate().Obj(), known: true,
			want: []coherent.Share{{PodGang: "inf-0-200", Replicas: 1, Current: true}}},
		{name: "a member of a tail replica joins its own gang, placed after its anchor",
			pclq: coherentClique("inf-0-prefill-1-leader", 1).OfGroupReplica("inf-0-prefill", "1").InGang("inf-0-101-prefill-1").Obj(), pgm: midUpdate().Obj(), known: true,
			want: []coherent.Share{{PodGang: "inf-0-101-prefill-1", Replicas: 1, Current: true, After: []string{"inf-0-100"}}}},
		{name: "a member its group placed in no gang yet joins nothing yet",
			pclq: coherentClique("inf-0-prefill-2-leader", 1).OfGroupReplica("inf-0-prefill", "2").Obj(), pgm: midUpdate().Obj(), known: true},
		{name: "without its PodGangMap the clique waits", pclq: coherentClique("inf-0-router", 5).Obj()},
		{name: "a clique of another strategy joins its one PodGang",
			pclq: builders.PodClique("ns", "inf-0-router").OfReplica("inf", "0").InGang("inf-0").Obj(), known: true,
			want: []coherent.Share{{PodGang: "inf-0", Replicas: 1, Current: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fakeClient(t)
			if tc.pgm != nil {
				b = b.WithObjects(tc.pgm)
			}
			r := reconcilerFor(t, b.Build())

			got, known, err := r.shares(context.Background(), tc.pclq)

			require.NoError(t, err)
			assert.Equal(t, tc.known, known)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestUnderCoherentOnlyOutdatedPodsOfANewShareAreReplaced(t *testing.T) {
	shares := []coherent.Share{{PodGang: "inf-0-200", From: 0, Replicas: 2, Current: true}, {PodGang: "inf-0-100", From: 2, Replicas: 3}}
	active := []*corev1.Pod{pod(0, "old", true), pod(1, "new", true), pod(2, "old", true), pod(3, "old", false), pod(4, "old", true), pod(5, "new", true)}
	shares = append(shares, coherent.Share{PodGang: "inf-0-300", From: 5, Replicas: 1, Current: true})
	for i, gang := range []string{"inf-0-100", "inf-0-200", "inf-0-100", "inf-0-100", "inf-0-100", "inf-0-200"} {
		active[i].Labels[grovev1alpha1.LabelPodGang] = gang
	}

	victims := coherentVictims(active, nil, shares, "new")

	var names []string
	for _, p := range victims {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"c-0", "c-5"}, names,
		"index 0 moved to the new revision, index 5 to another gang (a group replica is replaced whole); the old share's pods stay, Ready or not")
	assert.Len(t, coherentVictims(active, []*corev1.Pod{active[0]}, shares, "new"), 1, "a pod being deleted is not deleted again")
}

func TestUnderCoherentAPodsGangIsNotPartOfItsTemplate(t *testing.T) {
	a := coherentClique("inf-0-prefill-0-leader", 1).InGang("inf-0-100").Obj()
	b := coherentClique("inf-0-prefill-0-leader", 1).InGang("inf-0-200").Obj()
	assert.Equal(t, PodTemplateHash(a), PodTemplateHash(b))

	legacyA := builders.PodClique("ns", "inf-0-prefill-0-leader").InGang("inf-0").Obj()
	legacyB := builders.PodClique("ns", "inf-0-prefill-0-leader").InGang("inf-0-prefill-0").Obj()
	assert.NotEqual(t, PodTemplateHash(legacyA), PodTemplateHash(legacyB), "other strategies keep the hash their pods were made with")
}

func TestAPodMadeUnderRollingRecreateIsAdoptedIntoItsCoherentGangNotReplaced(t *testing.T) {
	legacy := builders.PodClique("ns", "inf-0-router").OfReplica("inf", "0").InGang("inf-0").Replicas(2, 1).GenerationHash("v1").Obj()
	pclq := legacy.DeepCopy()
	pclq.Spec.UpdateStrategy = grovev1alpha1.CoherentStrategy
	delete(pclq.Labels, grovev1alpha1.LabelPodGang)
	pgm := builders.PodGangMap("ns", "inf-0").Anchor("100", "v1").Pods("inf-0-router", 2).Obj()
	adoptable := podBuilder("ns", "c", 0, PodTemplateHash(legacy), true).Label(grovev1alpha1.LabelPodGang, "inf-0").Obj()
	other := podBuilder("ns", "c", 1, "another-template", true).Label(grovev1alpha1.LabelPodGang, "inf-0").Obj()
	c := fakeClient(t).WithObjects(pclq, pgm, adoptable, other).Build()
	r := reconcilerFor(t, c)
	shares, _, err := r.shares(context.Background(), pclq)
	require.NoError(t, err)
	p := &pass{pclq: pclq, active: []*corev1.Pod{adoptable.DeepCopy(), other.DeepCopy()}, hash: PodTemplateHash(pclq), shares: shares}

	require.NoError(t, r.adopt(context.Background(), p))

	got := &corev1.Pod{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(adoptable), got))
	assert.Equal(t, PodTemplateHash(pclq), got.Labels[grovev1alpha1.LabelPodTemplateHash], "the pod made under RollingRecreate carries the Coherent hash")
	assert.Equal(t, "inf-0-100", got.Labels[grovev1alpha1.LabelPodGang], "and the gang its share gives it")
	assert.Equal(t, []string{"c-1"}, names(coherentVictims(p.active, nil, shares, p.hash)), "only the pod of another template is replaced")
}

// backendsReconcilerFor is a Reconciler over c with the KAI, scheduler-plugins and Volcano
// backends enabled beside kube-scheduler (the default).
func backendsReconcilerFor(t *testing.T, c client.Client) *Reconciler {
	t.Helper()
	registry, err := backends.PodPreparers(configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{
		{Name: configv1alpha1.SchedulerNameKube, Default: true},
		{Name: configv1alpha1.SchedulerNameKAI},
		{Name: configv1alpha1.SchedulerNamePlugins},
		{Name: configv1alpha1.SchedulerNameVolcano},
	}})
	require.NoError(t, err)
	return &Reconciler{Client: slimPods{c}, Recorder: events.NewFakeRecorder(10), Backends: registry}
}

// gangOnPod is where each backend names a pod's gang.
var gangOnPod = []struct {
	scheduler string
	gang      func(p *corev1.Pod) string
}{
	{"kai-scheduler", func(p *corev1.Pod) string { return p.Annotations[kaiv2alpha2.PodGroupNameAnnotation] }},
	{configv1alpha1.DefaultSchedulerPluginsSchedulerName, func(p *corev1.Pod) string { return p.Labels[schedv1alpha1.PodGroupLabel] }},
	{configv1alpha1.VolcanoPodSchedulerName, func(p *corev1.Pod) string { return p.Annotations[volcanov1beta1.KubeGroupNameAnnotationKey] }},
}

func TestAStandaloneCoherentPodNamesItsSharesGangToEveryBackend(t *testing.T) {
	for _, tc := range gangOnPod {
		t.Run(tc.scheduler, func(t *testing.T) {
			pclq := builders.PodClique("ns", "inf-0-router").OfReplica("inf", "0").Replicas(3, 1).UpdateStrategy(grovev1alpha1.CoherentStrategy).Obj()
			pclq.Spec.PodSpec.SchedulerName = tc.scheduler
			delete(pclq.Labels, grovev1alpha1.LabelPodGang)
			r := backendsReconcilerFor(t, fakeClient(t).Build())
			backend := r.Backends.ForPodScheduler(tc.scheduler)
			require.NotNil(t, backend)

			pod := buildPod(pclq, 2, PodTemplateHash(pclq), backend, nil, "inf-0-200")

			assert.Equal(t, "inf-0-200", pod.Labels[grovev1alpha1.LabelPodGang])
			assert.Equal(t, "inf-0-200", tc.gang(pod), "the backend names the share's gang: its scheduler counts the pod in it")
		})
	}
}

func TestAnAdoptedPodNamesItsNewGangToItsBackend(t *testing.T) {
	for _, tc := range gangOnPod {
		t.Run(tc.scheduler, func(t *testing.T) {
			legacy := builders.PodClique("ns", "inf-0-router").OfReplica("inf", "0").InGang("inf-0").Replicas(1, 1).GenerationHash("v1").Obj()
			legacy.Spec.PodSpec.SchedulerName = tc.scheduler
			pclq := legacy.DeepCopy()
			pclq.Spec.UpdateStrategy = grovev1alpha1.CoherentStrategy
			delete(pclq.Labels, grovev1alpha1.LabelPodGang)
			pgm := builders.PodGangMap("ns", "inf-0").Anchor("100", "v1").Pods("inf-0-router", 1).Obj()
			c := fakeClient(t).WithObjects(pclq, pgm).Build()
			r := backendsReconcilerFor(t, c)
			backend := r.Backends.ForPodScheduler(tc.scheduler)
			require.NotNil(t, backend)
			adoptable := buildPod(legacy, 0, PodTemplateHash(legacy), backend, nil, "")
			require.Equal(t, "inf-0", tc.gang(adoptable), "made under RollingRecreate in the replica's gang")
			require.NoError(t, c.Create(context.Background(), adoptable))
			shares, _, err := r.shares(context.Background(), pclq)
			require.NoError(t, err)
			p := &pass{pclq: pclq, active: []*corev1.Pod{adoptable.DeepCopy()}, hash: PodTemplateHash(pclq), shares: shares}

			require.NoError(t, r.adopt(context.Background(), p))

			got := &corev1.Pod{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(adoptable), got))
			assert.Equal(t, "inf-0-100", got.Labels[grovev1alpha1.LabelPodGang])
			assert.Equal(t, "inf-0-100", tc.gang(got), "the backend's name of the gang follows the adoption")
		})
	}
}
