package status

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func TestAPodHeldAtStartSaysWhichParentItWaitsFor(t *testing.T) {
	placed := func(gate string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "w-0", Annotations: map[string]string{grovev1alpha1.AnnotationStartupGate: gate}},
			Spec:       corev1.PodSpec{NodeName: "node-0"},
			Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}},
		}
	}
	worker := builders.PodClique("ns", "w").StartsAfter("leader").Obj()
	cases := []struct {
		name   string
		pod    *corev1.Pod
		leader *grovev1alpha1.PodClique
		want   string
	}{
		{"the parent is not up", placed(grovev1alpha1.StartupGateWaiting), builders.PodClique("ns", "leader").Replicas(2, 2).Ready(1).Obj(),
			"held at start by grove-initc: starts after leader (1/2 ready)"},
		{"the parent is up: the next pass releases it", placed(grovev1alpha1.StartupGateWaiting), builders.PodClique("ns", "leader").Replicas(2, 2).Ready(2).Obj(),
			"held at start by grove-initc: the operator releases it on its next pass"},
		{"released: what the kubelet says", placed(grovev1alpha1.StartupGateReleased), builders.PodClique("ns", "leader").Replicas(2, 2).Ready(2).Obj(),
			"container main waits: PodInitializing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := &View{PodCliques: map[string]*grovev1alpha1.PodClique{"leader": tc.leader, "w": worker}}
			assert.Equal(t, tc.want, strings.TrimSpace(Wait(tc.pod, worker, v)))
		})
	}
}
