package kube

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

var (
	plainCfg = configv1alpha1.KubeSchedulerConfig{}
	gangCfg  = configv1alpha1.KubeSchedulerConfig{GangScheduling: true}
)

// podGang has two pod groups (minReplicas 1 and 2) and a required zone key; its pods exist.
func podGang() *schedulerv1alpha1.PodGang {
	return &schedulerv1alpha1.PodGang{
		ObjectMeta: metav1.ObjectMeta{Name: "inf-0", Namespace: "ns", UID: types.UID("pg-uid")},
		Status:     initialized(),
		Spec: schedulerv1alpha1.PodGangSpec{
			PodGroups: []schedulerv1alpha1.PodGroup{
				{Name: "inf-0-router", MinReplicas: 1},
				{Name: "inf-0-worker", MinReplicas: 2},
			},
			TopologyConstraint: &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{
				Required: ptr.To("topology.kubernetes.io/zone"),
			}},
		},
	}
}

func TestBuildWorkloadIsOneGangTemplateWithTheGangMinimumAndTopology(t *testing.T) {
	want := &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{
			Name: "inf-0", Namespace: "ns",
			Labels: map[string]string{"app.kubernetes.io/managed-by": "backend-controller", "grove.io/podgang": "inf-0"},
		},
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{APIGroup: "scheduler.grove.io", Kind: "PodGang", Name: "inf-0"},
			PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{
				Name:             "gang",
				SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 3}},
				SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{
					Topology: []schedulingv1beta1.TopologyConstraint{{Key: "topology.kubernetes.io/zone"}},
				},
			}},
		},
	}

	assert.Equal(t, want, BuildWorkload(podGang()))
}

func TestBuildPodGroupIsTheWorkloadsGangInstance(t *testing.T) {
	want := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{
			Name: "inf-0", Namespace: "ns",
			Labels: map[string]string{"app.kubernetes.io/managed-by": "backend-controller", "grove.io/podgang": "inf-0"},
		},
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:      &schedulingv1beta1.WorkloadReference{WorkloadName: "inf-0", TemplateName: "gang"},
			SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 3}},
			SchedulingConstraints: &schedulingv1beta1.PodGroupSchedulingConstraints{
				Topology: []schedulingv1beta1.TopologyConstraint{{Key: "topology.kubernetes.io/zone"}},
			},
		},
	}

	assert.Equal(t, want, BuildPodGroup(podGang()))
}

func TestBuildOmitsTopologyWithoutARequiredKey(t *testing.T) {
	pg := podGang()
	pg.Spec.TopologyConstraint = &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{
		Preferred: ptr.To("kubernetes.io/hostname"),
	}}

	assert.Nil(t, BuildWorkload(pg).Spec.PodGroupTemplates[0].SchedulingConstraints)
	assert.Nil(t, BuildPodGroup(pg).Spec.SchedulingConstraints)
}

func TestBuildAsksForAtLeastOnePod(t *testing.T) {
	pg := podGang()
	for i := range pg.Spec.PodGroups {
		pg.Spec.PodGroups[i].MinReplicas = 0
	}

	assert.Equal(t, int32(1), BuildPodGroup(pg).Spec.SchedulingPolicy.Gang.MinCount)
	assert.Equal(t, int32(1), BuildWorkload(pg).Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount)
}

