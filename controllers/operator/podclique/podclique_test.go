package podclique

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/backends/kube"
	"github.com/kubegrove/grove/test/builders"
)

// podBuilder starts the pod <clique>-<i> of index i in namespace with a template hash and
// readiness.
func podBuilder(namespace, clique string, i int, hash string, ready bool) *builders.PodBuilder {
	return builders.Pod(namespace, clique+"-"+strconv.Itoa(i)).
		Label(grovev1alpha1.LabelPodIndex, strconv.Itoa(i)).Label(grovev1alpha1.LabelPodTemplateHash, hash).Ready(ready)
}

// pod makes a pod of index i with a template hash and readiness.
func pod(i int, hash string, ready bool) *corev1.Pod {
	return podBuilder("", "c", i, hash, ready).Obj()
}

func names(pods []*corev1.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestMissingIndicesRefillHolesBeforeGrowing(t *testing.T) {
	cases := []struct {
		name     string
		have     []int
		replicas int
		want     []int
	}{
		{"empty clique", nil, 3, []int{0, 1, 2}},
		{"hole in the middle", []int{0, 2}, 3, []int{1}},
		{"hole and growth", []int{1}, 3, []int{0, 2}},
		{"complete", []int{0, 1}, 2, nil},
		{"more pods than wanted", []int{0, 1, 2}, 2, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*corev1.Pod
			for _, i := range tc.have {
				pods = append(pods, pod(i, "h", true))
			}
			assert.Equal(t, tc.want, missingIndices(pods, tc.replicas))
		})
	}
}

func TestSurplusPodsGoHighestIndexFirst(t *testing.T) {
	pods := []*corev1.Pod{pod(0, "h", true), pod(3, "h", true), pod(1, "h", true), pod(2, "h", true)}
	assert.Equal(t, []string{"c-3", "c-2"}, names(surplusPods(pods, 2)))
	assert.Empty(t, surplusPods(pods, 4))
}

func TestRollingVictimsKeepTheCliqueWithinItsBudget(t *testing.T) {
	withBudget := func(n int32) *grovev1alpha1.PodClique {
		return builders.PodClique("ns", "c").Replicas(4, 2).MaxUnavailable(n).Obj()
	}
	unset := builders.PodClique("ns", "c").Replicas(3, 2).Obj()
	member := builders.PodClique("ns", "c").Replicas(3, 2).OfGroupReplica("g", "0").Obj()
	cases := []struct {
		name string
		pclq *grovev1alpha1.PodClique
		pods []*corev1.Pod
		want []string
	}{
		{"nothing outdated", unset, []*corev1.Pod{pod(0, "new", true), pod(1, "new", true), pod(2, "new", true)}, []string{}},
		{"no budget set: one Ready pod at a time, the highest index first", unset, []*corev1.Pod{pod(0, "old", true), pod(1, "old", true), pod(2, "old", true)}, []string{"c-2"}},
		{"a replacement not ready yet uses the budget: wait", unset, []*corev1.Pod{pod(0, "old", true), pod(1, "old", true), pod(2, "new", false)}, []string{}},
		{"a replacement not created yet uses the budget: wait", unset, []*corev1.Pod{pod(0, "old", true), pod(1, "old", true)}, []string{}},
		{"outdated and not ready: replaced at once, without budget", unset, []*corev1.Pod{pod(0, "old", false), pod(1, "old", true), pod(2, "new", false)}, []string{"c-0"}},
		{"replacement ready: the next one", unset, []*corev1.Pod{pod(0, "old", true), pod(1, "old", true), pod(2, "new", true)}, []string{"c-1"}},
		{"maxUnavailable 2: two Ready pods at once", withBudget(2), []*corev1.Pod{pod(0, "old", true), pod(1, "old", true), pod(2, "old", true), pod(3, "old", true)}, []string{"c-3", "c-2"}},
		{"maxUnavailable 2 with one pod Pending: one more", withBudget(2), []*corev1.Pod{pod(0, "old", true), pod(1, "old", true), pod(2, "old", true), pod(3, "new", false)}, []string{"c-2"}},
		{"maxUnavailable 2, all Pending and outdated: every one replaced (never stuck behind them)", withBudget(2),
			[]*corev1.Pod{pod(0, "old", false), pod(1, "old", false), pod(2, "old", false), pod(3, "old", false)}, []string{"c-0", "c-1", "c-2", "c-3"}},
		{"maxUnavailable 2 and two unavailable already: wait", withBudget(2), []*corev1.Pod{pod(0, "old", true), pod(1, "old", true), pod(2, "new", false)}, []string{}},
		{"a scaling group's member: the group paced its replica, every outdated pod goes", member,
			[]*corev1.Pod{pod(0, "old", true), pod(1, "old", true), pod(2, "old", true)}, []string{"c-2", "c-1", "c-0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, names(rollingVictims(tc.pclq, tc.pods, nil, "new")))
		})
	}
}

