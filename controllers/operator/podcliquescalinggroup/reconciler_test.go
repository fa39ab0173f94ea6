package podcliquescalinggroup

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/expand"
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
		Inherited(expand.Inherited(set, 3))
	b.Obj().OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(set, grovev1alpha1.GroupVersion.WithKind("PodCliqueSet"))}
	return b
}

func reconcile(t *testing.T, objs ...client.Object) (client.Client, *events.FakeRecorder) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&grovev1alpha1.PodCliqueScalingGroup{}, &grovev1alpha1.PodClique{}).Build()
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: c, Recorder: rec}
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
	assert.Equal(t, expand.Inherited(set, 3), worker.Spec.InheritedSpec)
	assert.True(t, metav1.IsControlledBy(worker, group(set, 2, 1).Obj()))
}

func TestGroupUpdatesItsPodCliquesAndKeepsWhatOthersAdded(t *testing.T) {
	set := pcs()
	g := group(set, 1, 1).Obj()
	stale := expand.PodClique(set, 0, expand.Template(set, "leader"), &expand.ScalingGroup{Name: g.Name, ConfigName: "prefill", TemplateNumPods: 4}, "inf-0")
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
	stale := expand.PodClique(set, 0, expand.Template(set, "leader"), &expand.ScalingGroup{Name: g.Name, ConfigName: "prefill", TemplateNumPods: 4}, "inf-0")
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
		now      metav1.Time
		want     grovev1alpha1.PodCliqueScalingGroupStatus
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
			trackUpdate(&st, &tc.spec, tc.realised, tc.now)
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