func TestPreparePod(t *testing.T) {
	cases := []struct {
		name              string
		cfg               configv1alpha1.KubeSchedulerConfig
		schedulerName     string
		labels            map[string]string
		wantSchedulerName string
		wantGroup         *corev1.PodSchedulingGroup
	}{
		{
			name:              "plain mode sets only the schedulerName",
			cfg:               plainCfg,
			labels:            map[string]string{"grove.io/podgang": "inf-0"},
			wantSchedulerName: "default-scheduler",
		},
		{
			name:              "gang mode also names the PodGang's PodGroup",
			cfg:               gangCfg,
			labels:            map[string]string{"grove.io/podgang": "inf-0"},
			wantSchedulerName: "default-scheduler",
			wantGroup:         &corev1.PodSchedulingGroup{PodGroupName: ptr.To("inf-0")},
		},
		{
			name:              "gang mode without a podgang label names no PodGroup",
			cfg:               gangCfg,
			wantSchedulerName: "default-scheduler",
		},
		{
			name:              "plain mode keeps an existing schedulerName",
			cfg:               plainCfg,
			schedulerName:     "my-scheduler",
			labels:            map[string]string{"grove.io/podgang": "inf-0"},
			wantSchedulerName: "my-scheduler",
		},
		{
			name:              "gang mode keeps an existing schedulerName",
			cfg:               gangCfg,
			schedulerName:     "default-scheduler",
			labels:            map[string]string{"grove.io/podgang": "inf-1"},
			wantSchedulerName: "default-scheduler",
			wantGroup:         &corev1.PodSchedulingGroup{PodGroupName: ptr.To("inf-1")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}, Spec: corev1.PodSpec{SchedulerName: tc.schedulerName}}

			New(tc.cfg, nil).PreparePod(pod)

			assert.Equal(t, tc.wantSchedulerName, pod.Spec.SchedulerName)
			assert.Equal(t, tc.wantGroup, pod.Spec.SchedulingGroup)
		})
	}
}

// pcs has two cliques in one scaling group; constraints are set by the cases.
func pcs() *grovev1alpha1.PodCliqueSet {
	return &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "inf", Namespace: "ns"},
		Spec: grovev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{
				{Name: "router", Spec: grovev1alpha1.PodCliqueSpec{Replicas: 1}},
				{Name: "worker", Spec: grovev1alpha1.PodCliqueSpec{Replicas: 2}},
			},
			PodCliqueScalingGroupConfigs: []grovev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "sg", CliqueNames: []string{"router", "worker"}},
			},
		}},
	}
}

func pack(required, preferred string) *grovev1alpha1.TopologyConstraint {
	return &grovev1alpha1.TopologyConstraint{Pack: &grovev1alpha1.TopologyPackConstraint{
		Required: grovev1alpha1.TopologyDomain(required), Preferred: grovev1alpha1.TopologyDomain(preferred),
	}}
}

type constraintsAt struct {
	pcs, sg, clique1 *grovev1alpha1.TopologyConstraint
}

func (c constraintsAt) apply(p *grovev1alpha1.PodCliqueSet) *grovev1alpha1.PodCliqueSet {
	p.Spec.Template.TopologyConstraint = c.pcs
	p.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = c.sg
	p.Spec.Template.Cliques[1].TopologyConstraint = c.clique1
	return p
}

func fieldPaths(errs field.ErrorList) []string {
	var out []string
	for _, e := range errs {
		out = append(out, e.Field)
	}
	return out
}

func TestValidatePodCliqueSetInPlainModeRejectsEveryRequiredConstraint(t *testing.T) {
	cases := []struct {
		name  string
		at    constraintsAt
		want  []string
		value string
	}{
		{"none", constraintsAt{}, nil, ""},
		{"preferred only", constraintsAt{pcs: pack("", "rack"), clique1: pack("", "host")}, nil, ""},
		{"PodCliqueSet level", constraintsAt{pcs: pack("zone", "")}, []string{"spec.template.topologyConstraint.pack.required"}, "zone"},
		{"scaling-group level", constraintsAt{sg: pack("rack", "")}, []string{"spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required"}, "rack"},
		{"clique level", constraintsAt{clique1: pack("host", "")}, []string{"spec.template.cliques[1].topologyConstraint.pack.required"}, "host"},
		{"every level", constraintsAt{pcs: pack("zone", ""), sg: pack("zone", ""), clique1: pack("zone", "")}, []string{
			"spec.template.topologyConstraint.pack.required",
			"spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required",
			"spec.template.cliques[1].topologyConstraint.pack.required",
		}, "zone"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := New(plainCfg, nil).ValidatePodCliqueSet(tc.at.apply(pcs()))

			assert.Equal(t, tc.want, fieldPaths(errs))
			for _, e := range errs {
				assert.Equal(t, field.ErrorTypeInvalid, e.Type)
				assert.Equal(t, tc.value, e.BadValue)
			}
		})
	}
}

