package podclique

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// podGangOf makes the PodGang "g" (generation 2) referencing pods, created at created, and
// acknowledged for ackGeneration (0: never acknowledged).
func podGangOf(created time.Time, ackGeneration int64, pods ...string) *schedulerv1alpha1.PodGang {
	pg := builders.PodGang("ns", "g").Generation(2).Created(created).PodGroup("c", 0, pods...)
	if ackGeneration > 0 {
		pg.AcknowledgedAt(ackGeneration)
	}
	return pg.Obj()
}

// gatedClique is the PodClique "c" of two pods, minAvailable 2, in the PodGang "g".
func gatedClique() *builders.PodCliqueBuilder {
	return builders.PodClique("ns", "c").UID("u").InGang("g").Replicas(2, 2)
}

func TestPodCreationWaitsForANewPodGangsAcknowledgementAtMostTheGrace(t *testing.T) {
	now := time.Now()
	cases := []struct {
		name      string
		pg        *schedulerv1alpha1.PodGang
		wantOK    bool
		wantAfter time.Duration
	}{
		{"no PodGang yet: wait for its creation event", nil, false, 0},
		{"acknowledged: create now", podGangOf(now, 2), true, 0},
		{"acknowledged an older generation: create now (gated), the new acknowledgement ungates", podGangOf(now, 1), true, 0},
		{"new and unanswered: look again when the grace ends", podGangOf(now.Add(-2*time.Second), 0), false, ackGrace - 2*time.Second},
		{"unanswered past the grace: create gated", podGangOf(now.Add(-ackGrace-time.Second), 0), true, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, after := waitForPodGang(tc.pg, now)
			assert.Equal(t, tc.wantOK, ok)
			assert.Equal(t, tc.wantAfter, after)
		})
	}
}

func TestAPodIsSchedulableOnlyWhenItsPodGangReferencesItAndIsAcknowledged(t *testing.T) {
	cases := []struct {
		name string
		s    schedulable
		pod  string
		want bool
	}{
		{"acknowledged and referenced", schedulable{pg: podGangOf(time.Now(), 2, "c-0"), parents: true, baseScheduled: true}, "c-0", true},
		{"not referenced yet (the clique grew)", schedulable{pg: podGangOf(time.Now(), 2, "c-0"), parents: true, baseScheduled: true}, "c-1", false},
		{"acknowledged an older generation", schedulable{pg: podGangOf(time.Now(), 1, "c-0"), parents: true, baseScheduled: true}, "c-0", false},
		{"never acknowledged", schedulable{pg: podGangOf(time.Now(), 0, "c-0"), parents: true, baseScheduled: true}, "c-0", false},
		{"parents not up (startup order)", schedulable{pg: podGangOf(time.Now(), 2, "c-0"), parents: false, baseScheduled: true}, "c-0", false},
		{"a scaled gang whose base gang is not Scheduled yet", schedulable{pg: podGangOf(time.Now(), 2, "c-0"), parents: true}, "c-0", false},
		{"no PodGang", schedulable{parents: true, baseScheduled: true}, "c-0", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.s.pod(tc.pod))
		})
	}
}

func TestReconcileCreatesPodsUngatedOnlyWhenTheirPodGangIsAcknowledged(t *testing.T) {
	cases := []struct {
		name      string
		pg        *schedulerv1alpha1.PodGang
		wantPods  int
		wantGated []bool
	}{
		{"acknowledged: both born schedulable", podGangOf(time.Now(), 2, "c-0", "c-1"), 2, []bool{false, false}},
		{"acknowledged, references only the first: the second waits gated", podGangOf(time.Now(), 2, "c-0"), 2, []bool{false, true}},
		{"unanswered past the grace: both gated", podGangOf(time.Now().Add(-time.Minute), 0, "c-0", "c-1"), 2, []bool{true, true}},
		{"unanswered and new: none yet", podGangOf(time.Now(), 0, "c-0", "c-1"), 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pclq := gatedClique().Obj()
			c := fakeClient(t).WithObjects(pclq, tc.pg).WithStatusSubresource(pclq).Build()
			r := reconcilerFor(t, c)
			res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pclq)})
			require.NoError(t, err)
			pods := &corev1.PodList{}
			require.NoError(t, c.List(context.Background(), pods, client.InNamespace("ns")))
			require.Len(t, pods.Items, tc.wantPods)
			if tc.wantPods == 0 {
				assert.Positive(t, res.RequeueAfter, "looks again when the grace ends")
				return
			}
			var gated []bool
			for _, p := range pods.Items {
				gated = append(gated, hasGate(&p))
			}
			assert.Equal(t, tc.wantGated, gated)
		})
	}
}

