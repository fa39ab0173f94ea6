package podcliqueset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/podgangstatus"
)

// gangPod is one pod of the status table: where it got to.
type gangPod struct {
	name, node string
	phase      corev1.PodPhase
	ready      bool
	// unschedulable is the scheduler's message on a pod it could not place.
	unschedulable string
}

func (p gangPod) pod() *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: p.node},
		Status: corev1.PodStatus{Phase: p.phase}}
	if pod.Status.Phase == "" {
		pod.Status.Phase = corev1.PodPending
	}
	if p.ready {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	}
	if p.unschedulable != "" {
		pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: p.unschedulable})
	}
	return pod
}

// twoGroupGang is a PodGang of a router (1 pod, min 1) and workers (2 pods, min 1).
func twoGroupGang() *schedulerv1alpha1.PodGang {
	ref := func(n string) schedulerv1alpha1.NamespacedName {
		return schedulerv1alpha1.NamespacedName{Namespace: "ns", Name: n}
	}
	return &schedulerv1alpha1.PodGang{
		ObjectMeta: metav1.ObjectMeta{Name: "inf-0", Namespace: "ns", Generation: 1},
		Spec: schedulerv1alpha1.PodGangSpec{PodGroups: []schedulerv1alpha1.PodGroup{
			{Name: "inf-0-router", MinReplicas: 1, PodReferences: []schedulerv1alpha1.NamespacedName{ref("inf-0-router-0")}},
			{Name: "inf-0-worker", MinReplicas: 1, PodReferences: []schedulerv1alpha1.NamespacedName{ref("inf-0-worker-0"), ref("inf-0-worker-1")}},
		}},
	}
}

func podsByClique(pods ...gangPod) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, p := range pods {
		clique := p.name[:len(p.name)-2]
		out[clique] = append(out[clique], p.pod())
	}
	return out
}

