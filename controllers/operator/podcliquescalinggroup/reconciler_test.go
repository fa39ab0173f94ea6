package podcliquescalinggroup

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
	"github.com/kubegrove/grove/test/builders"
)

// pcs has a router and a scaling group "prefill" of a leader (1 pod) and workers (3 pods) that
// start in order; its template asks for 3 group replicas, 2 of them in the base gang.
func pcs() *grovev1alpha1.PodCliqueSet {
	return builders.PodCliqueSet("ns", "inf").StartupType(grovev1alpha1.CliqueStartupTypeInOrder).
		Clique("router", 1).Clique("leader", 1).Clique("worker", 3).
		ScalingGroup("prefill", 3, 2, "leader", "worker").Obj()
}

// group is replica 0's PodCliqueScalingGroup, owned by the PodCliqueSet, at its generation hash.
func group(set *grovev1alpha1.PodCliqueSet, replicas, minAvailable int32) *builders.PodCliqueScalingGroupBuilder {
	b := builders.PodCliqueScalingGroup("ns", "inf-0-prefill", "leader", "worker").Replicas(replicas, minAvailable).OfReplica("inf", "0").
		Inherited(children.Inherited(set, 3))
	b.Obj().OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, grovev1alpha1.GroupVersion.WithKind("PodCliqueSet"))}
	return b
}

func reconcile(t *testing.T, objs ...client.Object) (client.Client, *events.FakeRecorder) {
	t.Helper()
	return reconcileAt(t, time.Now(), objs...)
}

// fakeClient is a fake client builder with the kinds and the cache indexes the operator has.
func fakeClient(t *testing.T) *fake.ClientBuilder {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, i := range fieldindex.All {
		b = b.WithIndex(i.Object, i.Field, i.Extract)
	}
	return b
}

// reconcileAt runs one reconcile with the clock at now.
func reconcileAt(t *testing.T, now time.Time, objs ...client.Object) (client.Client, *events.FakeRecorder) {
	t.Helper()
	c := fakeClient(t).WithObjects(objs...).
		WithStatusSubresource(&grovev1alpha1.PodCliqueScalingGroup{}, &grovev1alpha1.PodClique{}).Build()
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: c, Recorder: rec, Clock: clocktesting.NewFakePassiveClock(now)}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "inf-0-prefill"}})
	require.NoError(t, err)
	return c, rec
}

func cliques(t *testing.T, c client.Client) map[string]*grovev1alpha1.PodClique {
	t.Helper()
	list := &grovev1alpha1.PodCliqueList{}
	require.NoError(t, c.List(context.Background(), list))
	out := map[string]*grovev1alpha1.PodClique{}
	for i := range list.Items {
		out[list.Items[i].Name] = &list.Items[i]
	}
	return out
}

func TestGroupBuildsItsPodCliquesFromItsOwnSpec(t *testing.T) {
	set := pcs()
	// Scaled by kubectl to 2 replicas, minAvailable 1: the group's spec wins over the template's 3 and 2.
	c, _ := reconcile(t, set, group(set, 2, 1).Obj())

	got := cliques(t, c)
	require.Len(t, got, 4, "2 group replicas × 2 member cliques")
	assert.Equal(t, "inf-0", got["inf-0-prefill-0-leader"].Labels[grovev1alpha1.LabelPodGang], "replica 0 is within minAvailable: the base gang")
	assert.Equal(t, "inf-0-prefill-0", got["inf-0-prefill-1-leader"].Labels[grovev1alpha1.LabelPodGang], "replica 1 is beyond minAvailable 1: a scaled gang")
	worker := got["inf-0-prefill-1-worker"]
	assert.Equal(t, []string{"inf-0-prefill-1-leader"}, worker.Spec.StartsAfter, "the parent is resolved to the leader of the same group replica")
	assert.Equal(t, ptr.To[int32](4), worker.Spec.ScalingGroupTemplateNumPods)
	assert.Equal(t, children.Inherited(set, 3), worker.Spec.InheritedSpec)
	assert.True(t, metav1.IsControlledBy(worker, group(set, 2, 1).Obj()))
}

