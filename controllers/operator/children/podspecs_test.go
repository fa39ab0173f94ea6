package children

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// podSpecsFixture is a PodCliqueSet at a generation and a member PodClique read from the API
// server (a UID and a generation) that carries the template's pod spec.
func podSpecsFixture() (*grovev1alpha1.PodCliqueSet, *grovev1alpha1.PodClique, *grovev1alpha1.PodClique) {
	pcs := pcsWith(grovev1alpha1.CliqueStartupTypeAnyOrder)
	pcs.Name, pcs.UID, pcs.Generation = "inf", types.UID("pcs-uid"), 3
	pcs.Spec.Template.Cliques[1].Spec.PodSpec = corev1.PodSpec{Containers: []corev1.Container{{
		Name: "main", Image: "img:1",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
	}}}
	want := PodClique(pcs, 0, Template(pcs, "leader"), nil, "inf-0")
	have := want.DeepCopy()
	have.UID, have.Generation = types.UID("pclq-uid"), 7
	return pcs, have, want
}

func TestPodSpecsComparesAMemberInFullUntilItWasFoundAtItsTemplate(t *testing.T) {
	cases := []struct {
		name string
		// change is made after a first comparison found the member at its template.
		change      func(pcs *grovev1alpha1.PodCliqueSet, have, want *grovev1alpha1.PodClique)
		wantChanged bool
		reason      string
	}{
		{"nothing changed", func(_ *grovev1alpha1.PodCliqueSet, _, _ *grovev1alpha1.PodClique) {}, false,
			"a member at its template is not written"},
		{"its pod template edited by hand (a new generation)", func(_ *grovev1alpha1.PodCliqueSet, have, _ *grovev1alpha1.PodClique) {
			have.Generation++
			have.Spec.PodSpec.Containers[0].Image = "edited"
		}, true, "a member whose generation moved is compared in full and brought back"},
		{"another PodCliqueSet of the name at the same generation (deleted and made again)", func(pcs *grovev1alpha1.PodCliqueSet, _, want *grovev1alpha1.PodClique) {
			pcs.UID = "pcs-uid-2"
			want.Spec.PodSpec.Containers[0].Image = "img:2"
		}, true, "another PodCliqueSet's template is compared in full"},
		{"the template changed (a new PodCliqueSet generation)", func(pcs *grovev1alpha1.PodCliqueSet, _, want *grovev1alpha1.PodClique) {
			pcs.Generation++
			want.Spec.PodSpec.Containers[0].Image = "img:2"
		}, true, "a new template is compared in full"},
		{"its replicas changed", func(_ *grovev1alpha1.PodCliqueSet, _, want *grovev1alpha1.PodClique) {
			want.Spec.Replicas++
		}, true, "what is not the pod template is always compared"},
		{"a label is wanted", func(_ *grovev1alpha1.PodCliqueSet, _, want *grovev1alpha1.PodClique) {
			want.Labels[grovev1alpha1.LabelPodGang] = "inf-0-next"
		}, true, "labels are always compared"},
		{"the same pod template at another quantity's spelling", func(_ *grovev1alpha1.PodCliqueSet, have, _ *grovev1alpha1.PodClique) {
			have.Generation++
			have.Spec.PodSpec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("1000m")
		}, false, "compared in full, 1000m is 1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs, have, want := podSpecsFixture()
			specs := NewPodSpecs()
			_, changed := specs.UpdatedClique(pcs, have, want)
			assert.False(t, changed, "the member starts at its template")

			tc.change(pcs, have, want)
			updated, changed := specs.UpdatedClique(pcs, have, want)
			assert.Equal(t, tc.wantChanged, changed, tc.reason)
			if changed {
				assert.Equal(t, want.Spec, updated.Spec, "the update carries the wanted spec")
				assert.NotSame(t, have, updated, "the update is a copy")
			} else {
				assert.Same(t, have, updated, "an unchanged member is not copied")
			}
		})
	}
}

func TestPodSpecsTrustsAMemberFoundAtItsTemplateWhileNeitherGenerationMoves(t *testing.T) {
	pcs, have, want := podSpecsFixture()
	specs := NewPodSpecs()
	_, changed := specs.UpdatedClique(pcs, have, want)
	assert.False(t, changed)

	// At the same generations neither pod template can have changed: the one wanted here differs
	// only to show it is not walked again.
	want.Spec.PodSpec.Containers[0].Image = "not-walked"
	_, changed = specs.UpdatedClique(pcs, have, want)
	assert.False(t, changed, "found at its template once, the pod template is not compared again")

	_, changed = NewPodSpecs().UpdatedClique(pcs, have, want)
	assert.True(t, changed, "forgotten (a restarted operator), it is compared in full")
}

func TestPodSpecsRemembersNothingWithoutGenerations(t *testing.T) {
	cases := []struct {
		name  string
		unset func(pcs *grovev1alpha1.PodCliqueSet, have *grovev1alpha1.PodClique)
	}{
		{"a member without a generation", func(_ *grovev1alpha1.PodCliqueSet, have *grovev1alpha1.PodClique) { have.Generation = 0 }},
		{"a member without a UID", func(_ *grovev1alpha1.PodCliqueSet, have *grovev1alpha1.PodClique) { have.UID = "" }},
		{"a PodCliqueSet without a generation", func(pcs *grovev1alpha1.PodCliqueSet, _ *grovev1alpha1.PodClique) { pcs.Generation = 0 }},
		{"a PodCliqueSet without a UID", func(pcs *grovev1alpha1.PodCliqueSet, _ *grovev1alpha1.PodClique) { pcs.UID = "" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs, have, want := podSpecsFixture()
			tc.unset(pcs, have)
			for _, specs := range []*PodSpecs{NewPodSpecs(), nil, {}} {
				_, changed := specs.UpdatedClique(pcs, have, want)
				assert.False(t, changed)
				want.Spec.PodSpec.Containers[0].Image = "img:2"
				_, changed = specs.UpdatedClique(pcs, have, want)
				assert.True(t, changed, "nothing tells a change apart: compared in full")
				want.Spec.PodSpec.Containers[0].Image = "img:1"
			}
		})
	}
}
