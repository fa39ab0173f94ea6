package statemetrics

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
	"github.com/kubegrove/grove/test/builders"
)

var now = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// cond is a condition that last changed at.
func cond(t string, status metav1.ConditionStatus, reason string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: t, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(at)}
}

// gang is PodGang ns/name of backend kai created at created, with conds.
func gang(ns, name string, created time.Time, conds ...metav1.Condition) *schedulerv1alpha1.PodGang {
	pg := builders.PodGang(ns, name).Backend("kai").Created(created).Obj()
	pg.Status.Conditions = conds
	return pg
}

func TestUnscheduledReasonIsTheBoundedScheduledReason(t *testing.T) {
	created := now.Add(-time.Minute)
	scheduled := func(status metav1.ConditionStatus, reason string) metav1.Condition {
		return cond(schedulerv1alpha1.ConditionScheduled, status, reason, created)
	}
	initialized := func(status metav1.ConditionStatus) metav1.Condition {
		return cond(schedulerv1alpha1.ConditionInitialized, status, "r", created)
	}
	queued := func(pg *schedulerv1alpha1.PodGang) *schedulerv1alpha1.PodGang {
		pg.Spec.QueueName = "team"
		return pg
	}
	for _, tc := range []struct {
		name string
		pg   *schedulerv1alpha1.PodGang
		want string // "": not waiting
	}{
		{"no status yet: its pods are being created", gang("ns", "g", created), UnscheduledPodsPending},
		{"placed", gang("ns", "g", created, scheduled(metav1.ConditionTrue, schedulerv1alpha1.ReasonPlaced)), ""},
		{"the scheduler found no room", gang("ns", "g", created, scheduled(metav1.ConditionFalse, corev1.PodReasonUnschedulable)), UnscheduledUnschedulable},
		{"its pods are gated", gang("ns", "g", created, scheduled(metav1.ConditionFalse, corev1.PodReasonSchedulingGated)), UnscheduledSchedulingGated},
		{"the scheduler said nothing, all pods exist", gang("ns", "g", created, initialized(metav1.ConditionTrue),
			scheduled(metav1.ConditionFalse, schedulerv1alpha1.ReasonWaitingForPlacement)), UnscheduledWaitingForPlacement},
		{"the scheduler said nothing, pods missing", gang("ns", "g", created, initialized(metav1.ConditionFalse),
			scheduled(metav1.ConditionFalse, schedulerv1alpha1.ReasonWaitingForPlacement)), UnscheduledPodsPending},
		{"the scheduler's reason wins over pods missing", gang("ns", "g", created, initialized(metav1.ConditionFalse),
			scheduled(metav1.ConditionFalse, corev1.PodReasonUnschedulable)), UnscheduledUnschedulable},
		{"a scheduler's own reason is Other", gang("ns", "g", created, scheduled(metav1.ConditionFalse, "PodGroupNotReady")), UnscheduledOther},
		{"Kueue has not admitted it: whatever the scheduler says", queued(gang("ns", "g", created, scheduled(metav1.ConditionFalse, corev1.PodReasonSchedulingGated))), UnscheduledQueuePending},
		{"Kueue evicted it", queued(gang("ns", "g", created, cond(schedulerv1alpha1.ConditionQueueAdmitted, metav1.ConditionFalse, schedulerv1alpha1.ReasonQueueEvicted, created),
			scheduled(metav1.ConditionFalse, corev1.PodReasonSchedulingGated))), UnscheduledQueuePending},
		{"Kueue admitted it: the scheduler's reason", queued(gang("ns", "g", created, cond(schedulerv1alpha1.ConditionQueueAdmitted, metav1.ConditionTrue, schedulerv1alpha1.ReasonQueueAdmitted, created),
			scheduled(metav1.ConditionFalse, corev1.PodReasonUnschedulable))), UnscheduledUnschedulable},
		{"admitted through its owner: never waits for the queue", func() *schedulerv1alpha1.PodGang {
			pg := queued(gang("ns", "g", created, scheduled(metav1.ConditionFalse, corev1.PodReasonUnschedulable)))
			pg.Spec.QueueAdmittedByOwner = true
			return pg
		}(), UnscheduledUnschedulable},
		{"being deleted", func() *schedulerv1alpha1.PodGang {
			pg := gang("ns", "g", created)
			pg.DeletionTimestamp = &metav1.Time{Time: now}
			return pg
		}(), ""},
		{"its pods all succeeded", func() *schedulerv1alpha1.PodGang {
			pg := gang("ns", "g", created, scheduled(metav1.ConditionFalse, schedulerv1alpha1.ReasonWaitingForPlacement))
			pg.Status.Phase = schedulerv1alpha1.PodGangPhaseSucceeded
			return pg
		}(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unscheduledGangs([]*schedulerv1alpha1.PodGang{tc.pg}, now)
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, map[gangKey]gangWait{{"ns", "kai", tc.want}: {count: 1, longest: time.Minute}}, got)
		})
	}
}