func TestValidatePodCliqueSetInGangModeAllowsRequiredLevelsAndNoPreferredOne(t *testing.T) {
	cases := []struct {
		name string
		at   constraintsAt
		want []string
	}{
		{"none", constraintsAt{}, nil},
		{"PodCliqueSet-level required", constraintsAt{pcs: pack("zone", "")}, nil},
		{"clique-level required equal to the PodCliqueSet-level one", constraintsAt{pcs: pack("zone", ""), clique1: pack("zone", "")}, nil},
		{"scaling-group-level required equal to the PodCliqueSet-level one", constraintsAt{pcs: pack("zone", ""), sg: pack("zone", "")}, nil},
		{"PodCliqueSet-level preferred", constraintsAt{pcs: pack("zone", "rack")}, []string{"spec.template.topologyConstraint.pack.preferred"}},
		{"scaling-group-level preferred", constraintsAt{sg: pack("", "rack")}, []string{"spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.preferred"}},
		{"clique-level preferred", constraintsAt{clique1: pack("", "host")}, []string{"spec.template.cliques[1].topologyConstraint.pack.preferred"}},
		{"clique-level required narrower than the PodCliqueSet-level one (kept by a hierarchical gang)", constraintsAt{pcs: pack("zone", ""), clique1: pack("host", "")}, nil},
		{"scaling-group-level required narrower than the PodCliqueSet-level one", constraintsAt{pcs: pack("zone", ""), sg: pack("rack", "")}, nil},
		{"clique-level required without a PodCliqueSet-level one", constraintsAt{clique1: pack("host", "")}, nil},
		{"scaling-group-level preferred beside a required one", constraintsAt{sg: pack("zone", "rack")}, []string{"spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.preferred"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := New(gangCfg, nil).ValidatePodCliqueSet(tc.at.apply(pcs()))

			assert.Equal(t, tc.want, fieldPaths(errs))
		})
	}
}

func TestNotHonouredInPlainModeReportsGangsAndPreferredLevels(t *testing.T) {
	single := &grovev1alpha1.PodCliqueSet{Spec: grovev1alpha1.PodCliqueSetSpec{Template: grovev1alpha1.PodCliqueSetTemplateSpec{
		Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{{Name: "solo", Spec: grovev1alpha1.PodCliqueSpec{Replicas: 1}}},
	}}}
	assert.Empty(t, New(plainCfg, nil).NotHonoured(single, nil), "a one-pod gang needs no gang scheduling")

	got := New(plainCfg, nil).NotHonoured(pcs(), nil)
	require.Len(t, got, 1, "a gang of 3 pods is not kept together")
	assert.Contains(t, got[0], "gang scheduling")

	single.Spec.Template.Cliques[0].TopologyConstraint = pack("", "host")
	got = New(plainCfg, nil).NotHonoured(single, nil)
	require.Len(t, got, 1)
	assert.Contains(t, got[0], "spec.template.cliques[0].topologyConstraint.pack.preferred")
	assert.Contains(t, got[0], `"host"`)

	got = New(plainCfg, nil).NotHonoured(constraintsAt{pcs: pack("", "rack"), clique1: pack("", "host")}.apply(pcs()), nil)
	require.Len(t, got, 3)
	assert.Contains(t, got[0], "gang scheduling")
	assert.Contains(t, got[1], "spec.template.topologyConstraint.pack.preferred")
	assert.Contains(t, got[2], "spec.template.cliques[1].topologyConstraint.pack.preferred")
}

