package children

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// PodSpecs remembers, per PodClique, the generations (its own, and its PodCliqueSet's) at which
// its pod template was found equal to the PodCliqueSet's: neither changes without its
// generation changing. A scaling group compares every member on each pass, and the pod template
// was most of that comparison (make bench, bench/README.md). A lost entry costs a full
// comparison only.
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

// UpdatedClique is Updated(have, want, CliqueSpec) without comparing the pod templates when
// both generations are those remembered; want's pod template must be pcs's. A nil or zero p
// compares in full.
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