func TestUpdateProgressOfAClique(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	t2 := metav1.NewTime(t0.Add(3 * time.Minute))
	clique := func(deadline time.Duration, strategy grovev1alpha1.UpdateStrategyType) *grovev1alpha1.PodClique {
		pclq := builders.PodClique("ns", "c").Replicas(3, 2).UpdateStrategy(strategy).MaxUnavailable(1).Obj()
		if deadline > 0 {
			pclq.Spec.RollingUpdate.ProgressDeadline = &metav1.Duration{Duration: deadline}
		}
		return pclq
	}
	open := func(ready int32, progressed metav1.Time) *grovev1alpha1.PodCliqueUpdateProgress {
		return &grovev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: t0, PodTemplateHash: "new", UpdatedReadyReplicas: ready, LastProgressedAt: &progressed}
	}
	rr := grovev1alpha1.RollingRecreateStrategy
	for _, tc := range []struct {
		name                   string
		pclq                   *grovev1alpha1.PodClique
		before                 *grovev1alpha1.PodCliqueUpdateProgress
		outdated, updatedReady int32
		// current is the template the clique last realised (status.currentPodTemplateHash).
		current    *string
		now        metav1.Time
		want       *grovev1alpha1.PodCliqueUpdateProgress
		wantReason string
		wantAfter  time.Duration
	}{
		{name: "at rest: no update", pclq: clique(0, rr), updatedReady: 3, now: t0, wantReason: grovev1alpha1.ReasonNoActiveUpdate},
		{name: "outdated pods open an update", pclq: clique(0, rr), outdated: 3, now: t0,
			want: open(0, t0), wantReason: grovev1alpha1.ReasonProgressing},
		{name: "every outdated pod already deleted (no status was written then): the update opens all the same",
			pclq: clique(0, rr), current: ptr.To("old"), now: t0, want: open(0, t0), wantReason: grovev1alpha1.ReasonProgressing},
		{name: "a new clique realises its first template without an update", pclq: clique(0, rr), updatedReady: 3, now: t0,
			wantReason: grovev1alpha1.ReasonNoActiveUpdate},
		{name: "one more pod at the new template Ready is progress", pclq: clique(0, rr), before: open(0, t0), outdated: 2, updatedReady: 1, now: t1,
			want: open(1, t1), wantReason: grovev1alpha1.ReasonProgressing},
		{name: "no progress within the deadline: Unknown, and the update goes on", pclq: clique(2*time.Minute, rr), before: open(1, t0), outdated: 2, updatedReady: 1, now: t2,
			want: open(1, t0), wantReason: grovev1alpha1.ReasonProgressDeadlineExceeded},
		{name: "before the deadline: look again when it runs out", pclq: clique(2*time.Minute, rr), before: open(1, t0), outdated: 2, updatedReady: 1, now: t1,
			want: open(1, t0), wantReason: grovev1alpha1.ReasonProgressing, wantAfter: time.Minute},
		{name: "no outdated pod left and every pod Ready: the update ends", pclq: clique(0, rr), before: open(2, t0), updatedReady: 3, now: t1,
			want:       &grovev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: t0, UpdateEndedAt: &t1, PodTemplateHash: "new", UpdatedReadyReplicas: 3},
			wantReason: grovev1alpha1.ReasonNoActiveUpdate},
		{name: "no outdated pod left but a replacement not Ready: still in progress", pclq: clique(0, rr), before: open(2, t0), updatedReady: 2, now: t1,
			want: open(2, t0), wantReason: grovev1alpha1.ReasonProgressing},
		{name: "OnDelete: the update ends as it opens", pclq: clique(0, grovev1alpha1.OnDeleteStrategy), outdated: 3, now: t0,
			want: &grovev1alpha1.PodCliqueUpdateProgress{UpdateStartedAt: t0, UpdateEndedAt: &t0, PodTemplateHash: "new"}, wantReason: grovev1alpha1.ReasonNoActiveUpdate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := grovev1alpha1.PodCliqueStatus{UpdateProgress: tc.before}

			after := trackUpdate(tc.pclq, &st, tc.outdated, tc.updatedReady, "new", tc.current, tc.now)

			assert.Equal(t, tc.want, st.UpdateProgress)
			cond := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionUpdateInProgress)
			require.NotNil(t, cond)
			assert.Equal(t, tc.wantReason, cond.Reason, cond.Message)
			assert.Equal(t, tc.wantAfter, after)
		})
	}
}

