package podcliqueset

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/backends/kube"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/test/builders"
)

// samplePCS is two replicas of a router and a prefill scaling group (leader, worker; 3
// replicas, minAvailable 2), two pods per clique.
func samplePCS() *grovev1alpha1.PodCliqueSet {
	return builders.PodCliqueSet("ns", "inf").Replicas(2).
		Clique("router", 2).Clique("leader", 2).Clique("worker", 2).
		ScalingGroup("prefill", 3, 2, "leader", "worker").Obj()
}

func emptyObserved() *observed {
	return &observed{cliques: map[string]*grovev1alpha1.PodClique{}, groups: map[string]*grovev1alpha1.PodCliqueScalingGroup{},
		gangs: map[string]*schedulerv1alpha1.PodGang{}, pods: map[string][]*corev1.Pod{}, wantGangs: map[string]bool{}}
}

func TestWantedGangsSplitBaseAndScaledGroupReplicas(t *testing.T) {
	names := func(gs []gang) map[string][]string {
		out := map[string][]string{}
		for _, g := range gs {
			out[g.name] = []string{}
			for _, m := range g.members {
				out[g.name] = append(out[g.name], m.name)
			}
		}
		return out
	}
	obs := emptyObserved()
	gangs := wantedGangs(samplePCS(), 1, obs)
	assert.Equal(t, map[string][]string{
		"inf-1":           {"inf-1-router", "inf-1-prefill-0-leader", "inf-1-prefill-0-worker", "inf-1-prefill-1-leader", "inf-1-prefill-1-worker"},
		"inf-1-prefill-0": {"inf-1-prefill-2-leader", "inf-1-prefill-2-worker"},
	}, names(gangs))
	assert.Equal(t, "inf-1", gangs[0].name, "the base gang comes first")

	// The scaling group's own replica count (set by kubectl scale or an autoscaler) wins over the template.
	obs.groups["inf-1-prefill"] = builders.PodCliqueScalingGroup("ns", "inf-1-prefill", "leader", "worker").Replicas(1, 1).Obj()
	gangs = wantedGangs(samplePCS(), 1, obs)
	assert.Equal(t, map[string][]string{"inf-1": {"inf-1-router", "inf-1-prefill-0-leader", "inf-1-prefill-0-worker"}}, names(gangs))
}

func TestGangMembersTakeTheirSizeFromThePodCliqueOnceItExists(t *testing.T) {
	obs := emptyObserved()
	pcs := samplePCS()
	pcs.Spec.Template.Cliques[0].Spec.PodSpec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	router := wantedGangs(pcs, 0, obs)[0].members[0]
	assert.Equal(t, member{name: "inf-0-router", replicas: 2, minAvailable: 2, requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}, router,
		"before the PodClique exists: the template, minAvailable defaulting to replicas")

	obs.cliques["inf-0-router"] = builders.PodClique("ns", "inf-0-router").Replicas(5, 3).
		Requests(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}).Obj()
	router = wantedGangs(pcs, 0, obs)[0].members[0]
	assert.Equal(t, member{name: "inf-0-router", replicas: 5, minAvailable: 3, requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}, router,
		"scaled by kubectl or an autoscaler, or not yet rolled: the PodClique's own size and pods")
}

func TestKeepScaledReplicas(t *testing.T) {
	applied := ptr.To[int32](2)
	cases := []struct {
		name       string
		template   int32
		current    int32
		applied    *int32
		autoscaled bool
		want       int32
	}{
		{"scaled directly, template unchanged: keep", 2, 5, applied, false, 5},
		{"template edited: the template wins", 3, 5, applied, false, 3},
		{"never applied: the template wins", 2, 5, nil, false, 2},
		{"autoscaled: the autoscaler wins even over a template edit", 3, 5, applied, true, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, keepScaledReplicas(tc.template, tc.current, tc.applied, tc.autoscaled))
		})
	}
}

