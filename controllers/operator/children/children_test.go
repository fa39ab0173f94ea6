package children

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func pcsWith(startup grovev1alpha1.CliqueStartupType) *grovev1alpha1.PodCliqueSet {
	clique := func(name string, after ...string) *grovev1alpha1.PodCliqueTemplateSpec {
		return &grovev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: grovev1alpha1.PodCliqueSpec{Replicas: 2, StartsAfter: after}}
	}
	return &grovev1alpha1.PodCliqueSet{
		Spec: grovev1alpha1.PodCliqueSetSpec{Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			StartupType: ptr.To(startup),
			Cliques:     []*grovev1alpha1.PodCliqueTemplateSpec{clique("router"), clique("leader", "router"), clique("worker", "leader")},
			PodCliqueScalingGroupConfigs: []grovev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "prefill", CliqueNames: []string{"leader", "worker"}, Replicas: ptr.To[int32](3), MinAvailable: ptr.To[int32](2)},
			},
		}},
	}
}

func TestParentPodCliquesResolveWithinTheReplica(t *testing.T) {
	pcs := pcsWith(grovev1alpha1.CliqueStartupTypeExplicit)
	pcs.Name = "inf"
	group := &ScalingGroup{Name: "inf-1-prefill", ConfigName: "prefill", Replica: 2}
	cases := []struct {
		name   string
		clique string
		group  *ScalingGroup
		want   []string
	}{
		{"standalone with no parents", "router", nil, nil},
		{"group member after a standalone clique", "leader", group, []string{"inf-1-router"}},
		{"group member after a member of its own group replica", "worker", group, []string{"inf-1-prefill-2-leader"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tmpl := Template(pcs, tc.clique)
			assert.Equal(t, tc.want, PodClique(pcs, 1, tmpl, tc.group, "gang").Spec.StartsAfter)
		})
	}

	t.Run("standalone after a group member waits for the base-gang group replicas", func(t *testing.T) {
		p := pcsWith(grovev1alpha1.CliqueStartupTypeExplicit)
		p.Name = "inf"
		p.Spec.Template.Cliques[0].Spec.StartsAfter = []string{"worker"}
		assert.Equal(t, []string{"inf-0-prefill-0-worker", "inf-0-prefill-1-worker"}, PodClique(p, 0, Template(p, "router"), nil, "inf-0").Spec.StartsAfter)
	})
}

func TestParentCliquesFollowTheStartupType(t *testing.T) {
	cases := []struct {
		startup grovev1alpha1.CliqueStartupType
		clique  string
		want    []string
	}{
		{grovev1alpha1.CliqueStartupTypeAnyOrder, "worker", nil},
		{grovev1alpha1.CliqueStartupTypeInOrder, "router", nil},
		{grovev1alpha1.CliqueStartupTypeInOrder, "worker", []string{"leader"}},
		{grovev1alpha1.CliqueStartupTypeExplicit, "leader", []string{"router"}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, ParentCliques(pcsWith(tc.startup), tc.clique), "%s %s", tc.startup, tc.clique)
	}
}

func TestPodCliqueCarriesLabelsGangAndDefaults(t *testing.T) {
	pcs := pcsWith(grovev1alpha1.CliqueStartupTypeInOrder)
	pcs.Name, pcs.Namespace = "inf", "ns"
	tmpl := Template(pcs, "worker")
	tmpl.Labels = map[string]string{"team": "a", grovev1alpha1.LabelPartOf: "spoofed"}
	g := GroupOf(pcs, "worker")
	pclq := PodClique(pcs, 1, tmpl, &ScalingGroup{Name: "inf-1-prefill", ConfigName: g.Name, Replica: 2, TemplateNumPods: GroupTemplateNumPods(pcs, g)}, "inf-1-prefill-0")

	assert.Equal(t, "inf-1-prefill-2-worker", pclq.Name)
	assert.Equal(t, "inf", pclq.Labels[grovev1alpha1.LabelPartOf], "template labels cannot override the operator's")
	assert.Equal(t, "a", pclq.Labels["team"])
	assert.Equal(t, "inf-1-prefill-0", pclq.Labels[grovev1alpha1.LabelPodGang])
	assert.Equal(t, "inf-1", pclq.Labels[grovev1alpha1.LabelBasePodGang], "a scaled gang's member names its base gang")
	inBase := PodClique(pcs, 1, tmpl, &ScalingGroup{Name: "inf-1-prefill", ConfigName: g.Name, Replica: 0, TemplateNumPods: GroupTemplateNumPods(pcs, g)}, "inf-1")
	assert.NotContains(t, inBase.Labels, grovev1alpha1.LabelBasePodGang, "a base-gang member carries no base-podgang label")
	assert.Equal(t, "2", pclq.Labels[grovev1alpha1.LabelPodCliqueScalingGroupReplicaIndex])
	assert.Equal(t, ptr.To[int32](4), pclq.Spec.ScalingGroupTemplateNumPods)
	assert.Equal(t, ptr.To(Template(pcs, "leader").Spec.Replicas), pclq.Spec.ScalingGroupPodIndexOffset, "the workers' pods are counted after the leader's")
	leader := PodClique(pcs, 1, Template(pcs, "leader"), &ScalingGroup{Name: "inf-1-prefill", ConfigName: g.Name, Replica: 2, TemplateNumPods: GroupTemplateNumPods(pcs, g)}, "inf-1-prefill-0")
	assert.Equal(t, ptr.To[int32](0), leader.Spec.ScalingGroupPodIndexOffset, "the first member clique starts at 0")
	assert.Equal(t, []string{"inf-1-prefill-2-leader"}, pclq.Spec.StartsAfter)
	assert.Empty(t, pclq.Annotations, "the PodClique carries its template's annotations only")
	assert.Equal(t, grovev1alpha1.InheritedSpec{PodCliqueSetGenerationHash: GenerationHash(pcs), UpdateStrategy: grovev1alpha1.RollingRecreateStrategy,
		WorkloadType: grovev1alpha1.WorkloadTypeInference, TemplateReplicas: ptr.To[int32](2)}, pclq.Spec.InheritedSpec, "what it needs of the PodCliqueSet is in its spec")
	assert.Equal(t, ptr.To[int32](2), pclq.Spec.MinAvailable, "minAvailable defaults to replicas")
}