func TestBuildPodCarriesIdentityGateAndScheduler(t *testing.T) {
	pclq := builders.PodClique("ns", "inf-0-prefill-1-worker").OfReplica("inf", "0").OfGroupReplica("inf-0-prefill", "1").
		Annotation("team", "a").StartsAfter("x").GroupTemplateNumPods(3).Obj()
	p := buildPod(pclq, 2, "abc", kube.New(configv1alpha1.KubeSchedulerConfig{}, nil), nil, "")
	assert.Equal(t, "inf-0-prefill-1-worker-2", p.Name)
	assert.Equal(t, p.Name, p.Spec.Hostname)
	assert.Equal(t, "inf-0", p.Spec.Subdomain)
	assert.Equal(t, "default-scheduler", p.Spec.SchedulerName)
	assert.Equal(t, []corev1.PodSchedulingGate{{Name: grovev1alpha1.SchedulingGatePodGangPendingCreation}}, p.Spec.SchedulingGates)
	assert.Equal(t, map[string]string{"team": "a"}, p.Annotations, "the template's annotations reach the pod")
	assert.Equal(t, "2", p.Labels[grovev1alpha1.LabelPodIndex])
	assert.Equal(t, "abc", p.Labels[grovev1alpha1.LabelPodTemplateHash])
	assert.True(t, metav1.IsControlledBy(p, pclq))
	assert.Equal(t, "2", p.Labels[grovev1alpha1.LabelPodCliqueScalingGroupPodIndex], "no offset given: the clique's own index")
	env := map[string]string{}
	for _, e := range p.Spec.Containers[0].Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil {
			env[e.Name] = "<" + e.ValueFrom.FieldRef.FieldPath + ">"
		}
	}
	assert.Equal(t, map[string]string{
		grovev1alpha1.EnvPCSName: "inf", grovev1alpha1.EnvPCSIndex: "0", grovev1alpha1.EnvPCLQName: pclq.Name,
		grovev1alpha1.EnvHeadlessService: "inf-0.ns.svc.cluster.local", grovev1alpha1.EnvPCLQPodIndex: "2",
		grovev1alpha1.EnvPCSGName: "inf-0-prefill", grovev1alpha1.EnvPCSGIndex: "1", grovev1alpha1.EnvPCSGTemplateNumPods: "3",
		grovev1alpha1.EnvPCSGPodIndex: "<metadata.labels['grove.io/podcliquescalinggroup-pod-index']>",
	}, env)
}