func TestRolloutGivesTheTurnToOneReplicaAtATime(t *testing.T) {
	pcs := samplePCS()
	hash := children.GenerationHash(pcs)
	pclq := func(replica, hash string, rolledOut bool) *grovev1alpha1.PodClique {
		b := builders.PodClique("ns", "inf-"+replica+"-router").OfReplica("inf", replica).Generation(2).Replicas(2, 2).GenerationHash(hash)
		if rolledOut {
			b.Status(grovev1alpha1.PodCliqueStatus{ObservedGeneration: ptr.To[int64](2), Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2})
		}
		return b.Obj()
	}
	cases := []struct {
		name  string
		state map[string]*grovev1alpha1.PodClique
		want  []bool
	}{
		{"nothing exists yet: every replica is created", nil, []bool{true, true, true}},
		{"all at the old hash: only replica 0 rolls", map[string]*grovev1alpha1.PodClique{"a": pclq("0", "old", true), "b": pclq("1", "old", true), "c": pclq("2", "old", true)}, []bool{true, false, false}},
		{"replica 0 at the new hash but still replacing pods: the others wait", map[string]*grovev1alpha1.PodClique{"a": pclq("0", hash, false), "b": pclq("1", "old", true), "c": pclq("2", "old", true)}, []bool{true, false, false}},
		{"replica 0 rolled out: replica 1 takes the turn", map[string]*grovev1alpha1.PodClique{"a": pclq("0", hash, true), "b": pclq("1", "old", true), "c": pclq("2", "old", true)}, []bool{true, true, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := emptyObserved()
			for k, v := range tc.state {
				obs.cliques[k] = v
			}
			ro := newRollout(pcs)
			var got []bool
			for i := 0; i < 3; i++ {
				got = append(got, ro.allow(i, obs))
			}
			assert.Equal(t, tc.want, got)
		})
	}
	t.Run("OnDelete updates every replica's template at once", func(t *testing.T) {
		p := samplePCS()
		p.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: grovev1alpha1.OnDeleteStrategy}
		obs := emptyObserved()
		obs.cliques["a"], obs.cliques["b"] = pclq("0", "old", true), pclq("1", "old", true)
		ro := newRollout(p)
		assert.True(t, ro.allow(0, obs))
		assert.True(t, ro.allow(1, obs))
	})
}