func TestAPodCliqueSetQueuedGangByGangLeavesItsPackLevelsToKueue(t *testing.T) {
	queued := func(owner bool) *grovev1alpha1.PodCliqueSet {
		p := constraintsAt{pcs: pack("rack", "host"), clique1: pack("host", "")}.apply(pcs())
		p.Labels = map[string]string{grovev1alpha1.LabelKueueQueueName: "team-a"}
		if owner {
			p.Spec.QueueAdmission = grovev1alpha1.QueueAdmissionOwner
		}
		return p
	}
	assert.Empty(t, New(plainCfg, nil).ValidatePodCliqueSet(queued(false)), "Kueue's topology-aware scheduling places required levels")
	got := New(plainCfg, nil).NotHonoured(queued(false), nil)
	require.Len(t, got, 1, "preferred levels go to Kueue too: only the pod-by-pod placement is reported")
	assert.Contains(t, got[0], "gang scheduling")

	assert.Equal(t, []string{"spec.template.topologyConstraint.pack.required", "spec.template.cliques[1].topologyConstraint.pack.required"},
		fieldPaths(New(plainCfg, nil).ValidatePodCliqueSet(queued(true))), "admitted through its owner, no gang reaches Kueue on its own")
}

func TestNotHonouredInGangModeReportsOnlyFlatGangs(t *testing.T) {
	gang := func(groups ...string) *schedulerv1alpha1.PodGang {
		pg := &schedulerv1alpha1.PodGang{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "inf-0"}}
		for i, name := range groups {
			g := fmt.Sprintf("inf-0-%c", 'a'+i)
			pg.Spec.PodGroups = append(pg.Spec.PodGroups, schedulerv1alpha1.PodGroup{Name: g, MinReplicas: 1})
			pg.Status.SchedulingGroups = append(pg.Status.SchedulingGroups, schedulerv1alpha1.SchedulingGroup{PodGroup: g, Name: name})
		}
		return pg
	}
	cliquePacked := constraintsAt{pcs: pack("zone", "rack"), clique1: pack("host", "")}.apply(pcs())
	cases := []struct {
		name  string
		gangs map[string]*schedulerv1alpha1.PodGang
		want  []string
	}{
		{name: "no gang observed yet", gangs: nil},
		{name: "a hierarchical gang keeps every minimum", gangs: map[string]*schedulerv1alpha1.PodGang{"inf-0": gang("inf-0-a", "inf-0-b")}},
		{name: "a flat gang keeps neither per-clique minimums nor a clique's own pack level, and says how to",
			gangs: map[string]*schedulerv1alpha1.PodGang{"inf-0": gang("inf-0", "inf-0")},
			want: []string{"per-clique minimums: the pod groups of PodGang inf-0 share one scheduler group and its total minimum; " + CompositePodGroupHelp,
				`spec.template.cliques[1].topologyConstraint.pack.required: a flat gang packs only at the PodCliqueSet's level, not at "host"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, New(gangCfg, nil).NotHonoured(cliquePacked, tc.gangs))
		})
	}
}

func TestOwnedTypesAreTheWorkloadAPIKindsOnlyInGangMode(t *testing.T) {
	assert.Empty(t, New(plainCfg, nil).OwnedTypes())
	assert.Equal(t, []client.Object{&schedulingv1beta1.Workload{}, &schedulingv1beta1.PodGroup{}}, New(gangCfg, nil).OwnedTypes())
}

func TestNameAndPodSchedulerName(t *testing.T) {
	b := New(gangCfg, nil)
	assert.Equal(t, configv1alpha1.SchedulerName("kube-scheduler"), b.Name())
	assert.Equal(t, "default-scheduler", b.PodSchedulerName())
}

func newScheme(t *testing.T, withWorkloadAPI bool) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if withWorkloadAPI {
		require.NoError(t, clientgoscheme.AddToScheme(s))
	} else {
		require.NoError(t, corev1.AddToScheme(s))
	}
	require.NoError(t, schedulerv1alpha1.AddToScheme(s))
	return s
}

func TestInitInGangModeNeedsTheWorkloadAPI(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schedulingv1beta1.SchemeGroupVersion.WithKind("Workload"), meta.RESTScopeNamespace)
	mapper.Add(schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup"), meta.RESTScopeNamespace)
	served := fake.NewClientBuilder().WithScheme(newScheme(t, true)).WithRESTMapper(mapper).Build()
	require.NoError(t, New(gangCfg, served).Init(context.Background()))

	onlyWorkload := meta.NewDefaultRESTMapper(nil)
	onlyWorkload.Add(schedulingv1beta1.SchemeGroupVersion.WithKind("Workload"), meta.RESTScopeNamespace)
	partial := fake.NewClientBuilder().WithScheme(newScheme(t, true)).WithRESTMapper(onlyWorkload).Build()
	err := New(gangCfg, partial).Init(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Kind=PodGroup is not served")

	missing := fake.NewClientBuilder().WithScheme(newScheme(t, false)).WithRESTMapper(meta.NewDefaultRESTMapper(nil)).Build()
	err = New(gangCfg, missing).Init(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Kind=Workload is not served")
	assert.Contains(t, err.Error(), "GenericWorkload=true")

	assert.NoError(t, New(plainCfg, missing).Init(context.Background()), "plain mode needs no API")
}

func requireControlledByPodGang(t *testing.T, obj client.Object, pg *schedulerv1alpha1.PodGang) {
	t.Helper()
	assert.Equal(t, []metav1.OwnerReference{{
		APIVersion: "scheduler.grove.io/v1alpha1", Kind: "PodGang", Name: pg.Name, UID: pg.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}}, obj.GetOwnerReferences())
}

// gangBackend is the backend in gang mode over a fake client holding objs.
func gangBackend(t *testing.T, objs ...client.Object) (*Backend, client.Client) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(newScheme(t, true)).WithObjects(objs...).Build()
	return New(gangCfg, c), c
}

func TestSyncPodGangInGangModeCreatesOwnedWorkloadAndPodGroup(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	b, c := gangBackend(t, pg)

	reason, msg, err := b.SyncPodGang(ctx, pg)

	require.NoError(t, err)
	assert.Equal(t, "WorkloadCreated", reason)
	assert.Contains(t, msg, "3 pods")
	w := &schedulingv1beta1.Workload{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, w))
	assert.Equal(t, BuildWorkload(pg).Spec, w.Spec)
	assert.Equal(t, map[string]string{"app.kubernetes.io/managed-by": "backend-controller", "grove.io/podgang": "inf-0"}, w.Labels)
	requireControlledByPodGang(t, w, pg)
	g := &schedulingv1beta1.PodGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, g))
	assert.Equal(t, BuildPodGroup(pg).Spec, g.Spec)
	requireControlledByPodGang(t, g, pg)
}

// initialized is the status of a PodGang whose pods all exist, as the operator writes it.
func initialized() schedulerv1alpha1.PodGangStatus {
	return schedulerv1alpha1.PodGangStatus{Conditions: []metav1.Condition{{
		Type: schedulerv1alpha1.ConditionInitialized, Status: metav1.ConditionTrue, Reason: schedulerv1alpha1.ReasonReady,
	}}}
}

func TestSyncPodGangInGangModeHoldsANewGangsObjectsUntilItsPodsExist(t *testing.T) {
	for _, composite := range []bool{false, true} {
		t.Run(fmt.Sprintf("composite=%v", composite), func(t *testing.T) {
			ctx := context.Background()
			pg := podGang()
			pg.Status = schedulerv1alpha1.PodGangStatus{}
			b, c := gangBackend(t, pg)
			b.SetComposite(composite)

			reason, msg, err := b.SyncPodGang(ctx, pg)

			require.NoError(t, err)
			assert.Equal(t, ReasonAwaitingPods, reason)
			assert.Contains(t, msg, "once its pods exist")
			assert.Contains(t, msg, "3 pods")
			for _, list := range []client.ObjectList{&schedulingv1beta1.WorkloadList{}, &schedulingv1beta1.PodGroupList{}, &schedulingv1alpha3.CompositePodGroupList{}} {
				require.NoError(t, c.List(ctx, list))
				assert.Zero(t, meta.LenList(list), "no %T before the pods exist", list)
			}

			pg.Status = initialized()
			reason, _, err = b.SyncPodGang(ctx, pg)

			require.NoError(t, err)
			assert.NotEqual(t, ReasonAwaitingPods, reason)
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, &schedulingv1beta1.Workload{}), "the Workload once the pods exist")
			groups := &schedulingv1beta1.PodGroupList{}
			require.NoError(t, c.List(ctx, groups))
			assert.NotZero(t, meta.LenList(groups))
		})
	}
}

func TestSyncPodGangInGangModeKeepsItsObjectsInStepWhileAPodIsMissing(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	b, c := gangBackend(t, pg)
	_, _, err := b.SyncPodGang(ctx, pg)
	require.NoError(t, err)

	// A pod is lost (Initialized goes False) and the gang asks for one more worker meanwhile.
	pg.Status = schedulerv1alpha1.PodGangStatus{Conditions: []metav1.Condition{{
		Type: schedulerv1alpha1.ConditionInitialized, Status: metav1.ConditionFalse, Reason: schedulerv1alpha1.ReasonPodsPending,
	}}}
	pg.Spec.PodGroups[1].MinReplicas = 3
	reason, _, err := b.SyncPodGang(ctx, pg)

	require.NoError(t, err)
	assert.Equal(t, ReasonWorkloadCreated, reason)
	g := &schedulingv1beta1.PodGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, g))
	assert.Equal(t, BuildPodGroup(pg).Spec.SchedulingPolicy, g.Spec.SchedulingPolicy, "the existing PodGroup follows the gang")
}

func TestSyncPodGangInGangModeWritesNothingWhenNothingChanged(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	b, c := gangBackend(t, pg)
	_, _, err := b.SyncPodGang(ctx, pg)
	require.NoError(t, err)
	key := client.ObjectKey{Namespace: "ns", Name: "inf-0"}
	w, g := &schedulingv1beta1.Workload{}, &schedulingv1beta1.PodGroup{}
	require.NoError(t, c.Get(ctx, key, w))
	require.NoError(t, c.Get(ctx, key, g))

	_, _, err = b.SyncPodGang(ctx, pg)

	require.NoError(t, err)
	w2, g2 := &schedulingv1beta1.Workload{}, &schedulingv1beta1.PodGroup{}
	require.NoError(t, c.Get(ctx, key, w2))
	require.NoError(t, c.Get(ctx, key, g2))
	assert.Equal(t, w.ResourceVersion, w2.ResourceVersion)
	assert.Equal(t, w.UID, w2.UID)
	assert.Equal(t, g.ResourceVersion, g2.ResourceVersion)
	assert.Equal(t, g.UID, g2.UID)
}

// The API server defaults a PodGroup's spec.disruptionMode to {single: {}} and its Priority
// admission sets spec.priority (seen against kube-apiserver v1.37 with GenericWorkload): the
// PodGroup it stores is never DeepEqual to BuildPodGroup, so ensure deletes it on every sync.
func TestSyncPodGangInGangModeKeepsAPodGroupTheAPIServerDefaulted(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	b, c := gangBackend(t, pg)
	_, _, err := b.SyncPodGang(ctx, pg)
	require.NoError(t, err)
	key := client.ObjectKey{Namespace: "ns", Name: "inf-0"}
	stored := &schedulingv1beta1.PodGroup{}
	require.NoError(t, c.Get(ctx, key, stored))
	stored.Spec.DisruptionMode = &schedulingv1beta1.DisruptionMode{Single: &schedulingv1beta1.SingleDisruptionMode{}}
	stored.Spec.Priority = ptr.To[int32](0)
	require.NoError(t, c.Update(ctx, stored))
	require.NoError(t, c.Get(ctx, key, stored))

	_, _, err = b.SyncPodGang(ctx, pg)

	require.NoError(t, err)
	after := &schedulingv1beta1.PodGroup{}
	require.NoError(t, c.Get(ctx, key, after))
	assert.Equal(t, stored.ResourceVersion, after.ResourceVersion, "the PodGroup was deleted and recreated")
}

func TestSyncPodGangInGangModeRepairsAnEditedPodGroup(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	b, c := gangBackend(t, pg)
	_, _, err := b.SyncPodGang(ctx, pg)
	require.NoError(t, err)
	key := client.ObjectKey{Namespace: "ns", Name: "inf-0"}
	w := &schedulingv1beta1.Workload{}
	require.NoError(t, c.Get(ctx, key, w))
	g := &schedulingv1beta1.PodGroup{}
	require.NoError(t, c.Get(ctx, key, g))
	g.Spec.SchedulingPolicy.Gang.MinCount = 1
	require.NoError(t, c.Update(ctx, g))

	_, _, err = b.SyncPodGang(ctx, pg)

	require.NoError(t, err)
	repaired := &schedulingv1beta1.PodGroup{}
	require.NoError(t, c.Get(ctx, key, repaired))
	assert.Equal(t, int32(3), repaired.Spec.SchedulingPolicy.Gang.MinCount)
	assert.Equal(t, BuildPodGroup(pg).Spec, repaired.Spec)
	requireControlledByPodGang(t, repaired, pg)
	unchanged := &schedulingv1beta1.Workload{}
	require.NoError(t, c.Get(ctx, key, unchanged))
	assert.Equal(t, w.ResourceVersion, unchanged.ResourceVersion, "the Workload did not drift")
}

func TestSyncPodGangInGangModeTakesOverAnObjectItDoesNotControl(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	stray := BuildPodGroup(pg)
	c := fake.NewClientBuilder().WithScheme(newScheme(t, true)).WithObjects(pg, stray).Build()

	_, _, err := New(gangCfg, c).SyncPodGang(ctx, pg)

	require.NoError(t, err)
	g := &schedulingv1beta1.PodGroup{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "inf-0"}, g))
	requireControlledByPodGang(t, g, pg)
}

func TestSyncPodGangInPlainModeCreatesNothing(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	c := fake.NewClientBuilder().WithScheme(newScheme(t, true)).WithObjects(pg).Build()

	reason, _, err := New(plainCfg, c).SyncPodGang(ctx, pg)

	require.NoError(t, err)
	assert.Equal(t, "PodsScheduledIndividually", reason)
	workloads := &schedulingv1beta1.WorkloadList{}
	require.NoError(t, c.List(ctx, workloads))
	assert.Empty(t, workloads.Items)
	groups := &schedulingv1beta1.PodGroupList{}
	require.NoError(t, c.List(ctx, groups))
	assert.Empty(t, groups.Items)
}

func TestOnPodGangDeleteIsANoOp(t *testing.T) {
	assert.NoError(t, New(gangCfg, nil).OnPodGangDelete(context.Background(), podGang()))
}

// An API server without the TopologyAwareWorkloadScheduling gate drops schedulingConstraints
// silently; the sync must say so instead of reporting a gang that will not be packed as ready.
func TestSyncPodGangReportsTopologyTheAPIServerDropped(t *testing.T) {
	ctx := context.Background()
	pg := podGang()
	require.NotNil(t, BuildPodGroup(pg).Spec.SchedulingConstraints, "the fixture asks for a topology")
	c := fake.NewClientBuilder().WithScheme(newScheme(t, true)).WithObjects(pg).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			switch o := obj.(type) {
			case *schedulingv1beta1.PodGroup:
				o.Spec.SchedulingConstraints = nil
			case *schedulingv1beta1.Workload:
				for i := range o.Spec.PodGroupTemplates {
					o.Spec.PodGroupTemplates[i].SchedulingConstraints = nil
				}
			}
			return c.Create(ctx, obj, opts...)
		},
	}).Build()

	_, _, err := New(gangCfg, c).SyncPodGang(ctx, pg)

	require.Error(t, err)
	assert.Contains(t, err.Error(), "TopologyAwareWorkloadScheduling")
}