func TestPodsJoinTheSchedulingGroupTheirPodGangAssigns(t *testing.T) {
	pg := podGangOf(time.Now(), 2, "c-0", "c-1")
	pg.Status.SchedulingGroups = []schedulerv1alpha1.SchedulingGroup{{PodGroup: "c", Name: "c-own"}}
	pclq := gatedClique().Obj()
	c := fakeClient(t).WithObjects(pclq, pg).WithStatusSubresource(pclq).Build()

	_, err := reconcilerFor(t, c).Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pclq)})

	require.NoError(t, err)
	pods := &corev1.PodList{}
	require.NoError(t, c.List(context.Background(), pods, client.InNamespace("ns")))
	require.Len(t, pods.Items, 2)
	for _, p := range pods.Items {
		assert.Equal(t, "c-own", podSchedulingGroup(&p))
	}
}

// A pod created gated before the acknowledgement names the group the backend's PreparePod
// guessed; the field is immutable, so once the PodGang assigns another the pod is recreated
// rather than ungated into a group the scheduler does not have.
func TestAGatedPodInAnotherSchedulingGroupThanAssignedIsRecreatedNotUngated(t *testing.T) {
	pg := podGangOf(time.Now(), 2, "c-0", "c-1")
	pg.Status.SchedulingGroups = []schedulerv1alpha1.SchedulingGroup{{PodGroup: "c", Name: "c-own"}}
	pclq := gatedClique().Obj()
	r := reconcilerFor(t, nil)
	backend := r.Backends.Default()
	early := buildPod(pclq, 0, PodTemplateHash(pclq), backend, nil, "")
	early.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("g")}
	right := buildPod(pclq, 1, PodTemplateHash(pclq), backend, pg, "")
	require.True(t, hasGate(early))
	require.True(t, hasGate(right))
	c := fakeClient(t).WithObjects(pclq, pg, early, right).WithStatusSubresource(pclq).Build()
	r.Client = slimPods{c}

	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pclq)})

	require.NoError(t, err)
	pods := &corev1.PodList{}
	require.NoError(t, c.List(context.Background(), pods, client.InNamespace("ns")))
	require.Len(t, pods.Items, 1, "the pod in the wrong group is deleted, to be recreated")
	assert.Equal(t, "c-1", pods.Items[0].Name)
	assert.False(t, hasGate(&pods.Items[0]), "the pod in the assigned group is ungated")
}

// Resource sharing and MNNVL reach the pod as upstream Grove wires them: the shared claims first,
// then the clique's own (its pod index's PerReplica one), each in every container; the
// ComputeDomain's channel only in the containers that request NVIDIA GPUs.
func TestPodsClaimTheSharedDevicesAndTheirReplicasComputeDomain(t *testing.T) {
	pclq := gatedClique().Obj()
	pclq.Spec.PodSpec.Containers = append(pclq.Spec.PodSpec.Containers, corev1.Container{Name: "gpu", Resources: corev1.ResourceRequirements{
		Limits: corev1.ResourceList{grovev1alpha1.ResourceNVIDIAGPU: resource.MustParse("8")}}})
	pclq.Spec.SharedResourceClaims = []string{"inf-all-nic", "inf-0-gpu"}
	pclq.Spec.ResourceSharing = []grovev1alpha1.ResourceSharingSpec{
		{Name: "scratch", Scope: grovev1alpha1.ResourceSharingScopePerReplica}, {Name: "cache", Scope: grovev1alpha1.ResourceSharingScopeAllReplicas},
	}
	pclq.Spec.ComputeDomainClaimTemplate = "inf-0-fabric"
	r := reconcilerFor(t, nil)
	pod := buildPod(pclq, 2, PodTemplateHash(pclq), r.Backends.Default(), nil, "")

	var claims []string
	for _, rc := range pod.Spec.ResourceClaims {
		if rc.ResourceClaimName != nil {
			claims = append(claims, *rc.ResourceClaimName)
		} else {
			claims = append(claims, rc.Name+"<-template "+*rc.ResourceClaimTemplateName)
		}
	}
	assert.Equal(t, []string{"inf-all-nic", "inf-0-gpu", pclq.Name + "-all-cache", pclq.Name + "-2-scratch", "mnnvl-claim<-template inf-0-fabric"}, claims)
	shared := []corev1.ResourceClaim{{Name: "inf-all-nic"}, {Name: "inf-0-gpu"}, {Name: pclq.Name + "-all-cache"}, {Name: pclq.Name + "-2-scratch"}}
	assert.Equal(t, shared, pod.Spec.Containers[0].Resources.Claims, "a container without GPUs sees the shared devices only")
	assert.Equal(t, append(shared, corev1.ResourceClaim{Name: grovev1alpha1.MNNVLClaimName}), pod.Spec.Containers[1].Resources.Claims)
	assert.Equal(t, PodTemplateHash(pclq), pod.Labels[grovev1alpha1.LabelPodTemplateHash], "claims are no template change")
}