func TestSchedulingConstraintsHonoredNamesWhatTheBackendDoesNotDo(t *testing.T) {
	plain := kube.New(configv1alpha1.KubeSchedulerConfig{}, nil)
	gang := kube.New(configv1alpha1.KubeSchedulerConfig{GangScheduling: true}, nil)
	ordered := samplePCS()
	ordered.Spec.Template.StartupType = ptr.To(grovev1alpha1.CliqueStartupTypeInOrder)
	single := samplePCS()
	single.Spec.Template.Cliques = single.Spec.Template.Cliques[:1]
	single.Spec.Template.Cliques[0].Spec.Replicas = 1
	single.Spec.Template.PodCliqueScalingGroupConfigs = nil
	flatGang := builders.PodGang("ns", "inf-0").PodGroup("inf-0-a", 1).PodGroup("inf-0-b", 2).Obj()
	flatGang.Status.SchedulingGroups = []schedulerv1alpha1.SchedulingGroup{{PodGroup: "inf-0-a", Name: "inf-0"}, {PodGroup: "inf-0-b", Name: "inf-0"}}
	compositeGang := builders.PodGang("ns", "inf-0").PodGroup("inf-0-a", 1).PodGroup("inf-0-b", 2).Obj()
	compositeGang.Status.SchedulingGroups = []schedulerv1alpha1.SchedulingGroup{{PodGroup: "inf-0-a", Name: "inf-0-a"}, {PodGroup: "inf-0-b", Name: "inf-0-b"}}
	cliquePacked := samplePCS()
	cliquePacked.Spec.Template.Cliques[0].TopologyConstraint = &grovev1alpha1.TopologyConstraint{Pack: &grovev1alpha1.TopologyPackConstraint{Required: "host"}}
	admittedWithoutTopology := builders.PodGang("ns", "inf-0").PodGroup("inf-0-a", 1).
		Condition(schedulerv1alpha1.ConditionQueueAdmitted, metav1.ConditionTrue, schedulerv1alpha1.ReasonQueueAdmittedWithoutTopology).Obj()
	admittedWithoutTopology.Status.Conditions[0].Message = "Kueue admitted the gang; its pack constraints are not honoured: no flavor of the queue's ClusterQueue has a topology"
	admittedInItsTopology := builders.PodGang("ns", "inf-0").PodGroup("inf-0-a", 1).
		Condition(schedulerv1alpha1.ConditionQueueAdmitted, metav1.ConditionTrue, schedulerv1alpha1.ReasonQueueAdmitted).Obj()
	cases := []struct {
		name     string
		pcs      *grovev1alpha1.PodCliqueSet
		backend  backends.PodPreparer
		gangs    []*schedulerv1alpha1.PodGang
		honoured bool
		mentions []string
	}{
		{"a flat gang keeps no per-clique minimum and says how to", samplePCS(), gang, []*schedulerv1alpha1.PodGang{flatGang}, false,
			[]string{"per-clique minimums", "PodGang inf-0", "CompositePodGroup"}},
		{"a flat gang does not keep a clique's own pack level", cliquePacked, gang, []*schedulerv1alpha1.PodGang{flatGang}, false,
			[]string{"spec.template.cliques[0].topologyConstraint.pack.required", `not at "host"`}},
		{"a hierarchical gang keeps each clique's minimum and pack level", cliquePacked, gang, []*schedulerv1alpha1.PodGang{compositeGang}, true, nil},
		{"plain kube-scheduler does not keep a gang together", samplePCS(), plain, nil, false, []string{"gang scheduling"}},
		{"plain kube-scheduler with a one-pod gang loses nothing", single, plain, nil, true, nil},
		{"gang mode honours a gang without startup order", samplePCS(), gang, nil, true, nil},
		{"a gang Kueue admitted without its topology says so in Kueue's words", cliquePacked, gang, []*schedulerv1alpha1.PodGang{admittedWithoutTopology}, false,
			[]string{"topology through Kueue, gang inf-0", "no flavor of the queue's ClusterQueue has a topology"}},
		{"a gang Kueue placed in its topology loses nothing", cliquePacked, gang, []*schedulerv1alpha1.PodGang{admittedInItsTopology}, true, nil},
		{"gang mode keeps startup order (pods wait at start)", ordered, gang, nil, true, nil},
		{"plain mode keeps startup order but not the gang", ordered, plain, nil, false, []string{"gang scheduling"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gangs := map[string]*schedulerv1alpha1.PodGang{}
			for _, pg := range tc.gangs {
				gangs[pg.Name] = pg
			}
			c := honouredCondition(tc.pcs, tc.backend, gangs)
			assert.Equal(t, grovev1alpha1.ConditionSchedulingConstraintsHonored, c.Type)
			if tc.honoured {
				assert.Equal(t, metav1.ConditionTrue, c.Status, c.Message)
				assert.Equal(t, grovev1alpha1.ReasonAllConstraintsHonored, c.Reason)
				return
			}
			assert.Equal(t, metav1.ConditionFalse, c.Status)
			assert.Equal(t, grovev1alpha1.ReasonConstraintsNotHonored, c.Reason)
			for _, m := range tc.mentions {
				assert.Contains(t, c.Message, m)
			}
			assert.NotContains(t, c.Message, "startup ordering", "every backend keeps startup order")
		})
	}
}

func TestPodGangLabelsCarryThePodCliqueSetsAndCliquesLabels(t *testing.T) {
	pcs := samplePCS()
	pcs.Labels = map[string]string{"team": "a", "kai.scheduler/queue": "pcs-queue"}
	pcs.Spec.Template.Cliques[0].Labels = map[string]string{"kai.scheduler/queue": "clique-queue", "kai.scheduler/node-pool": "h100"}
	labels := gangLabels(pcs, 1, "kai-scheduler")
	assert.Equal(t, "pcs-queue", labels["kai.scheduler/queue"], "the PodCliqueSet's label wins")
	assert.Equal(t, "h100", labels["kai.scheduler/node-pool"], "a clique's label fills what the PodCliqueSet leaves unset")
	assert.Equal(t, "a", labels["team"])
	assert.Equal(t, "kai-scheduler", labels[grovev1alpha1.LabelSchedulerName])
	assert.Equal(t, "inf", labels[grovev1alpha1.LabelPartOf])
	assert.Equal(t, "1", labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex])
}