func TestGroupUpdatesItsPodCliquesAndKeepsWhatOthersAdded(t *testing.T) {
	set := pcs()
	g := group(set, 1, 1).Obj()
	stale := children.PodClique(set, 0, children.Template(set, "leader"), &children.ScalingGroup{Name: g.Name, ConfigName: "prefill", TemplateNumPods: 4}, "inf-0")
	stale.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(g, grovev1alpha1.GroupVersion.WithKind("PodCliqueScalingGroup"))}
	stale.Spec.PodSpec.Containers[0].Image = "old"
	stale.Annotations = map[string]string{"team": "a"} // kubectl annotate

	c, _ := reconcile(t, set, g, stale)

	got := cliques(t, c)["inf-0-prefill-0-leader"]
	assert.Equal(t, "busybox", got.Spec.PodSpec.Containers[0].Image, "the template is applied")
	assert.Equal(t, "a", got.Annotations["team"], "an annotation someone else added stays")
}

func TestGroupWaitsForTheRolloutBeforeUpdatingItsPodCliques(t *testing.T) {
	set := pcs()
	g := group(set, 1, 1).Obj()
	g.Spec.PodCliqueSetGenerationHash = "older"
	stale := children.PodClique(set, 0, children.Template(set, "leader"), &children.ScalingGroup{Name: g.Name, ConfigName: "prefill", TemplateNumPods: 4}, "inf-0")
	stale.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(g, grovev1alpha1.GroupVersion.WithKind("PodCliqueScalingGroup"))}
	stale.Spec.PodSpec.Containers[0].Image = "old"

	c, _ := reconcile(t, set, g, stale)

	got := cliques(t, c)
	assert.Equal(t, "old", got["inf-0-prefill-0-leader"].Spec.PodSpec.Containers[0].Image, "not this group's turn: its PodCliques keep their template")
	assert.Contains(t, got, "inf-0-prefill-0-worker", "a missing PodClique is created all the same")
}

func TestGangTerminationInsideTheGroup(t *testing.T) {
	breached := metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionTrue, Reason: "InsufficientReadyPods",
		LastTransitionTime: metav1.NewTime(time.Now().Add(-time.Minute))}
	for _, tc := range []struct {
		name         string
		workload     grovev1alpha1.WorkloadType
		wantRecycled bool
		wantBreached metav1.ConditionStatus
	}{
		{"inference: a breached replica beyond minAvailable is recycled", grovev1alpha1.WorkloadTypeInference, true, metav1.ConditionFalse},
		{"training: the group never recycles on its own, the PodCliqueSet restarts the replica", grovev1alpha1.WorkloadTypeTraining, false, metav1.ConditionTrue},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := pcs()
			g := group(set, 2, 1).TerminationDelay(metav1.Duration{Duration: time.Second}).Obj()
			g.Spec.WorkloadType = tc.workload
			var objs []client.Object
			for _, j := range []string{"0", "1"} {
				for _, member := range []string{"leader", "worker"} {
					b := builders.PodClique("ns", "inf-0-prefill-"+j+"-"+member).OfReplica("inf", "0").OfGroupReplica(g.Name, j).
						ControlledBy(g, "PodCliqueScalingGroup").Ready(1)
					if j == "1" && member == "worker" {
						b.Condition(breached)
					}
					objs = append(objs, b.Obj())
				}
			}
			c, rec := reconcile(t, append(objs, set, g)...)

			_, stillThere := cliques(t, c)["inf-0-prefill-1-worker"]
			assert.Equal(t, tc.wantRecycled, !stillThere)
			if tc.wantRecycled {
				assert.Contains(t, <-rec.Events, "GangTerminated")
			}
			got := &grovev1alpha1.PodCliqueScalingGroup{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(g), got))
			cond := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
			require.NotNil(t, cond)
			assert.Equal(t, tc.wantBreached, cond.Status, cond.Message)
		})
	}
}