func TestAScaledGangWaitsForItsBaseGangToBeScheduled(t *testing.T) {
	scheduled := func(status metav1.ConditionStatus) *schedulerv1alpha1.PodGang {
		return builders.PodGang("ns", "inf-0").Condition(schedulerv1alpha1.ConditionScheduled, status, "r").Obj()
	}
	for _, tc := range []struct {
		name string
		base *schedulerv1alpha1.PodGang
		of   string // the clique's grove.io/base-podgang label
		want bool
	}{
		{"a clique of a base gang never waits", nil, "", true},
		{"base gang Scheduled", scheduled(metav1.ConditionTrue), "inf-0", true},
		{"base gang not placed yet", scheduled(metav1.ConditionFalse), "inf-0", false},
		{"base gang not created yet", nil, "inf-0", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := fakeClient(t)
			if tc.base != nil {
				b = b.WithObjects(tc.base)
			}
			r := reconcilerFor(t, b.Build())
			pclq := builders.PodClique("ns", "inf-0-g-1-m").Obj()
			if tc.of != "" {
				pclq.Labels[grovev1alpha1.LabelBasePodGang] = tc.of
			}
			shares, known, err := r.shares(context.Background(), pclq)
			require.NoError(t, err)
			require.True(t, known)
			got, err := r.allScheduled(context.Background(), "ns", shares[0].After)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestAPodGangStatusChangeAPassReadsWakesItsCliques(t *testing.T) {
	queued := func(pg *schedulerv1alpha1.PodGang, admitted metav1.ConditionStatus) *schedulerv1alpha1.PodGang {
		pg.Spec.QueueName = "team-a"
		meta.SetStatusCondition(&pg.Status.Conditions, metav1.Condition{Type: schedulerv1alpha1.ConditionQueueAdmitted, Status: admitted, Reason: "r"})
		return pg
	}
	grouped := func(pg *schedulerv1alpha1.PodGang, group string) *schedulerv1alpha1.PodGang {
		pg.Status.SchedulingGroups = []schedulerv1alpha1.SchedulingGroup{{PodGroup: "c", Name: group}}
		return pg
	}
	gang := func(ack int64, scheduled metav1.ConditionStatus) *schedulerv1alpha1.PodGang {
		pg := podGangOf(time.Now(), ack, "c-0")
		meta.SetStatusCondition(&pg.Status.Conditions, metav1.Condition{Type: schedulerv1alpha1.ConditionScheduled, Status: scheduled, Reason: "r"})
		return pg
	}
	for _, tc := range []struct {
		name     string
		old, new *schedulerv1alpha1.PodGang
		want     bool
	}{
		{"acknowledged", gang(0, metav1.ConditionFalse), gang(2, metav1.ConditionFalse), true},
		{"placed: its scaled gangs may go", gang(2, metav1.ConditionFalse), gang(2, metav1.ConditionTrue), true},
		{"nothing a clique acts on changed", gang(2, metav1.ConditionTrue), gang(2, metav1.ConditionTrue), false},
		{"Kueue admitted the queued gang", queued(gang(2, metav1.ConditionFalse), metav1.ConditionFalse), queued(gang(2, metav1.ConditionFalse), metav1.ConditionTrue), true},
		{"the backend assigned its pod groups' scheduling groups", gang(2, metav1.ConditionFalse), grouped(gang(2, metav1.ConditionFalse), "sg-a"), true},
		{"a scheduling group reassigned", grouped(gang(2, metav1.ConditionFalse), "sg-a"), grouped(gang(2, metav1.ConditionFalse), "sg-b"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, conditionsChanged{}.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}))
		})
	}
}