func TestPodCliqueRoleDefaultsToTheCliqueNameWithoutChangingTheGenerationHash(t *testing.T) {
	pcs := pcsWith(grovev1alpha1.CliqueStartupTypeAnyOrder)
	tmpl := Template(pcs, "worker")
	tmpl.Spec.RoleName = "worker"
	defaulted := GenerationHash(pcs)
	tmpl.Spec.RoleName = ""
	pclq := PodClique(pcs, 0, tmpl, nil, "pg")
	assert.Equal(t, "worker", pclq.Spec.RoleName, "a PodClique always has a role")
	assert.Equal(t, defaulted, GenerationHash(pcs), "defaulting the roleName later must not roll the pods")
}

func TestPodCliqueMarksTheParentsThatMustSucceed(t *testing.T) {
	pcs := &grovev1alpha1.PodCliqueSet{}
	pcs.Name, pcs.Namespace = "train", "ns"
	pcs.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
	pcs.Spec.Template.StartupType = ptr.To(grovev1alpha1.CliqueStartupTypeExplicit)
	node := &grovev1alpha1.PodCliqueTemplateSpec{Name: "node", Spec: grovev1alpha1.PodCliqueSpec{Replicas: 2,
		StartsAfter: []string{"launcher"}, StartsAfterSucceeded: []string{"dataset-initializer"}}}
	pcs.Spec.Template.Cliques = []*grovev1alpha1.PodCliqueTemplateSpec{
		{Name: "dataset-initializer", Spec: grovev1alpha1.PodCliqueSpec{Replicas: 1}},
		{Name: "launcher", Spec: grovev1alpha1.PodCliqueSpec{Replicas: 1}},
		node,
	}
	pclq := PodClique(pcs, 0, node, nil, "train-0")
	assert.Equal(t, []string{"train-0-launcher", "train-0-dataset-initializer"}, pclq.Spec.StartsAfter, "both lists are startup parents")
	assert.Equal(t, []string{"train-0-dataset-initializer"}, pclq.Spec.StartsAfterSucceeded)
	assert.True(t, pclq.Spec.Training())
}

func TestACliqueStartingAfterAnIdleScalingGroupWaitsForNoneOfIt(t *testing.T) {
	pcs := pcsWith(grovev1alpha1.CliqueStartupTypeExplicit)
	pcs.Name = "inf"
	pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, &grovev1alpha1.PodCliqueTemplateSpec{Name: "frontend",
		Spec: grovev1alpha1.PodCliqueSpec{Replicas: 1, StartsAfter: []string{"worker", "router"}}})
	cases := []struct {
		name     string
		replicas int32
		want     []string
	}{
		{"the group's base-gang replicas", 3, []string{"inf-0-prefill-0-worker", "inf-0-prefill-1-worker", "inf-0-router"}},
		{"the group at 0 replicas", 0, []string{"inf-0-router"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := pcs.DeepCopy()
			pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].Replicas = ptr.To(tc.replicas)
			if tc.replicas == 0 {
				pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].MinAvailable = ptr.To[int32](1)
			}
			got := resolveParents(pcs, 0, Template(pcs, "frontend").Spec.StartsAfter, nil)
			assert.ElementsMatch(t, tc.want, got)
		})
	}
}

