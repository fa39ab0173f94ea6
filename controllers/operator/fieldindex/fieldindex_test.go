package fieldindex

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// extractor is the extract function of the index named field.
func extractor(t *testing.T, field string) client.IndexerFunc {
	t.Helper()
	for _, i := range All {
		if i.Field == field {
			return i.Extract
		}
	}
	t.Fatalf("no index %s", field)
	return nil
}

func TestOnlyPodsSomethingMayHoldAreIndexedAsHeld(t *testing.T) {
	clique := func() *builders.PodBuilder {
		return builders.Pod("", "").Label(grovev1alpha1.LabelPodClique, "inf-0-worker")
	}
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		held bool
	}{
		{"a clique's pod with a scheduling gate", clique().SchedulingGates(grovev1alpha1.SchedulingGatePodGangPendingCreation).Obj(), true},
		{"a clique's pod waiting for its parents at start", clique().Annotation(grovev1alpha1.AnnotationStartupGate, grovev1alpha1.StartupGateWaiting).Obj(), true},
		{"a clique's pod released at start", clique().Annotation(grovev1alpha1.AnnotationStartupGate, grovev1alpha1.StartupGateReleased).Obj(), false},
		{"a clique's pod without gates", clique().Obj(), false},
		{"another controller's gated pod", builders.Pod("", "").SchedulingGates("example.com/gate").Obj(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.held, MayBeHeld(tc.pod))
			assert.Equal(t, tc.held, len(extractor(t, HeldPods)(tc.pod)) == 1)
		})
	}
}

func TestPodsAreIndexedByTheirPodCliqueSetOnlyWhenTheOperatorManagesThem(t *testing.T) {
	managed := map[string]string{grovev1alpha1.LabelPartOf: "inf", grovev1alpha1.LabelManagedBy: grovev1alpha1.LabelManagedByValue}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   []string
	}{
		{"the operator's pod", managed, []string{"inf"}},
		{"another app's pod naming a part-of", map[string]string{grovev1alpha1.LabelPartOf: "inf"}, nil},
		{"an unlabelled pod", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, extractor(t, PodsOfPodCliqueSet)(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}}))
		})
	}
}

func TestPodCliquesAreIndexedByTheGangsWhoseEventsConcernThem(t *testing.T) {
	clique := func() *builders.PodCliqueBuilder { return builders.PodClique("ns", "c").OfReplica("inf", "1") }
	coherent := func() *builders.PodCliqueBuilder { return clique().UpdateStrategy(grovev1alpha1.CoherentStrategy) }
	for _, tc := range []struct {
		name string
		pclq *grovev1alpha1.PodClique
		want []string
	}{
		{"a clique of a base gang", clique().InGang("inf-1").Obj(), []string{"inf-1"}},
		{"a clique of a scaled gang, waiting for its base gang", clique().InGang("inf-1-prefill-0").Label(grovev1alpha1.LabelBasePodGang, "inf-1").Obj(),
			[]string{"inf-1-prefill-0", "inf-1"}},
		{"a Coherent scaling-group member, under the gang its group gave it (and its base gang, no Coherent gang's name)",
			coherent().OfGroupReplica("inf-1-prefill", "0").InGang("inf-1-200").Label(grovev1alpha1.LabelBasePodGang, "inf-1").Obj(),
			[]string{"inf-1-200", "inf-1"}},
		{"a Coherent member its group has not placed yet", coherent().OfGroupReplica("inf-1-prefill", "0").Obj(), nil},
		{"a Coherent standalone clique, under its replica's key (its map shares its pods out)", coherent().Obj(),
			[]string{CoherentStandaloneKey("inf", "1")}},
		{"a clique of no gang", clique().Obj(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, extractor(t, CliquesOfPodGang)(tc.pclq))
		})
	}
}