func TestPodGangStatusFollowsItsPods(t *testing.T) {
	const node = "kwok-0"
	allPods := func(edit func(*gangPod)) []gangPod {
		pods := []gangPod{{name: "inf-0-router-0"}, {name: "inf-0-worker-0"}, {name: "inf-0-worker-1"}}
		for i := range pods {
			edit(&pods[i])
		}
		return pods
	}
	tests := []struct {
		name          string
		missing       []string
		pods          []gangPod
		wantPhase     schedulerv1alpha1.PodGangPhase
		wantScheduled metav1.ConditionStatus
		wantReason    string
		wantReady     metav1.ConditionStatus
		wantMessage   string
	}{
		{
			name: "no pod placed: Pending, waiting for placement", pods: allPods(func(*gangPod) {}),
			wantPhase: schedulerv1alpha1.PodGangPhasePending, wantScheduled: metav1.ConditionFalse, wantReason: schedulerv1alpha1.ReasonWaitingForPlacement,
			wantReady: metav1.ConditionFalse, wantMessage: "inf-0-router has fewer than 1 pods placed; inf-0-worker has fewer than 1 pods placed",
		},
		{
			name:      "the scheduler says why: its reason and message",
			pods:      allPods(func(p *gangPod) { p.unschedulable = "0/4 nodes are available: 4 Insufficient nvidia.com/gpu." }),
			wantPhase: schedulerv1alpha1.PodGangPhasePending, wantScheduled: metav1.ConditionFalse, wantReason: corev1.PodReasonUnschedulable,
			wantReady:   metav1.ConditionFalse,
			wantMessage: "inf-0-router has fewer than 1 pods placed; inf-0-worker has fewer than 1 pods placed; pod inf-0-router-0: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.",
		},
		{
			name:      "one group short of its minimum: still Pending",
			pods:      []gangPod{{name: "inf-0-router-0", node: node}, {name: "inf-0-worker-0"}, {name: "inf-0-worker-1"}},
			wantPhase: schedulerv1alpha1.PodGangPhasePending, wantScheduled: metav1.ConditionFalse, wantReason: schedulerv1alpha1.ReasonWaitingForPlacement,
			wantReady: metav1.ConditionFalse, wantMessage: "inf-0-worker has fewer than 1 pods placed",
		},
		{
			name:      "every group's minimum placed, not ready: Starting",
			pods:      []gangPod{{name: "inf-0-router-0", node: node}, {name: "inf-0-worker-0", node: node}, {name: "inf-0-worker-1"}},
			wantPhase: schedulerv1alpha1.PodGangPhaseStarting, wantScheduled: metav1.ConditionTrue, wantReason: schedulerv1alpha1.ReasonPlaced,
			wantReady: metav1.ConditionFalse,
		},
		{
			name: "every group's minimum ready: Running, though a pod beyond the minimum waits",
			pods: []gangPod{{name: "inf-0-router-0", node: node, phase: corev1.PodRunning, ready: true},
				{name: "inf-0-worker-0", node: node, phase: corev1.PodRunning, ready: true}, {name: "inf-0-worker-1"}},
			wantPhase: schedulerv1alpha1.PodGangPhaseRunning, wantScheduled: metav1.ConditionTrue, wantReason: schedulerv1alpha1.ReasonPlaced,
			wantReady: metav1.ConditionTrue,
		},
		{
			name: "a batch gang whose pods succeed one by one stays Running",
			pods: []gangPod{{name: "inf-0-router-0", node: node, phase: corev1.PodSucceeded},
				{name: "inf-0-worker-0", node: node, phase: corev1.PodRunning, ready: true}, {name: "inf-0-worker-1", node: node, phase: corev1.PodRunning, ready: true}},
			wantPhase: schedulerv1alpha1.PodGangPhaseRunning, wantScheduled: metav1.ConditionTrue, wantReason: schedulerv1alpha1.ReasonPlaced,
			wantReady: metav1.ConditionFalse,
		},
		{
			name:      "every pod succeeded: Succeeded",
			pods:      allPods(func(p *gangPod) { p.node, p.phase = node, corev1.PodSucceeded }),
			wantPhase: schedulerv1alpha1.PodGangPhaseSucceeded, wantScheduled: metav1.ConditionTrue, wantReason: schedulerv1alpha1.ReasonPlaced,
			wantReady: metav1.ConditionFalse,
		},
		{
			name: "a pod failed: Failed until it is replaced",
			pods: []gangPod{{name: "inf-0-router-0", node: node, phase: corev1.PodFailed},
				{name: "inf-0-worker-0", node: node, phase: corev1.PodRunning, ready: true}, {name: "inf-0-worker-1", node: node, phase: corev1.PodRunning, ready: true}},
			wantPhase: schedulerv1alpha1.PodGangPhaseFailed, wantScheduled: metav1.ConditionTrue, wantReason: schedulerv1alpha1.ReasonPlaced,
			wantReady: metav1.ConditionFalse,
		},
	}
	now := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			part, write := decideGangStatus(twoGroupGang(), tc.missing, podsByClique(tc.pods...), now)
			require.True(t, write, "a gang whose pods all exist gets its first status")
			assert.Equal(t, tc.wantPhase, part.Phase)
			scheduled := meta.FindStatusCondition(part.Conditions, schedulerv1alpha1.ConditionScheduled)
			require.NotNil(t, scheduled)
			assert.Equal(t, tc.wantScheduled, scheduled.Status)
			assert.Equal(t, tc.wantReason, scheduled.Reason)
			if tc.wantMessage != "" {
				assert.Equal(t, tc.wantMessage, scheduled.Message)
			}
			ready := meta.FindStatusCondition(part.Conditions, schedulerv1alpha1.ConditionReady)
			require.NotNil(t, ready)
			assert.Equal(t, tc.wantReady, ready.Status)
			assert.True(t, meta.IsStatusConditionTrue(part.Conditions, schedulerv1alpha1.ConditionInitialized))
			if tc.wantScheduled == metav1.ConditionTrue {
				assert.Equal(t, &now, part.LastScheduled, "stamped as Scheduled turns True")
			} else {
				assert.Nil(t, part.LastScheduled)
			}
		})
	}
}