func TestUpdatedWritesAChildOnlyWhenItsSpecOrOurLabelsDiffer(t *testing.T) {
	have := func() *grovev1alpha1.PodClique {
		return builders.PodClique("ns", "c").Replicas(2, 1).Label("ours", "a").Label("kubectl", "added").Annotation("note", "x").
			Status(grovev1alpha1.PodCliqueStatus{ReadyReplicas: 2}).Obj()
	}
	// want is built bare: only the labels and annotations a case names.
	want := func(replicas int32, labels, annotations map[string]string) *grovev1alpha1.PodClique {
		w := have()
		w.Spec.Replicas, w.Labels, w.Annotations, w.Status = replicas, labels, annotations, grovev1alpha1.PodCliqueStatus{}
		return w
	}
	for _, tc := range []struct {
		name        string
		want        *grovev1alpha1.PodClique
		changed     bool
		labels      map[string]string // of the written child, where it differs from have's
		annotations map[string]string
	}{
		{name: "same spec, our labels held: nothing to write", want: want(2, map[string]string{"ours": "a"}, nil)},
		{name: "no labels wanted: nothing to write", want: want(2, nil, map[string]string{})},
		{name: "another spec", want: want(3, map[string]string{"ours": "a"}, nil), changed: true},
		{name: "a label of ours changed, others' kept", want: want(2, map[string]string{"ours": "b"}, nil), changed: true,
			labels: map[string]string{"ours": "b", "kubectl": "added"}},
		{name: "an annotation of ours missing", want: want(2, nil, map[string]string{"ours": "y"}), changed: true,
			annotations: map[string]string{"note": "x", "ours": "y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := have()
			before := h.DeepCopy()
			updated, changed := Updated(h, tc.want, CliqueSpec)
			assert.Equal(t, tc.changed, changed)
			assert.Equal(t, before, h, "have is never modified")
			if !tc.changed {
				assert.Same(t, h, updated, "an unchanged child is not copied")
				return
			}
			assert.NotSame(t, h, updated)
			assert.Equal(t, tc.want.Spec, updated.Spec)
			for k, v := range tc.labels {
				assert.Equal(t, v, updated.Labels[k], "label %s", k)
			}
			assert.Len(t, updated.Labels, len(before.Labels)+len(tc.want.Labels)-overlap(before.Labels, tc.want.Labels))
			for k, v := range tc.annotations {
				assert.Equal(t, v, updated.Annotations[k], "annotation %s", k)
			}
			assert.Equal(t, h.Status, updated.Status, "status is carried, not rewritten")
		})
	}
}

func overlap(a, b map[string]string) int {
	n := 0
	for k := range b {
		if _, ok := a[k]; ok {
			n++
		}
	}
	return n
}

func TestHoldsAnEmptyLabelOnlyWhenItsKeyIsThere(t *testing.T) {
	for _, tc := range []struct {
		name      string
		have, sub map[string]string
		holds     bool
	}{
		{"nothing wanted", map[string]string{"a": "1"}, nil, true},
		{"every entry with its value", map[string]string{"a": "1", "b": "2"}, map[string]string{"a": "1"}, true},
		{"another value", map[string]string{"a": "1"}, map[string]string{"a": "2"}, false},
		{"a key missing", map[string]string{"a": "1"}, map[string]string{"b": "2"}, false},
		{"an empty value whose key is there", map[string]string{"a": ""}, map[string]string{"a": ""}, true},
		{"an empty value whose key is missing", map[string]string{}, map[string]string{"a": ""}, false},
		{"an empty value on an object with no labels", nil, map[string]string{"a": ""}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.holds, Holds(tc.have, tc.sub))
		})
	}
}

func TestMergedSetsEveryEntryOnACopy(t *testing.T) {
	into := map[string]string{"kubectl": "added", "ours": "a"}
	got := Merged(into, map[string]string{"ours": "b", "new": ""})
	assert.Equal(t, map[string]string{"kubectl": "added", "ours": "b", "new": ""}, got)
	assert.Equal(t, map[string]string{"kubectl": "added", "ours": "a"}, into, "into is not modified")
	assert.Equal(t, map[string]string{}, Merged(nil, nil), "a map to set, never nil")
}

func TestCopiedSharesNothingWithTheOriginal(t *testing.T) {
	assert.Nil(t, Copied[int32](nil))
	v := int32(3)
	got := Copied(&v)
	require.NotNil(t, got)
	assert.Equal(t, int32(3), *got)
	*got = 4
	assert.Equal(t, int32(3), v, "writing through the copy leaves the original")
}
