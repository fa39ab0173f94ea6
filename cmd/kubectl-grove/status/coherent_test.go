package status

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func readyPod(name, gang string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{grovev1alpha1.LabelPodGang: gang}},
		Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func TestACoherentUpdateShowsItsStepWhatItWaitsForAndEachChangedComponentsCapacity(t *testing.T) {
	pcs := builders.PodCliqueSet("ns", "inf").Clique("frontend", 3, builders.MinAvailable(1)).Clique("leader", 1).
		ScalingGroup("prefill", 2, 1, "leader").UpdateStrategy(grovev1alpha1.CoherentStrategy).Updating(0).Obj()
	pcs.Status.CurrentGenerationHash = ptr.To("v2")
	p := pcs.Status.UpdateProgress
	p.InScopeStandalonePodCliques, p.InScopePodCliqueScalingGroups = []string{"frontend"}, []string{"prefill"}
	p.CurrentlyUpdating[0].InFlightEpochs = []string{"200"}
	p.CurrentlyUpdating[0].Message = ptr.To("replica 0 waits for the PodGangs of epoch 200 to be Ready")
	pgm := &grovev1alpha1.PodGangMap{ObjectMeta: metav1.ObjectMeta{Name: "inf-0"}, Spec: grovev1alpha1.PodGangMapSpec{Entries: []grovev1alpha1.PodGangEntry{
		{Epoch: "100", PodCliqueSetGenerationHash: "v1", Role: grovev1alpha1.PodGangRoleAnchor, PodCliques: map[string]int32{"inf-0-frontend": 2}, PCSGReplicaIndices: map[string][]int32{"prefill": {1}}},
		{Epoch: "200", PodCliqueSetGenerationHash: "v2", Role: grovev1alpha1.PodGangRoleAnchor, PodCliques: map[string]int32{"inf-0-frontend": 1}, PCSGReplicaIndices: map[string][]int32{"prefill": {0}}},
	}}}
	v := &View{PodCliqueSet: pcs, Maps: map[int]*grovev1alpha1.PodGangMap{0: pgm}, PodGangs: map[string]*schedulerv1alpha1.PodGang{},
		PodCliques: map[string]*grovev1alpha1.PodClique{
			"inf-0-frontend":         builders.PodClique("ns", "inf-0-frontend").OfReplica("inf", "0").Replicas(3, 1).Obj(),
			"inf-0-prefill-0-leader": builders.PodClique("ns", "inf-0-prefill-0-leader").OfReplica("inf", "0").OfGroupReplica("inf-0-prefill", "0").Obj(),
			"inf-0-prefill-1-leader": builders.PodClique("ns", "inf-0-prefill-1-leader").OfReplica("inf", "0").OfGroupReplica("inf-0-prefill", "1").Obj(),
		},
		Groups: []*grovev1alpha1.PodCliqueScalingGroup{builders.PodCliqueScalingGroup("ns", "inf-0-prefill", "leader").OfReplica("inf", "0").Replicas(2, 1).Obj()},
		Pods: map[string][]*corev1.Pod{
			"inf-0-frontend":         {readyPod("inf-0-frontend-0", "inf-0-200"), readyPod("inf-0-frontend-1", "inf-0-100")},
			"inf-0-prefill-1-leader": {readyPod("inf-0-prefill-1-leader-0", "inf-0-100")},
		}}
	var out bytes.Buffer

	PrintPodCliqueSet(&out, v)

	for _, want := range []string{
		"Coherent update since", "changed standalone cliques [frontend], scaling groups [prefill]",
		"replica 0: step in flight: epochs [200]", "replica 0 waits for the PodGangs of epoch 200 to be Ready",
		"frontend: 1 new + 1 old pods Ready of 3 (keeps at least 2: maxUnavailable 1)",
		"prefill: 0 new + 1 old replicas Ready of 2 (keeps at least 1: maxUnavailable 1)",
	} {
		assert.Contains(t, out.String(), want)
	}
}