func TestUpdateProgressFollowsTheRolloutThroughTheGroup(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	spec := func(hash string, strategy grovev1alpha1.UpdateStrategyType) grovev1alpha1.PodCliqueScalingGroupSpec {
		s := grovev1alpha1.PodCliqueScalingGroupSpec{Replicas: 3, CliqueNames: []string{"leader", "worker"}}
		s.PodCliqueSetGenerationHash, s.UpdateStrategy = hash, strategy
		return s
	}
	cases := []struct {
		name     string
		spec     grovev1alpha1.PodCliqueScalingGroupSpec
		before   grovev1alpha1.PodCliqueScalingGroupStatus
		realised []int
		// unavailable: a group replica lacks minAvailable Ready pods in a member clique.
		unavailable bool
		now         metav1.Time
		want        grovev1alpha1.PodCliqueScalingGroupStatus
	}{{
		name: "the first revision is realised without an update", spec: spec("a", grovev1alpha1.RollingRecreateStrategy),
		realised: []int{2, 2, 2}, now: t0,
		want: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("a")},
	}, {
		name: "a group still starting has no current revision", spec: spec("a", grovev1alpha1.RollingRecreateStrategy),
		realised: []int{2, 1, 0}, now: t0,
	}, {
		name: "a new revision opens an update naming the replica in progress", spec: spec("b", grovev1alpha1.RollingRecreateStrategy),
		before: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("a")}, realised: []int{2, 1, 0}, now: t0,
		want: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("a"), UpdateProgress: &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{
			UpdateStartedAt: t0, PodCliqueSetGenerationHash: "b", UpdatedPodCliquesCount: 3, TotalPodCliquesCount: 6,
			ReadyReplicaIndicesSelectedToUpdate: &grovev1alpha1.PodCliqueScalingGroupReplicaUpdateProgress{Current: 1, Completed: []int32{0}},
		}},
	}, {
		name: "the update ends once every PodClique runs the revision", spec: spec("b", grovev1alpha1.RollingRecreateStrategy),
		before: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("a"), UpdateProgress: &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{
			UpdateStartedAt: t0, PodCliqueSetGenerationHash: "b", UpdatedPodCliquesCount: 3, TotalPodCliquesCount: 6,
		}}, realised: []int{2, 2, 2}, now: t1,
		want: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("b"), UpdateProgress: &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{
			UpdateStartedAt: t0, UpdateEndedAt: &t1, PodCliqueSetGenerationHash: "b", UpdatedPodCliquesCount: 6, TotalPodCliquesCount: 6,
		}},
	}, {
		name: "every PodClique runs the revision but a replacement is not available yet: the update goes on", spec: spec("b", grovev1alpha1.RollingRecreateStrategy),
		before: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("a"), UpdateProgress: &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{
			UpdateStartedAt: t0, PodCliqueSetGenerationHash: "b", UpdatedPodCliquesCount: 3, TotalPodCliquesCount: 6,
		}}, realised: []int{2, 2, 2}, unavailable: true, now: t1,
		want: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("a"), UpdateProgress: &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{
			UpdateStartedAt: t0, PodCliqueSetGenerationHash: "b", UpdatedPodCliquesCount: 6, TotalPodCliquesCount: 6,
		}},
	}, {
		name: "with OnDelete the update has no operator work: it ends as it starts", spec: spec("b", grovev1alpha1.OnDeleteStrategy),
		before: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("a")}, realised: []int{0, 1, 0}, now: t0,
		want: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("a"), UpdateProgress: &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{
			UpdateStartedAt: t0, UpdateEndedAt: &t0, PodCliqueSetGenerationHash: "b", UpdatedPodCliquesCount: 1, TotalPodCliquesCount: 6,
		}},
	}, {
		name: "at rest nothing changes, whatever the clock says", spec: spec("b", grovev1alpha1.RollingRecreateStrategy),
		before: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("b"), UpdateProgress: &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{
			UpdateStartedAt: t0, UpdateEndedAt: &t0, PodCliqueSetGenerationHash: "b", UpdatedPodCliquesCount: 6, TotalPodCliquesCount: 6,
		}}, realised: []int{2, 2, 2}, now: t1,
		want: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("b"), UpdateProgress: &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{
			UpdateStartedAt: t0, UpdateEndedAt: &t0, PodCliqueSetGenerationHash: "b", UpdatedPodCliquesCount: 6, TotalPodCliquesCount: 6,
		}},
	}, {
		name: "a rollback before the update ended is an update of its own", spec: spec("a", grovev1alpha1.RollingRecreateStrategy),
		before: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("a"), UpdateProgress: &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{
			UpdateStartedAt: t0, PodCliqueSetGenerationHash: "b", UpdatedPodCliquesCount: 2, TotalPodCliquesCount: 6,
		}}, realised: []int{0, 2, 2}, now: t1,
		want: grovev1alpha1.PodCliqueScalingGroupStatus{CurrentPodCliqueSetGenerationHash: ptr.To("a"), UpdateProgress: &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{
			UpdateStartedAt: t1, PodCliqueSetGenerationHash: "a", UpdatedPodCliquesCount: 4, TotalPodCliquesCount: 6,
			ReadyReplicaIndicesSelectedToUpdate: &grovev1alpha1.PodCliqueScalingGroupReplicaUpdateProgress{Current: 0, Completed: []int32{1, 2}},
		}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := *tc.before.DeepCopy()
			trackUpdate(&st, &tc.spec, tc.realised, !tc.unavailable, tc.now)
			assert.Equal(t, tc.want, st)
		})
	}
}

