package podclique

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func TestMinAvailableBreachedFollowsTheSeedOrder(t *testing.T) {
	pclq := builders.PodClique("ns", "c").Replicas(3, 2).Obj()
	cases := []struct {
		name          string
		status        grovev1alpha1.PodCliqueStatus
		wantStatus    metav1.ConditionStatus
		wantReason    string
		wantAvailable bool
		failed        int32
		awaitsQueue   bool
	}{
		{"enough Ready pods", grovev1alpha1.PodCliqueStatus{Replicas: 3, ReadyReplicas: 2, UpdatedReplicas: 3}, metav1.ConditionFalse, grovev1alpha1.ReasonSufficientReadyPods, true, 0, false},
		{"starting up, never available", grovev1alpha1.PodCliqueStatus{Replicas: 3, ReadyReplicas: 1, UpdatedReplicas: 3}, metav1.ConditionFalse, grovev1alpha1.ReasonNeverAvailable, false, 0, false},
		{"rolling update after having been available", grovev1alpha1.PodCliqueStatus{Replicas: 3, ReadyReplicas: 1, UpdatedReplicas: 1, WasAvailable: true}, metav1.ConditionUnknown, grovev1alpha1.ReasonUpdateInProgress, true, 0, false},
		{"breached after having been available", grovev1alpha1.PodCliqueStatus{Replicas: 3, ReadyReplicas: 1, UpdatedReplicas: 3, WasAvailable: true}, metav1.ConditionTrue, grovev1alpha1.ReasonInsufficientReadyPods, true, 0, false},
		{"a rolling update never sets wasAvailable", grovev1alpha1.PodCliqueStatus{Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 1}, metav1.ConditionFalse, grovev1alpha1.ReasonSufficientReadyPods, false, 0, false},
		{"a Training pod that failed breaches even before availability", grovev1alpha1.PodCliqueStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2}, metav1.ConditionTrue, grovev1alpha1.ReasonInsufficientReadyPods, false, 1, false},
		{"pods evicted by Kueue are no breach, and the gang starts over", grovev1alpha1.PodCliqueStatus{Replicas: 3, ReadyReplicas: 0, UpdatedReplicas: 3, WasAvailable: true},
			metav1.ConditionFalse, grovev1alpha1.ReasonAwaitingQueueAdmission, false, 0, true},
		{"a Training pod that failed while Kueue evicts the gang spends no restart", grovev1alpha1.PodCliqueStatus{Replicas: 2, ReadyReplicas: 0, UpdatedReplicas: 2, WasAvailable: true},
			metav1.ConditionFalse, grovev1alpha1.ReasonAwaitingQueueAdmission, false, 1, true},
		{"an evicted gang whose pods are still Ready stays available", grovev1alpha1.PodCliqueStatus{Replicas: 3, ReadyReplicas: 3, UpdatedReplicas: 3, WasAvailable: true},
			metav1.ConditionFalse, grovev1alpha1.ReasonSufficientReadyPods, true, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.status
			setMinAvailableBreached(pclq, &st, st.ReadyReplicas, tc.failed, tc.awaitsQueue)
			c := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
			assert.Equal(t, tc.wantStatus, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Equal(t, tc.wantAvailable, st.WasAvailable)
		})
	}
}

func TestACliqueScaledToZeroIsIdleAndNeverBreached(t *testing.T) {
	pclq := builders.PodClique("ns", "c").Replicas(0, 2).Obj()
	st := grovev1alpha1.PodCliqueStatus{WasAvailable: true}
	setMinAvailableBreached(pclq, &st, 0, 0, false)
	c := meta.FindStatusCondition(st.Conditions, grovev1alpha1.ConditionMinAvailableBreached)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, grovev1alpha1.ReasonIdle, c.Reason, c.Message)
}

func TestLastScheduledIsStampedWhenTheCliqueTurnsScheduledAndNeverCleared(t *testing.T) {
	pclq := builders.PodClique("ns", "c").Replicas(1, 1).Obj()
	bound := builders.Pod("", "").NodeName("n").Phase(corev1.PodRunning).
		Condition(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}).Obj()
	unbound := builders.Pod("", "").Phase(corev1.PodPending).Obj()

	pclq.Status, _ = computeStatus(pclq, []*corev1.Pod{unbound}, "h", waits{}, metav1.Now())
	assert.Nil(t, pclq.Status.LastScheduled, "not scheduled yet")

	pclq.Status, _ = computeStatus(pclq, []*corev1.Pod{bound}, "h", waits{}, metav1.Now())
	require.NotNil(t, pclq.Status.LastScheduled, "stamped when PodCliqueScheduled turns True")
	first := *pclq.Status.LastScheduled
	assert.Equal(t, meta.FindStatusCondition(pclq.Status.Conditions, grovev1alpha1.ConditionPodCliqueScheduled).LastTransitionTime, first)

	pclq.Status, _ = computeStatus(pclq, []*corev1.Pod{bound}, "h", waits{}, metav1.Now())
	assert.Equal(t, first, *pclq.Status.LastScheduled, "not moved while it stays True")
	pclq.Status, _ = computeStatus(pclq, []*corev1.Pod{unbound}, "h", waits{}, metav1.Now())
	assert.Equal(t, first, *pclq.Status.LastScheduled, "never cleared")
}
