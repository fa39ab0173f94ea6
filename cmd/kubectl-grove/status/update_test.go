package status

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
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