func TestAGroupScaledToZeroIsIdleNotBreached(t *testing.T) {
	for _, workload := range []grovev1alpha1.WorkloadType{grovev1alpha1.WorkloadTypeInference, grovev1alpha1.WorkloadTypeTraining} {
		t.Run(string(workload), func(t *testing.T) {
			set := pcs()
			g := group(set, 0, 1).Obj()
			g.Spec.WorkloadType = workload
			c, _ := reconcile(t, set, g)
			assert.Empty(t, cliques(t, c), "no PodClique for an idle group")
			got := &grovev1alpha1.PodCliqueScalingGroup{}
			require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(g), got))
			cond := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
			require.NotNil(t, cond)
			assert.Equal(t, metav1.ConditionFalse, cond.Status, cond.Message)
			assert.Equal(t, grovev1alpha1.ReasonIdle, cond.Reason)
		})
	}
}

func TestARecycledReplicaIsUnhealthyUntilAvailableAgain(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	breachedFor := func(d time.Duration) metav1.Condition {
		return metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionTrue, Reason: "InsufficientReadyPods",
			LastTransitionTime: metav1.NewTime(now.Add(-d))}
	}
	type member struct {
		replica      string
		wasAvailable bool
		breach       *metav1.Condition
		idle         bool
	}
	starting := func(j string) []member { return []member{{replica: j}, {replica: j}} }
	available := func(j string) []member {
		return []member{{replica: j, wasAvailable: true}, {replica: j, wasAvailable: true}}
	}
	breachedLong := breachedFor(time.Minute)
	breached := func(j string) []member {
		return []member{{replica: j, wasAvailable: true}, {replica: j, wasAvailable: true, breach: &breachedLong}}
	}
	for _, tc := range []struct {
		name           string
		recorded       []int32
		members        [][]member
		wantHealthy    int32
		wantRecovering []int32
		wantExpired    []string
	}{
		{name: "a replica still starting for the first time counts as healthy (the WasAvailable gate)",
			members: [][]member{starting("0"), available("1")}, wantHealthy: 2},
		{name: "a recycled replica that has not been available again is unhealthy (GT-4)",
			recorded: []int32{0}, members: [][]member{starting("0"), available("1")}, wantHealthy: 1, wantRecovering: []int32{0}},
		{name: "a recycled replica whose PodCliques are not all back is unhealthy",
			recorded: []int32{0}, members: [][]member{{{replica: "0", wasAvailable: true}}, available("1")}, wantHealthy: 1, wantRecovering: []int32{0}},
		{name: "a recycled replica available again is healthy and no longer recorded",
			recorded: []int32{0}, members: [][]member{available("0"), available("1")}, wantHealthy: 2},
		{name: "the old breached PodCliques still in view do not end the recovery",
			recorded: []int32{0}, members: [][]member{breached("0"), available("1")}, wantHealthy: 1, wantRecovering: []int32{0}, wantExpired: []string{"0"}},
		{name: "with replica 0 recovering, a breach of replica 1 leaves no healthy replica",
			recorded: []int32{0}, members: [][]member{starting("0"), breached("1")}, wantHealthy: 0, wantRecovering: []int32{0}, wantExpired: []string{"1"}},
		{name: "a recycled replica back with an idle member (0 replicas, never available) is healthy again",
			recorded: []int32{0}, members: [][]member{{{replica: "0", wasAvailable: true}, {replica: "0", idle: true}}, available("1")}, wantHealthy: 2},
		{name: "a recorded replica beyond spec.replicas is forgotten",
			recorded: []int32{5}, members: [][]member{available("0"), available("1")}, wantHealthy: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := group(pcs(), 2, 1).Obj()
			g.Status.RecoveringReplicas = tc.recorded
			have := map[string]*grovev1alpha1.PodClique{}
			for _, ms := range tc.members {
				for k, m := range ms {
					name := fmt.Sprintf("inf-0-prefill-%s-%d", m.replica, k)
					b := builders.PodClique("ns", name).OfGroupReplica(g.Name, m.replica).Status(grovev1alpha1.PodCliqueStatus{WasAvailable: m.wasAvailable})
					if m.idle {
						b.Replicas(0, 1)
					}
					if m.breach != nil {
						b.Condition(*m.breach)
					}
					have[name] = b.Obj()
				}
			}

			h := assessReplicas(g, have, time.Second, now)

			assert.Equal(t, tc.wantHealthy, h.healthy)
			assert.Equal(t, tc.wantRecovering, h.recovering)
			assert.Equal(t, tc.wantExpired, h.expired)
		})
	}
}

