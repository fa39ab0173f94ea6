package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestMayScheduleNeedsTheReferenceAndTheCurrentGenerationsAcknowledgement(t *testing.T) {
	gang := func(generation, observed int64, status metav1.ConditionStatus) *PodGang {
		pg := &PodGang{ObjectMeta: metav1.ObjectMeta{Generation: generation}}
		pg.Spec.PodGroups = []PodGroup{{Name: "a", PodReferences: []NamespacedName{{Name: "a-0"}}}}
		if status != "" {
			pg.Status.Conditions = []metav1.Condition{{Type: ConditionSchedulerBackendReady, Status: status, ObservedGeneration: observed}}
		}
		return pg
	}
	cases := []struct {
		name string
		pg   *PodGang
		pod  string
		want bool
	}{
		{"acknowledged, referenced", gang(2, 2, metav1.ConditionTrue), "a-0", true},
		{"a pod the gang does not list yet", gang(2, 2, metav1.ConditionTrue), "a-1", false},
		{"acknowledged an older generation", gang(2, 1, metav1.ConditionTrue), "a-0", false},
		{"the backend failed", gang(2, 2, metav1.ConditionFalse), "a-0", false},
		{"no answer yet", gang(2, 0, ""), "a-0", false},
		{"no PodGang", nil, "a-0", false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, tc.pg.MaySchedule(tc.pod), tc.name)
	}
}