// stored is the PodGang as the API server keeps it after part was applied.
func stored(pg *schedulerv1alpha1.PodGang, part podgangstatus.Part) *schedulerv1alpha1.PodGang {
	pg = pg.DeepCopy()
	pg.Status.Phase, pg.Status.LastScheduled, pg.Status.LastReady = part.Phase, part.LastScheduled, part.LastReady
	for _, c := range part.Conditions {
		meta.SetStatusCondition(&pg.Status.Conditions, c)
	}
	return pg
}

func TestPodGangStatusIsWrittenOnlyWhenItChanges(t *testing.T) {
	start := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	later := metav1.NewTime(start.Add(time.Minute))
	pg := twoGroupGang()
	placed := podsByClique(gangPod{name: "inf-0-router-0", node: "n"}, gangPod{name: "inf-0-worker-0", node: "n"}, gangPod{name: "inf-0-worker-1", node: "n"})

	_, write := decideGangStatus(pg, []string{"inf-0-worker"}, map[string][]*corev1.Pod{}, start)
	assert.False(t, write, "a new gang whose pods are still being created gets no status yet")

	part, write := decideGangStatus(pg, nil, placed, start)
	require.True(t, write)
	pg = stored(pg, part)

	again, write := decideGangStatus(pg, nil, placed, later)
	assert.False(t, write, "nothing changed: no write, whatever the clock says")
	assert.Equal(t, &start, again.LastScheduled, "the stamp of the transition is kept")
	scheduled := meta.FindStatusCondition(again.Conditions, schedulerv1alpha1.ConditionScheduled)
	assert.Equal(t, start, scheduled.LastTransitionTime)

	lost, write := decideGangStatus(pg, []string{"inf-0-worker"}, podsByClique(gangPod{name: "inf-0-router-0", node: "n"}, gangPod{name: "inf-0-worker-1", node: "n"}), later)
	require.True(t, write, "a gang that lost a pod says so")
	assert.False(t, meta.IsStatusConditionTrue(lost.Conditions, schedulerv1alpha1.ConditionInitialized))
	assert.Equal(t, &start, lost.LastScheduled, "never cleared")
}

func TestAWaitingGangsStatusDoesNotDependOnTheOrderOfItsPods(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	workersWaiting := func(names ...string) map[string][]*corev1.Pod {
		pods := []gangPod{{name: "inf-0-router-0", node: "n"}}
		for _, n := range names {
			pods = append(pods, gangPod{name: n, unschedulable: "no room for " + n})
		}
		return podsByClique(pods...)
	}
	part, write := decideGangStatus(twoGroupGang(), nil, workersWaiting("inf-0-worker-1", "inf-0-worker-0"), now)
	require.True(t, write)
	assert.Contains(t, meta.FindStatusCondition(part.Conditions, schedulerv1alpha1.ConditionScheduled).Message, "pod inf-0-worker-0: no room for inf-0-worker-0")
	pg := stored(twoGroupGang(), part)

	_, write = decideGangStatus(pg, nil, workersWaiting("inf-0-worker-0", "inf-0-worker-1"), now)
	assert.False(t, write, "the cache lists pods in any order: the same pods say the same")
}

func TestPodEventsPassWhenTheSchedulersWordOnThePodChanges(t *testing.T) {
	unschedulable := gangPod{name: "inf-0-worker-0", unschedulable: "0/4 nodes are available"}.pod()
	otherMessage := gangPod{name: "inf-0-worker-0", unschedulable: "0/5 nodes are available"}.pod()
	bound := gangPod{name: "inf-0-worker-0", node: "n"}.pod()
	bound.Status.Conditions = append(bound.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
	readyToo := bound.DeepCopy()
	readyToo.Status.Conditions = append(readyToo.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	tests := []struct {
		name     string
		old, new *corev1.Pod
		want     bool
	}{
		{"the scheduler says why it cannot place the pod", gangPod{name: "inf-0-worker-0"}.pod(), unschedulable, true},
		{"the scheduler's message changes", unschedulable, otherMessage, true},
		{"the pod is placed", unschedulable, bound, true},
		{"anything else: another reconcile would change nothing", bound, readyToo, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, podScheduledChanged(tc.old, tc.new))
		})
	}
}