func TestRecyclingRecordsTheReplicaAndTheNextBreachEscalates(t *testing.T) {
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	breached := metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionTrue, Reason: "InsufficientReadyPods",
		LastTransitionTime: metav1.NewTime(now.Add(-time.Minute))}
	set := pcs()
	g := group(set, 2, 1).TerminationDelay(metav1.Duration{Duration: time.Second}).Obj()
	var objs []client.Object
	for _, j := range []string{"0", "1"} {
		for _, m := range []string{"leader", "worker"} {
			b := builders.PodClique("ns", "inf-0-prefill-"+j+"-"+m).OfReplica("inf", "0").OfGroupReplica(g.Name, j).
				ControlledBy(g, "PodCliqueScalingGroup").Ready(1).Status(grovev1alpha1.PodCliqueStatus{WasAvailable: true, ReadyReplicas: 1})
			if j == "0" && m == "worker" {
				b.Condition(breached)
			}
			objs = append(objs, b.Obj())
		}
	}
	c, _ := reconcileAt(t, now, append(objs, set, g)...)

	got := &grovev1alpha1.PodCliqueScalingGroup{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(g), got))
	assert.Equal(t, []int32{0}, got.Status.RecoveringReplicas, "replica 0 was recycled and is recorded")
	assert.NotContains(t, cliques(t, c), "inf-0-prefill-0-worker", "replica 0's PodCliques were deleted")
	cond := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionFalse, cond.Status, "replica 1 is still healthy: minAvailable 1 holds")

	// Replica 0 came back but its pods are Pending (never available); now replica 1 breaches.
	var next []client.Object
	for _, m := range []string{"leader", "worker"} {
		next = append(next, builders.PodClique("ns", "inf-0-prefill-0-"+m).OfReplica("inf", "0").OfGroupReplica(g.Name, "0").
			ControlledBy(g, "PodCliqueScalingGroup").Obj())
		b := builders.PodClique("ns", "inf-0-prefill-1-"+m).OfReplica("inf", "0").OfGroupReplica(g.Name, "1").
			ControlledBy(g, "PodCliqueScalingGroup").Status(grovev1alpha1.PodCliqueStatus{WasAvailable: true})
		if m == "worker" {
			b.Condition(breached)
		}
		next = append(next, b.Obj())
	}
	got.ResourceVersion = ""
	c, _ = reconcileAt(t, now, append(next, set, got)...)

	require.NoError(t, c.Get(context.Background(), client.ObjectKeyFromObject(g), got))
	cond = meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionTrue, cond.Status, "no healthy replica is left: the PodCliqueSet replica is the gang to terminate ("+cond.Message+")")
	assert.Contains(t, cliques(t, c), "inf-0-prefill-1-worker", "replica 1 is not recycled on its own")
}

