package fieldindex

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
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
	clique := map[string]string{grovev1alpha1.LabelPodClique: "inf-0-worker"}
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		held bool
	}{
		{"a clique's pod with a scheduling gate", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: clique},
			Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: grovev1alpha1.SchedulingGatePodGangPendingCreation}}}}, true},
		{"a clique's pod waiting for its parents at start", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: clique,
			Annotations: map[string]string{grovev1alpha1.AnnotationStartupGate: grovev1alpha1.StartupGateWaiting}}}, true},
		{"a clique's pod released at start", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: clique,
			Annotations: map[string]string{grovev1alpha1.AnnotationStartupGate: grovev1alpha1.StartupGateReleased}}}, false},
		{"a clique's pod without gates", corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: clique}}, false},
		{"another controller's gated pod", corev1.Pod{Spec: corev1.PodSpec{SchedulingGates: []corev1.PodSchedulingGate{{Name: "example.com/gate"}}}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.held, MayBeHeld(&tc.pod))
			assert.Equal(t, tc.held, len(extractor(t, HeldPods)(&tc.pod)) == 1)
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