func TestAPodsIndexInItsScalingGroupReplicaCountsTheMembersBeforeItsClique(t *testing.T) {
	cases := []struct {
		name   string
		offset *int32
		index  int
		want   string
	}{
		{"the first member clique", ptr.To[int32](0), 1, "1"},
		{"after members of 1 and 2 pods", ptr.To[int32](3), 1, "4"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pclq := builders.PodClique("ns", "inf-0-prefill-1-worker").OfReplica("inf", "0").OfGroupReplica("inf-0-prefill", "1").Obj()
			pclq.Spec.ScalingGroupPodIndexOffset = tc.offset
			p := buildPod(pclq, tc.index, "abc", kube.New(configv1alpha1.KubeSchedulerConfig{}, nil), nil, "")
			assert.Equal(t, tc.want, p.Labels[grovev1alpha1.LabelPodCliqueScalingGroupPodIndex])
		})
	}
}

func TestGrovesVariablesComeBeforeTheUsersSoTheyExpandInThem(t *testing.T) {
	pclq := builders.PodClique("ns", "inf-0-w").OfReplica("inf", "0").Obj()
	pclq.Spec.PodSpec.Containers[0].Env = []corev1.EnvVar{{Name: "PEER", Value: "$(GROVE_HEADLESS_SERVICE)"}}
	p := buildPod(pclq, 0, "abc", kube.New(configv1alpha1.KubeSchedulerConfig{}, nil), nil, "")
	env := p.Spec.Containers[0].Env
	require.NotEmpty(t, env)
	assert.Equal(t, grovev1alpha1.EnvPCSName, env[0].Name)
	assert.Equal(t, "PEER", env[len(env)-1].Name)
	assert.Len(t, pclq.Spec.PodSpec.Containers[0].Env, 1, "the PodClique's own spec is not changed")
}

func TestPodTemplateHashIgnoresOperatorBookkeeping(t *testing.T) {
	pclq := builders.PodClique("ns", "c").Annotation("grove.io/template-replicas", "1").TemplateReplicas(1).
		PodSpec(corev1.PodSpec{Containers: []corev1.Container{{Name: "w", Image: "a"}}}).Obj()
	before := PodTemplateHash(pclq)
	pclq.Annotations["grove.io/template-replicas"] = "5" // an earlier version's bookkeeping
	pclq.Spec.TemplateReplicas = ptr.To[int32](5)
	pclq.Spec.Replicas = 5
	assert.Equal(t, before, PodTemplateHash(pclq), "scaling does not make pods outdated")
	pclq.Spec.PodSpec.Containers[0].Image = "b"
	assert.NotEqual(t, before, PodTemplateHash(pclq), "an image change does")
}