func TestUnscheduledGangsCountAndLongestWaitPerSeries(t *testing.T) {
	unschedulable := func(at time.Time) metav1.Condition {
		return cond(schedulerv1alpha1.ConditionScheduled, metav1.ConditionFalse, corev1.PodReasonUnschedulable, at)
	}
	// Placed for days, lost a pod a minute ago: it has waited a minute.
	replaced := gang("ns", "replaced", now.Add(-72*time.Hour), unschedulable(now.Add(-time.Minute)))
	replaced.Status.LastScheduled = &metav1.Time{Time: now.Add(-71 * time.Hour)}
	other := gang("other", "g", now.Add(-time.Hour), unschedulable(now.Add(-time.Hour)))
	other.Labels[grovev1alpha1.LabelSchedulerName] = "volcano"
	gangs := []*schedulerv1alpha1.PodGang{
		gang("ns", "old", now.Add(-20*time.Minute), unschedulable(now.Add(-19*time.Minute))),
		gang("ns", "new", now.Add(-3*time.Minute), unschedulable(now.Add(-2*time.Minute))),
		replaced,
		gang("ns", "creating", now.Add(-5*time.Second)),
		other,
		// Created after now by the clock of the API server: no negative wait.
		gang("skew", "future", now.Add(time.Second), unschedulable(now)),
	}

	got := unscheduledGangs(gangs, now)

	assert.Equal(t, map[gangKey]gangWait{
		{"ns", "kai", UnscheduledUnschedulable}:        {count: 3, longest: 20 * time.Minute},
		{"skew", "kai", UnscheduledUnschedulable}:      {count: 1, longest: 0},
		{"ns", "kai", UnscheduledPodsPending}:          {count: 1, longest: 5 * time.Second},
		{"other", "volcano", UnscheduledUnschedulable}: {count: 1, longest: time.Hour},
	}, got)
}

// podBuilder starts a pod of PodClique ns/pclq in PodGang podGang, with gates.
func podBuilder(name, pclq, podGang string, gates ...string) *builders.PodBuilder {
	return builders.Pod("ns", name).Label(grovev1alpha1.LabelPodClique, pclq).Label(grovev1alpha1.LabelPodGang, podGang).SchedulingGates(gates...)
}

// pod is a pod of PodClique ns/pclq in PodGang podGang, with gates.
func pod(name, pclq, podGang string, gates ...string) *corev1.Pod {
	return podBuilder(name, pclq, podGang, gates...).Obj()
}

