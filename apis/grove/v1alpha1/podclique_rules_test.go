package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAParentIsUpForDependentsAtMinAvailableReadyOrOnceSucceeded(t *testing.T) {
	parent := func(replicas, minAvailable, ready int32, succeeded bool) *PodClique {
		p := &PodClique{}
		p.Spec.Replicas, p.Status.ReadyReplicas = replicas, ready
		if minAvailable > 0 {
			p.Spec.MinAvailable = &minAvailable
		}
		if succeeded {
			p.Status.Conditions = []metav1.Condition{{Type: ConditionSucceeded, Status: metav1.ConditionTrue}}
		}
		return p
	}
	cases := []struct {
		name        string
		parent      *PodClique
		mustSucceed bool
		want        bool
	}{
		{"below minAvailable", parent(3, 2, 1, false), false, false},
		{"at minAvailable", parent(3, 2, 2, false), false, true},
		{"no minAvailable: every replica", parent(3, 0, 2, false), false, false},
		{"succeeded, none ready any more", parent(3, 2, 0, true), false, true},
		{"must succeed: ready is not enough", parent(3, 2, 3, false), true, false},
		{"must succeed: succeeded", parent(3, 2, 0, true), true, true},
		{"idle (0 replicas): holds back nobody", parent(0, 1, 0, false), false, true},
		{"idle, and must succeed: holds back nobody", parent(0, 1, 0, false), true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.parent.UpForDependents(tc.mustSucceed))
		})
	}
}