func TestParentsReadyCountsASucceededParentAndWaitsForSuccessWhereRequired(t *testing.T) {
	parent := func(ready int32, succeeded bool) *grovev1alpha1.PodClique {
		b := builders.PodClique("ns", "job-0-initializer").Status(grovev1alpha1.PodCliqueStatus{ReadyReplicas: ready})
		if succeeded {
			b.Succeeded()
		}
		return b.Obj()
	}
	child := func(mustSucceed bool) *grovev1alpha1.PodClique {
		b := builders.PodClique("ns", "job-0-node").StartsAfter("job-0-initializer")
		if mustSucceed {
			b.StartsAfterSucceeded("job-0-initializer")
		}
		return b.Obj()
	}
	scheme := runtime.NewScheme()
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	for _, tc := range []struct {
		name        string
		parent      *grovev1alpha1.PodClique
		mustSucceed bool
		want        bool
	}{
		{"parent ready", parent(1, false), false, true},
		{"parent not ready yet", parent(0, false), false, false},
		{"parent succeeded, its pods gone", parent(0, true), false, true},
		{"parent must succeed and is only ready", parent(1, false), true, false},
		{"parent must succeed and did", parent(0, true), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.parent).Build()}
			got, err := r.parentsReady(context.Background(), child(tc.mustSucceed))
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestAParentOfAScalingGroupReplicaScaledAwayHoldsBackNobody(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	child := builders.PodClique("ns", "inf-0-router").OfReplica("inf", "0").StartsAfter("inf-0-prefill-0-leader", "inf-0-prefill-1-leader").Obj()
	group := func(replicas int32) *grovev1alpha1.PodCliqueScalingGroup {
		return builders.PodCliqueScalingGroup("ns", "inf-0-prefill", "leader", "worker").Replicas(replicas, 2).OfReplica("inf", "0").Obj()
	}
	leader0 := builders.PodClique("ns", "inf-0-prefill-0-leader").Status(grovev1alpha1.PodCliqueStatus{ReadyReplicas: 1}).Obj()
	for _, tc := range []struct {
		name string
		objs []client.Object
		want bool
	}{
		{"the group keeps both replicas: the missing one is being created, waited for", []client.Object{group(2), leader0}, false},
		{"kubectl scale took the group to 1: its second replica holds back nobody", []client.Object{group(1), leader0}, true},
		{"scaled to 0: idle, nobody waits for it", []client.Object{group(0)}, true},
		{"no group at all (not created yet): waited for", []client.Object{leader0}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme).WithObjects(tc.objs...).Build()}
			got, err := r.parentsReady(context.Background(), child)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestTheBasePodGangLabelDoesNotChangeThePodTemplateHash(t *testing.T) {
	pclq := builders.PodClique("ns", "inf-0-prefill-1-worker").OfReplica("inf", "0").OfGroupReplica("inf-0-prefill", "1").InGang("inf-0-prefill-0").Obj()
	before := PodTemplateHash(pclq)
	pclq.Labels[grovev1alpha1.LabelBasePodGang] = "inf-0"
	assert.Equal(t, before, PodTemplateHash(pclq), "pods created before the label existed are not replaced for it")
	assert.Equal(t, "inf-0", buildPod(pclq, 0, before, kube.New(configv1alpha1.KubeSchedulerConfig{}, nil), nil, "").Labels[grovev1alpha1.LabelBasePodGang], "new pods carry it")
}

func TestACliqueWhosePodsAreAllBeingReplacedIsRolledNotBreached(t *testing.T) {
	// A scaling group's member (or a clique with replicas <= maxUnavailable) had all its pods
	// replaced at once: none is outdated any more, none of the new ones is Ready yet.
	pclq := builders.PodClique("ns", "c").Replicas(2, 2).OfGroupReplica("g", "0").Obj()
	pclq.Status.WasAvailable, pclq.Status.CurrentPodTemplateHash = true, ptr.To("old")
	now := metav1.NewTime(time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC))

	st, _ := computeStatus(pclq, []*corev1.Pod{pod(0, "new", false), pod(1, "new", false)}, "new", waits{}, now)

	breach := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
	require.NotNil(t, breach)
	assert.Equal(t, metav1.ConditionUnknown, breach.Status, breach.Message)
	assert.Equal(t, grovev1alpha1.ReasonUpdateInProgress, breach.Reason)
	update := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionUpdateInProgress)
	require.NotNil(t, update)
	assert.Equal(t, grovev1alpha1.ReasonProgressing, update.Reason)

	// Once the replacements are Ready the update ends and the clique is judged as usual.
	pclq.Status = st
	st, _ = computeStatus(pclq, []*corev1.Pod{pod(0, "new", true), pod(1, "new", true)}, "new", waits{}, now)
	breach = meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
	assert.Equal(t, metav1.ConditionFalse, breach.Status, breach.Message)
	assert.NotNil(t, st.UpdateProgress.UpdateEndedAt)
}

func TestAStalledUpdateIsToldOncePerStall(t *testing.T) {
	cond := func(reason string) []metav1.Condition {
		return []metav1.Condition{{Type: grovev1alpha1.ConditionUpdateInProgress, Reason: reason}}
	}
	assert.True(t, stalled(cond(grovev1alpha1.ReasonProgressing), cond(grovev1alpha1.ReasonProgressDeadlineExceeded)), "progressing → stalled: an event")
	assert.False(t, stalled(cond(grovev1alpha1.ReasonProgressDeadlineExceeded), cond(grovev1alpha1.ReasonProgressDeadlineExceeded)), "still stalled: no second event")
	assert.False(t, stalled(cond(grovev1alpha1.ReasonProgressDeadlineExceeded), cond(grovev1alpha1.ReasonProgressing)), "moving again")
	assert.True(t, stalled(nil, cond(grovev1alpha1.ReasonProgressDeadlineExceeded)))
}