func TestGateReasonFollowsTheOperatorsChecks(t *testing.T) {
	ours := grovev1alpha1.SchedulingGatePodGangPendingCreation
	acked := func(name string, pods ...string) *schedulerv1alpha1.PodGang {
		return builders.PodGang("ns", name).PodGroup("grp", 1, pods...).Acknowledged().Obj()
	}
	placed := func(pg *schedulerv1alpha1.PodGang) *schedulerv1alpha1.PodGang {
		pg.Status.Conditions = append(pg.Status.Conditions, cond(schedulerv1alpha1.ConditionScheduled, metav1.ConditionTrue, schedulerv1alpha1.ReasonPlaced, now))
		return pg
	}
	worker := builders.PodClique("ns", "inf-0-worker").OfReplica("inf", "0").InGang("inf-0").Obj()
	leaderUp := builders.PodClique("ns", "inf-0-leader").OfReplica("inf", "0").Ready(1).Obj()
	leaderDown := builders.PodClique("ns", "inf-0-leader").OfReplica("inf", "0").Obj()
	follower := builders.PodClique("ns", "inf-0-follower").OfReplica("inf", "0").InGang("inf-0").StartsAfter("inf-0-leader").Obj()
	// A parent in scaling-group replica 1 of a group scaled to 1 replica: scaled away.
	scaledFollower := builders.PodClique("ns", "inf-0-follower").OfReplica("inf", "0").InGang("inf-0").StartsAfter("inf-0-sg-1-p").Obj()
	wantedFollower := builders.PodClique("ns", "inf-0-follower").OfReplica("inf", "0").InGang("inf-0").StartsAfter("inf-0-sg-0-p").Obj()
	group := builders.PodCliqueScalingGroup("ns", "inf-0-sg", "p").OfReplica("inf", "0").Obj()
	scaled := podBuilder("inf-0-sg-1-w-0", "inf-0-sg-1-w", "inf-0-sg-0", ours).Label(grovev1alpha1.LabelBasePodGang, "inf-0").Obj()
	held := podBuilder("inf-0-follower-0", "inf-0-follower", "inf-0").
		Annotation(grovev1alpha1.AnnotationStartupGate, grovev1alpha1.StartupGateWaiting).Obj()
	released := podBuilder("inf-0-follower-0", "inf-0-follower", "inf-0").
		Annotation(grovev1alpha1.AnnotationStartupGate, grovev1alpha1.StartupGateReleased).Obj()
	// Under Coherent, replica 0's epoch-2 anchor waits for epoch 1's.
	pgm := builders.PodGangMap("ns", "inf-0").Label(grovev1alpha1.LabelPartOf, "inf").
		Anchor("1", "").Pods("inf-0-worker", 1).
		Anchor("2", "").Pods("inf-0-worker", 1).DependsOn("1").Obj()
	staleAck := builders.PodGang("ns", "inf-0").PodGroup("grp", 1, "inf-0-worker-0").Generation(2).AcknowledgedAt(1).Obj()

	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		cliques []*grovev1alpha1.PodClique
		gangs   []*schedulerv1alpha1.PodGang
		groups  []*grovev1alpha1.PodCliqueScalingGroup
		maps    []*grovev1alpha1.PodGangMap
		want    string // "": not held
	}{
		{name: "nothing holds it", pod: pod("inf-0-worker-0", "inf-0-worker", "inf-0")},
		{name: "held at start by a parent", pod: held, want: GatedParentClique},
		{name: "released at start", pod: released},
		{name: "Kueue's admission gate", pod: pod("p", "inf-0-worker", "inf-0", ours, kueuegang.SchedulingGateAdmission), want: GatedQueueAdmission},
		{name: "Kueue's topology gate", pod: pod("p", "inf-0-worker", "inf-0", SchedulingGateKueueTopology, ours), want: GatedTopology},
		{name: "Kueue admits before it places", pod: pod("p", "inf-0-worker", "inf-0", SchedulingGateKueueTopology, kueuegang.SchedulingGateAdmission), want: GatedQueueAdmission},
		{name: "another controller's gate", pod: pod("p", "inf-0-worker", "inf-0", "example.com/hold"), want: GatedOther},
		{name: "Kueue's gate wins over another's", pod: pod("p", "inf-0-worker", "inf-0", "example.com/hold", SchedulingGateKueueTopology), want: GatedTopology},
		{name: "its PodGang does not exist", pod: pod("inf-0-worker-0", "inf-0-worker", "inf-0", ours), cliques: []*grovev1alpha1.PodClique{worker}, want: GatedGangNotCreated},
		{name: "its PodGang is named by the clique", pod: pod("inf-0-worker-0", "inf-0-worker", "", ours), cliques: []*grovev1alpha1.PodClique{worker},
			gangs: []*schedulerv1alpha1.PodGang{builders.PodGang("ns", "inf-0").PodGroup("grp", 1, "inf-0-worker-0").Obj()}, want: GatedBackendNotReady},
		{name: "not acknowledged", pod: pod("inf-0-worker-0", "inf-0-worker", "inf-0", ours),
			gangs: []*schedulerv1alpha1.PodGang{builders.PodGang("ns", "inf-0").PodGroup("grp", 1, "inf-0-worker-0").Obj()}, want: GatedBackendNotReady},
		{name: "acknowledged for an older generation", pod: pod("inf-0-worker-0", "inf-0-worker", "inf-0", ours),
			gangs: []*schedulerv1alpha1.PodGang{staleAck}, want: GatedBackendNotReady},
		{name: "the gang does not name the pod yet", pod: pod("inf-0-worker-1", "inf-0-worker", "inf-0", ours),
			gangs: []*schedulerv1alpha1.PodGang{acked("inf-0", "inf-0-worker-0")}, want: GatedGangNotCreated},
		{name: "a scaled gang waits for its base gang", pod: scaled,
			gangs: []*schedulerv1alpha1.PodGang{acked("inf-0-sg-0", scaled.Name), acked("inf-0")}, want: GatedBaseGangNotScheduled},
		{name: "a scaled gang whose base gang is placed", pod: scaled,
			gangs: []*schedulerv1alpha1.PodGang{acked("inf-0-sg-0", scaled.Name), placed(acked("inf-0"))}, want: GatedOther},
		{name: "a Coherent gang waits for the epochs it depends on", pod: pod("inf-0-worker-1", "inf-0-worker", "inf-0-2", ours),
			gangs: []*schedulerv1alpha1.PodGang{acked("inf-0-2", "inf-0-worker-1"), acked("inf-0-1")}, maps: []*grovev1alpha1.PodGangMap{pgm}, want: GatedBaseGangNotScheduled},
		{name: "a Coherent gang whose epochs are placed", pod: pod("inf-0-worker-1", "inf-0-worker", "inf-0-2", ours),
			gangs: []*schedulerv1alpha1.PodGang{acked("inf-0-2", "inf-0-worker-1"), placed(acked("inf-0-1"))}, maps: []*grovev1alpha1.PodGangMap{pgm}, want: GatedOther},
		{name: "its parent clique is not up", pod: pod("inf-0-follower-0", "inf-0-follower", "inf-0", ours),
			cliques: []*grovev1alpha1.PodClique{follower, leaderDown}, gangs: []*schedulerv1alpha1.PodGang{acked("inf-0", "inf-0-follower-0")}, want: GatedParentClique},
		{name: "its parent clique does not exist", pod: pod("inf-0-follower-0", "inf-0-follower", "inf-0", ours),
			cliques: []*grovev1alpha1.PodClique{follower}, gangs: []*schedulerv1alpha1.PodGang{acked("inf-0", "inf-0-follower-0")}, want: GatedParentClique},
		{name: "its parent clique is up: lifted next pass", pod: pod("inf-0-follower-0", "inf-0-follower", "inf-0", ours),
			cliques: []*grovev1alpha1.PodClique{follower, leaderUp}, gangs: []*schedulerv1alpha1.PodGang{acked("inf-0", "inf-0-follower-0")}, want: GatedOther},
		{name: "its parent's group replica was scaled away", pod: pod("inf-0-follower-0", "inf-0-follower", "inf-0", ours),
			cliques: []*grovev1alpha1.PodClique{scaledFollower}, groups: []*grovev1alpha1.PodCliqueScalingGroup{group},
			gangs: []*schedulerv1alpha1.PodGang{acked("inf-0", "inf-0-follower-0")}, want: GatedOther},
		{name: "its parent's group replica is still wanted", pod: pod("inf-0-follower-0", "inf-0-follower", "inf-0", ours),
			cliques: []*grovev1alpha1.PodClique{wantedFollower}, groups: []*grovev1alpha1.PodCliqueScalingGroup{group},
			gangs: []*schedulerv1alpha1.PodGang{acked("inf-0", "inf-0-follower-0")}, want: GatedParentClique},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newView(tc.cliques, tc.gangs, tc.groups, tc.maps)
			reason, held := gateReason(tc.pod, v)
			assert.Equal(t, tc.want != "", held)
			assert.Equal(t, tc.want, reason)
		})
	}
}