func TestAPodCliqueIsRealisedOnlyOnceItsStatusDescribesTheNewRevision(t *testing.T) {
	// clique has 3 pods wanted; its status was computed for generation observed.
	clique := func(hash string, generation, observed int64, pods, updated int32) *grovev1alpha1.PodClique {
		p := builders.PodClique("ns", "inf-0-prefill-0-worker").Replicas(3, 3).
			Status(grovev1alpha1.PodCliqueStatus{ObservedGeneration: ptr.To(observed), Replicas: pods, UpdatedReplicas: updated}).Obj()
		p.Spec.PodCliqueSetGenerationHash, p.Generation = hash, generation
		return p
	}
	cases := []struct {
		name   string
		clique *grovev1alpha1.PodClique
		want   bool
	}{
		{name: "every pod runs the revision", clique: clique("b", 2, 2, 3, 3), want: true},
		{name: "just handed the revision, its status still counts the old template's pods", clique: clique("b", 2, 1, 3, 3), want: false},
		{name: "some pods still run the old template", clique: clique("b", 2, 2, 3, 1), want: false},
		{name: "an old pod is still to go", clique: clique("b", 2, 2, 4, 3), want: false},
		{name: "at another revision", clique: clique("a", 2, 2, 3, 3), want: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, realised(tc.clique, "b"))
		})
	}
}

// staleMembers are group replica 0's leader and worker on an older image.
func staleMembers(set *grovev1alpha1.PodCliqueSet, g *grovev1alpha1.PodCliqueScalingGroup) []client.Object {
	var out []client.Object
	for _, clique := range []string{"leader", "worker"} {
		m := children.PodClique(set, 0, children.Template(set, clique), &children.ScalingGroup{Name: g.Name, ConfigName: "prefill", TemplateNumPods: 4}, "inf-0")
		m.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(g, grovev1alpha1.GroupVersion.WithKind("PodCliqueScalingGroup"))}
		m.Spec.PodSpec.Containers[0].Image = "old"
		out = append(out, m)
	}
	return out
}

func TestAGroupReplicasMembersAreUpdatedSideBySideAndEachFailureIsReturned(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failing string // the member whose update the API server refuses
	}{
		{name: "both written, neither waiting for the other"},
		{name: "the leader's refused: the worker is written all the same", failing: "inf-0-prefill-0-leader"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := pcs()
			g := group(set, 1, 1).Obj()
			// Each update waits until both have been sent: written one after the other, the first
			// would wait in vain.
			var arrived sync.WaitGroup
			arrived.Add(2)
			c := fakeClient(t).WithObjects(append(staleMembers(set, g), set, g)...).
				WithStatusSubresource(&grovev1alpha1.PodCliqueScalingGroup{}, &grovev1alpha1.PodClique{}).
				WithInterceptorFuncs(interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					if _, ok := obj.(*grovev1alpha1.PodClique); ok {
						arrived.Done()
						waited := make(chan struct{})
						go func() { arrived.Wait(); close(waited) }()
						select {
						case <-waited:
						case <-time.After(10 * time.Second):
							return errors.New("the other member's update never came while this one was in flight")
						}
						if obj.GetName() == tc.failing {
							return errors.New("refused")
						}
					}
					return c.Update(ctx, obj, opts...)
				}}).Build()
			r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10), Clock: clocktesting.NewFakePassiveClock(time.Now())}

			_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "inf-0-prefill"}})

			got := cliques(t, c)
			for _, name := range []string{"inf-0-prefill-0-leader", "inf-0-prefill-0-worker"} {
				want := "busybox"
				if name == tc.failing {
					want = "old"
				}
				assert.Equal(t, want, got[name].Spec.PodSpec.Containers[0].Image, name)
			}
			if tc.failing == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, "refused", "the refusal is returned")
			}
		})
	}
}