func topologyPCS() *grovev1alpha1.PodCliqueSet {
	pcs := samplePCS()
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.RoleName = c.Name
	}
	pcs.Spec.Template.TopologyConstraint = &grovev1alpha1.TopologyConstraint{TopologyName: "dc", Pack: &grovev1alpha1.TopologyPackConstraint{Required: "block"}}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = &grovev1alpha1.TopologyConstraint{Pack: &grovev1alpha1.TopologyPackConstraint{Required: "rack"}}
	pcs.Spec.Template.Cliques[2].TopologyConstraint = &grovev1alpha1.TopologyConstraint{Pack: &grovev1alpha1.TopologyPackConstraint{Preferred: "host"}}
	return pcs
}

func dcBinding(domains ...string) *grovev1alpha1.ClusterTopologyBindingSpec {
	keys := map[string]string{"block": "example.com/block", "rack": "example.com/rack", "host": "kubernetes.io/hostname", "nvl-domain": "nvidia.com/gpu.clique"}
	spec := &grovev1alpha1.ClusterTopologyBindingSpec{}
	for _, d := range domains {
		spec.Levels = append(spec.Levels, grovev1alpha1.TopologyLevel{Domain: grovev1alpha1.TopologyDomain(d), Key: keys[d]})
	}
	return spec
}

func TestTopologyConstraintsBecomeNodeLabelKeysInThePodGang(t *testing.T) {
	pcs := topologyPCS()
	obs := emptyObserved()
	pclq := func(name, role, pcsg, j string) {
		b := builders.PodClique("ns", name).Role(role)
		if pcsg != "" {
			b.OfGroupReplica(pcsg, j)
		}
		obs.cliques[name] = b.Obj()
	}
	pclq("inf-1-router", "router", "", "")
	pclq("inf-1-prefill-0-leader", "leader", "inf-1-prefill", "0")
	pclq("inf-1-prefill-0-worker", "worker", "inf-1-prefill", "0")
	pclq("inf-1-prefill-1-leader", "leader", "inf-1-prefill", "1")
	pclq("inf-1-prefill-1-worker", "worker", "inf-1-prefill", "1")
	obs.topology = &topology{name: "dc", enabled: true, binding: dcBinding("block", "rack", "host"), missing: map[grovev1alpha1.TopologyDomain]bool{}}

	spec := schedulerv1alpha1.PodGangSpec{}
	for _, name := range []string{"inf-1-router", "inf-1-prefill-0-leader", "inf-1-prefill-0-worker", "inf-1-prefill-1-leader", "inf-1-prefill-1-worker"} {
		spec.PodGroups = append(spec.PodGroups, schedulerv1alpha1.PodGroup{Name: name})
	}
	obs.topology.applyTopology(pcs, 1, &spec, obs)

	key := func(k string) *string { return &k }
	assert.Equal(t, &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{Required: key("example.com/block")}}, spec.TopologyConstraint)
	hostPreferred := &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{Preferred: key("kubernetes.io/hostname")}}
	assert.Nil(t, spec.PodGroups[0].TopologyConstraint, "the router has no constraint of its own")
	assert.Equal(t, hostPreferred, spec.PodGroups[2].TopologyConstraint)
	assert.Equal(t, hostPreferred, spec.PodGroups[4].TopologyConstraint)
	rack := &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{Required: key("example.com/rack")}}
	assert.Equal(t, []schedulerv1alpha1.TopologyConstraintGroupConfig{
		{Name: "inf-1-prefill-0", PodGroupNames: []string{"inf-1-prefill-0-leader", "inf-1-prefill-0-worker"}, TopologyConstraint: rack},
		{Name: "inf-1-prefill-1", PodGroupNames: []string{"inf-1-prefill-1-leader", "inf-1-prefill-1-worker"}, TopologyConstraint: rack},
	}, spec.TopologyConstraintGroupConfigs, "each scaling-group replica is packed on its own")
	assert.Equal(t, map[string]string{schedulerv1alpha1.AnnotationTopologyName: "dc"}, obs.topology.annotations())
}