func TestGatedPodsCountsWaitingPodsByNamespace(t *testing.T) {
	ours := grovev1alpha1.SchedulingGatePodGangPendingCreation
	deleting := podBuilder("deleting", "c", "g", ours).DeletedAt(now).Obj()
	failed := podBuilder("failed", "c", "g", ours).Phase(corev1.PodFailed).Obj()
	elsewhere := pod("elsewhere", "c", "g", ours)
	elsewhere.Namespace = "other"
	pods := []*corev1.Pod{pod("a", "c", "g", ours), pod("b", "c", "g", ours), pod("c", "c", "g", kueuegang.SchedulingGateAdmission),
		pod("running", "c", "g"), deleting, failed, elsewhere}

	got := gatedPods(pods, newView(nil, nil, nil, nil))

	assert.Equal(t, map[podKey]int{{"ns", GatedGangNotCreated}: 2, {"ns", GatedQueueAdmission}: 1, {"other", GatedGangNotCreated}: 1}, got)
}

func TestWorkloadsByPhaseAndUpdates(t *testing.T) {
	started := metav1.NewTime(now.Add(-time.Hour))
	withCondition := func(pcs *grovev1alpha1.PodCliqueSet, status metav1.ConditionStatus, reason string) *grovev1alpha1.PodCliqueSet {
		pcs.Status.Conditions = append(pcs.Status.Conditions, cond(grovev1alpha1.ConditionUpdateInProgress, status, reason, started.Time))
		return pcs
	}
	inPhase := func(pcs *grovev1alpha1.PodCliqueSet, phase grovev1alpha1.PodCliqueSetPhase) *grovev1alpha1.PodCliqueSet {
		pcs.Status.Phase = phase
		return pcs
	}
	rolling := withCondition(inPhase(builders.PodCliqueSet("ns", "rolling").Obj(), grovev1alpha1.PodCliqueSetPhaseRunning), metav1.ConditionTrue, grovev1alpha1.ReasonProgressing)
	rolling.Status.UpdateProgress = &grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: started, CurrentlyUpdating: []grovev1alpha1.PodCliqueSetReplicaUpdateProgress{
		{ReplicaIndex: 0, UpdateStartedAt: started}, {ReplicaIndex: 1, UpdateStartedAt: started, UpdateEndedAt: &started}}}
	stalled := withCondition(inPhase(builders.PodCliqueSet("ns", "stalled").UpdateStrategy(grovev1alpha1.CoherentStrategy).Obj(), grovev1alpha1.PodCliqueSetPhaseRunning),
		metav1.ConditionUnknown, grovev1alpha1.ReasonProgressDeadlineExceeded)
	stalled.Status.UpdateProgress = &grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: started,
		CurrentlyUpdating: []grovev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: 2, UpdateStartedAt: started}}}
	ended := withCondition(inPhase(builders.PodCliqueSet("ns", "ended").Obj(), grovev1alpha1.PodCliqueSetPhaseRunning), metav1.ConditionFalse, grovev1alpha1.ReasonNoActiveUpdate)
	ended.Status.UpdateProgress = &grovev1alpha1.PodCliqueSetUpdateProgress{UpdateStartedAt: started, UpdateEndedAt: &started,
		CurrentlyUpdating: []grovev1alpha1.PodCliqueSetReplicaUpdateProgress{{ReplicaIndex: 0, UpdateStartedAt: started}}}
	failed := inPhase(builders.PodCliqueSet("train", "job").Training(0).Obj(), grovev1alpha1.PodCliqueSetPhaseFailed)
	deleting := builders.PodCliqueSet("ns", "deleting").Obj()
	deleting.DeletionTimestamp = &started
	pcss := []*grovev1alpha1.PodCliqueSet{rolling, stalled, ended, failed, deleting,
		builders.PodCliqueSet("ns", "new").Obj(), // no status yet
	}

	groupRolling := builders.PodCliqueScalingGroup("ns", "rolling-0-sg", "w").Obj()
	groupRolling.Status.UpdateProgress = &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{UpdateStartedAt: started,
		ReadyReplicaIndicesSelectedToUpdate: &grovev1alpha1.PodCliqueScalingGroupReplicaUpdateProgress{Current: 1, Completed: []int32{0}}}
	groupDone := builders.PodCliqueScalingGroup("ns", "rolling-1-sg", "w").Obj()
	groupDone.Status.UpdateProgress = &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{UpdateStartedAt: started, UpdateEndedAt: &started}
	groupOnDelete := builders.PodCliqueScalingGroup("ns", "rolling-2-sg", "w").Obj()
	groupOnDelete.Status.UpdateProgress = &grovev1alpha1.PodCliqueScalingGroupUpdateProgress{UpdateStartedAt: started}

	got := workloads(pcss, []*grovev1alpha1.PodCliqueScalingGroup{groupRolling, groupDone, groupOnDelete})

	assert.Equal(t, map[workloadKey]int{
		{"ns", "Inference", "Running"}:  3,
		{"ns", "Inference", "Pending"}:  1,
		{"train", "Training", "Failed"}: 1,
	}, got.phases)
	assert.Equal(t, map[string]int{"ns": 3, "train": 0}, got.replicasUpdating, "replica 0 of rolling, 2 of stalled, group replica 1 of rolling-0-sg")
	assert.Equal(t, map[strategyKey]int{{"ns", "RollingRecreate"}: 1, {"ns", "Coherent"}: 1, {"train", "RollingRecreate"}: 0}, got.inProgress)
	assert.Equal(t, map[string]int{"ns": 1, "train": 0}, got.stalled)
}
