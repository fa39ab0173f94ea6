package status

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func TestAComponentBeingRolledSaysSoAndAStalledOneSaysWhy(t *testing.T) {
	cond := func(status metav1.ConditionStatus, reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: grovev1alpha1.ConditionUpdateInProgress, Status: status, Reason: reason, Message: msg}}
	}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  string
	}{
		{"no condition yet", nil, ""},
		{"at rest", cond(metav1.ConditionFalse, grovev1alpha1.ReasonNoActiveUpdate, "No rolling update is in progress"), ""},
		{"rolling", cond(metav1.ConditionTrue, grovev1alpha1.ReasonProgressing, "2 of 4 pods at the new template are Ready"),
			", updating: 2 of 4 pods at the new template are Ready"},
		{"stalled", cond(metav1.ConditionUnknown, grovev1alpha1.ReasonProgressDeadlineExceeded, "no pod became Ready within progressDeadline 10m0s"),
			", update stalled: no pod became Ready within progressDeadline 10m0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, updating(tc.conds))
		})
	}
}

func TestARestartedCliqueSaysItWaitsForThePodsItReplaces(t *testing.T) {
	cond := func(reason, msg string) []metav1.Condition {
		return []metav1.Condition{{Type: grovev1alpha1.ConditionPodCliqueScheduled, Status: metav1.ConditionFalse, Reason: reason, Message: msg}}
	}
	for _, tc := range []struct {
		name  string
		conds []metav1.Condition
		want  string
	}{
		{"no condition yet", nil, ""},
		{"pods not scheduled yet", cond(grovev1alpha1.ReasonInsufficientScheduledPods, "0 of minAvailable 2 pods scheduled"), ""},
		{"the old pods still there", cond(grovev1alpha1.ReasonReplacedPodsTerminating, "pods of the restarted PodClique are still being deleted"),
			", restarting: pods of the restarted PodClique are still being deleted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, replacing(tc.conds))
		})
	}
}

func TestAScaledGangsGatedPodSaysItWaitsForItsBaseGang(t *testing.T) {
	scaled := builders.PodGang("ns", "inf-0-g-0").Generation(1).AcknowledgedAt(1).PodGroup("inf-0-g-1-m", 1, "inf-0-g-1-m-0").Obj()
	pclq := builders.PodClique("ns", "inf-0-g-1-m").InGang("inf-0-g-0").Obj()
	pclq.Labels[grovev1alpha1.LabelBasePodGang] = "inf-0"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "inf-0-g-1-m-0"},
		Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: grovev1alpha1.SchedulingGatePodGangPendingCreation}}}}
	for _, tc := range []struct {
		name string
		base *schedulerv1alpha1.PodGang
		want string
	}{
		{"base gang not placed", builders.PodGang("ns", "inf-0").Condition(schedulerv1alpha1.ConditionScheduled, metav1.ConditionFalse, "Unschedulable").Obj(),
			"gated: its scaled gang inf-0-g-0 is placed after its base gang inf-0, which is not scheduled yet"},
		{"base gang placed", builders.PodGang("ns", "inf-0").Condition(schedulerv1alpha1.ConditionScheduled, metav1.ConditionTrue, "Placed").Obj(),
			"gated: the operator lifts the gate on its next pass"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := &View{PodGangs: map[string]*schedulerv1alpha1.PodGang{scaled.Name: scaled, tc.base.Name: tc.base}}
			assert.Equal(t, tc.want, Wait(pod, pclq, v))
		})
	}
}
