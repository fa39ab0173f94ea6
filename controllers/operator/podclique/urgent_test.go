package podclique

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// The last of a clique's pods turning Ready wakes the clique at once (its status ends a rolling
// step); any other pod event waits for its burst.
func TestTheLastPodOfACliqueTurningReadyIsUrgent(t *testing.T) {
	clique := builders.PodClique("ns", "c").Replicas(3, 3).Obj()
	member := func(i int, ready bool) *builders.PodBuilder {
		return podBuilder("ns", "c", i, "h", ready).Label(grovev1alpha1.LabelPodClique, "c")
	}
	cases := []struct {
		name string
		// others are the clique's pods 1 and 2 in the cache; nil: not created yet.
		others   []*corev1.Pod
		old, new *corev1.Pod
		noClique bool
		urgent   bool
	}{
		{name: "the last pod turns Ready", others: []*corev1.Pod{member(1, true).Obj(), member(2, true).Obj()},
			old: member(0, false).Obj(), new: member(0, true).Obj(), urgent: true},
		{name: "a pod turns Ready, another is not Ready", others: []*corev1.Pod{member(1, true).Obj(), member(2, false).Obj()},
			old: member(0, false).Obj(), new: member(0, true).Obj()},
		{name: "a pod turns Ready, one below the last is not Ready", others: []*corev1.Pod{member(1, false).Obj(), member(2, true).Obj()},
			old: member(0, false).Obj(), new: member(0, true).Obj()},
		{name: "a pod turns Ready, another is not created yet", others: []*corev1.Pod{member(1, true).Obj()},
			old: member(0, false).Obj(), new: member(0, true).Obj()},
		{name: "a pod turns Ready, another is being deleted", others: []*corev1.Pod{member(1, true).Obj(), member(2, true).DeletedAt(time.Now()).Finalizers("f").Obj()},
			old: member(0, false).Obj(), new: member(0, true).Obj()},
		{name: "a Ready pod changes otherwise", others: []*corev1.Pod{member(1, true).Obj(), member(2, true).Obj()},
			old: member(0, true).Obj(), new: member(0, true).Label("x", "y").Obj()},
		{name: "a pod turns not Ready", others: []*corev1.Pod{member(1, true).Obj(), member(2, true).Obj()},
			old: member(0, true).Obj(), new: member(0, false).Obj()},
		{name: "the clique is not in the cache", others: []*corev1.Pod{member(1, true).Obj(), member(2, true).Obj()},
			old: member(0, false).Obj(), new: member(0, true).Obj(), noClique: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []client.Object{tc.new}
			if !tc.noClique {
				objs = append(objs, clique.DeepCopy())
			}
			for _, p := range tc.others {
				objs = append(objs, p)
			}
			c := fakeClient(t).WithObjects(objs...).Build()
			assert.Equal(t, tc.urgent, cliqueAllReady(c)(tc.old, tc.new))
		})
	}
}