func TestAFreeFormDomainBecomesItsBindingsKey(t *testing.T) {
	pcs := topologyPCS()
	pcs.Spec.Template.TopologyConstraint.Pack.Required = "nvl-domain"
	pcs.Spec.Template.PodCliqueScalingGroupConfigs[0].TopologyConstraint = nil
	pcs.Spec.Template.Cliques[2].TopologyConstraint = nil
	obs := emptyObserved()
	obs.topology = &topology{name: "dc", enabled: true, binding: dcBinding("block", "nvl-domain", "host"), missing: map[grovev1alpha1.TopologyDomain]bool{}}
	spec := schedulerv1alpha1.PodGangSpec{}
	obs.topology.applyTopology(pcs, 0, &spec, obs)
	key := "nvidia.com/gpu.clique"
	assert.Equal(t, &schedulerv1alpha1.TopologyConstraint{PackConstraint: &schedulerv1alpha1.TopologyPackConstraint{Required: &key}}, spec.TopologyConstraint)
	assert.Empty(t, obs.topology.missing, "the binding declares the domain")
}

func TestTopologyLevelsUnavailableSaysWhy(t *testing.T) {
	cases := []struct {
		name    string
		t       *topology
		status  metav1.ConditionStatus
		reason  string
		mention string
	}{
		{"disabled", &topology{name: "dc"}, metav1.ConditionTrue, grovev1alpha1.ReasonTopologyAwareSchedulingDisabled, "topologyAwareScheduling"},
		{"binding missing", &topology{name: "dc", enabled: true}, metav1.ConditionTrue, grovev1alpha1.ReasonClusterTopologyNotFound, `"dc" does not exist`},
		{"a level missing", &topology{name: "dc", enabled: true, binding: dcBinding("block", "host")}, metav1.ConditionTrue, grovev1alpha1.ReasonClusterTopologyLevelsUnavailable, "[rack]"},
		{"all there", &topology{name: "dc", enabled: true, binding: dcBinding("block", "rack", "host")}, metav1.ConditionFalse, grovev1alpha1.ReasonAllClusterTopologyLevelsAvailable, "every domain"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.t.missing = map[grovev1alpha1.TopologyDomain]bool{}
			c := tc.t.condition(topologyPCS())
			require.NotNil(t, c)
			assert.Equal(t, tc.status, c.Status)
			assert.Equal(t, tc.reason, c.Reason)
			assert.Contains(t, c.Message, tc.mention)
		})
	}
	assert.Nil(t, (&topology{enabled: true}).condition(samplePCS()), "no constraint, no condition")
}

func TestCliqueStatusesSumEachCliquesPodsOverReplicasAndGroupReplicas(t *testing.T) {
	pcs := samplePCS() // 2 replicas; router standalone; leader and worker in prefill (3 group replicas)
	obs := emptyObserved()
	counted := func(name string, replicas, ready, succeeded, failed int32) {
		obs.cliques[name] = builders.PodClique("ns", name).
			Status(grovev1alpha1.PodCliqueStatus{Replicas: replicas, ReadyReplicas: ready, SucceededReplicas: succeeded, FailedReplicas: failed}).Obj()
	}
	counted("inf-0-router", 2, 2, 0, 0)
	counted("inf-1-router", 2, 1, 0, 1)
	counted("inf-0-prefill-0-worker", 2, 0, 2, 0)
	counted("inf-0-prefill-2-worker", 2, 0, 1, 0)
	counted("inf-1-prefill-1-worker", 2, 2, 0, 0)
	counted("inf-9-router", 5, 5, 5, 5) // beyond spec.replicas: not counted
	obs.groups["inf-1-prefill"] = builders.PodCliqueScalingGroup("ns", "inf-1-prefill", "leader", "worker").Replicas(1, 1).Obj()

	assert.Equal(t, []grovev1alpha1.CliqueStatus{
		{Name: "router", Replicas: 4, ReadyReplicas: 3, FailedReplicas: 1},
		{Name: "leader"},
		{Name: "worker", Replicas: 4, SucceededReplicas: 3},
	}, cliqueStatuses(pcs, obs), "inf-1's group was scaled to 1 replica: inf-1-prefill-1-worker no longer counts")
}
