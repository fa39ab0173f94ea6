package children

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// PodSpecs remembers which PodCliques were found to carry the pod template the PodCliqueSet's
// template gives them, by the generations of both: a PodClique's spec does not change without
// its metadata.generation changing, nor a PodCliqueSet's template without its own. A scaling
// group's pass compares each member with what it wants, and walking every member's pod template
// with equality.Semantic took half of that pass's CPU in make bench's Coherent rollout (200
// members, a CPU profile); a member found equal once is then compared without it until either
// side changes. What it remembers is only a shortcut: forgotten (a restart, an eviction from
// the bounded cache), the comparison is made in full again.
type PodSpecs struct {
	seen *lru.Cache
}

// podSpecsSize bounds what PodSpecs remembers: one entry per PodClique, far more than the
// PodCliques of the 20,000 pods make bench manages.
const podSpecsSize = 50000

// podSpecAt is what a PodClique's pod template was found equal to.
type podSpecAt struct {
	generation    int64 // the PodClique's
	pcs           types.UID
	pcsGeneration int64
}

// NewPodSpecs returns an empty PodSpecs.
func NewPodSpecs() *PodSpecs {
	return &PodSpecs{seen: lru.New(podSpecsSize)}
}

// UpdatedClique is Updated for a PodClique wanted from pcs's template (want's pod template a copy
// of it), with what p remembers: a PodClique whose pod template was found equal to that
// template, at the generations both are at now, has the rest of its spec compared only. A nil
// or zero p compares in full.
func (p *PodSpecs) UpdatedClique(pcs *grovev1alpha1.PodCliqueSet, have, want *grovev1alpha1.PodClique) (*grovev1alpha1.PodClique, bool) {
	at := podSpecAt{generation: have.Generation, pcs: pcs.UID, pcsGeneration: pcs.Generation}
	// Without generations (an object not read from an API server) nothing tells a change.
	rememberable := p != nil && p.seen != nil && have.UID != "" && at.generation > 0 && at.pcs != "" && at.pcsGeneration > 0
	if rememberable {
		if got, ok := p.seen.Get(have.UID); ok && got.(podSpecAt) == at {
			if sameExceptPodSpec(&have.Spec, &want.Spec) && Holds(have.GetLabels(), want.GetLabels()) &&
				Holds(have.GetAnnotations(), want.GetAnnotations()) {
				return have, false
			}
			return Updated(have, want, CliqueSpec)
		}
	}
	updated, changed := Updated(have, want, CliqueSpec)
	if rememberable && (!changed || equality.Semantic.DeepEqual(have.Spec.PodSpec, want.Spec.PodSpec)) {
		p.seen.Add(have.UID, at)
	}
	return updated, changed
}

// sameExceptPodSpec compares two PodClique specs leaving their pod templates out (copies of the
// specs are compared; the pod templates' slices and maps are shared, not walked).
func sameExceptPodSpec(have, want *grovev1alpha1.PodCliqueObjectSpec) bool {
	h, w := *have, *want
	h.PodSpec, w.PodSpec = corev1.PodSpec{}, corev1.PodSpec{}
	return equality.Semantic.DeepEqual(h, w)
}
