package pcsadmission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// annotationLayer is one place grove.io/mnnvl-group may be set.
type annotationLayer struct {
	path        *field.Path
	annotations map[string]string
	// clique is set for a clique's own annotations: an explicit group there needs NVIDIA GPUs.
	clique *grovev1alpha1.PodCliqueTemplateSpec
}

func mnnvlLayers(pcs *grovev1alpha1.PodCliqueSet) []annotationLayer {
	tp := field.NewPath("spec", "template")
	layers := []annotationLayer{{path: field.NewPath("metadata", "annotations"), annotations: pcs.Annotations}}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		layers = append(layers, annotationLayer{path: tp.Child("podCliqueScalingGroups").Index(i).Child("annotations"), annotations: g.Annotations})
	}
	for i, c := range pcs.Spec.Template.Cliques {
		if c != nil {
			layers = append(layers, annotationLayer{path: tp.Child("cliques").Index(i).Child("annotations"), annotations: c.Annotations, clique: c})
		}
	}
	return layers
}

// validateMNNVLCreate applies upstream Grove's rules to grove.io/mnnvl-group on a new
// PodCliqueSet, wherever it is set: the value is "none" or a DNS-1123 label (it becomes part of
// the ComputeDomain's name); a group needs network.autoMNNVLEnabled; and a clique naming a group
// itself must request nvidia.com/gpu (one inheriting a group without GPUs is simply left out).
func validateMNNVLCreate(pcs *grovev1alpha1.PodCliqueSet, enabled bool) field.ErrorList {
	var errs field.ErrorList
	for _, l := range mnnvlLayers(pcs) {
		v, ok := l.annotations[grovev1alpha1.AnnotationMNNVLGroup]
		if !ok || v == grovev1alpha1.MNNVLGroupOptOut {
			continue
		}
		p := l.path.Key(grovev1alpha1.AnnotationMNNVLGroup)
		if msgs := validation.IsDNS1123Label(v); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("must be %q or a DNS-1123 label (it names the ComputeDomain): %s", grovev1alpha1.MNNVLGroupOptOut, msgs[0])))
			continue
		}
		if !enabled {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("MNNVL is not enabled in the operator configuration (network.autoMNNVLEnabled): enable it or remove the %s annotation", grovev1alpha1.AnnotationMNNVLGroup)))
			continue
		}
		if l.clique != nil && !grovev1alpha1.RequestsNVIDIAGPU(&l.clique.Spec.PodSpec) {
			errs = append(errs, field.Invalid(p, v, "the clique requests no nvidia.com/gpu: only cliques with NVIDIA GPUs can join an MNNVL group"))
		}
	}
	return errs
}

// validateMNNVLUpdate keeps grove.io/mnnvl-group as it was created, at every level: the
// ComputeDomains and the pods' claims were made from it.
func validateMNNVLUpdate(old, pcs *grovev1alpha1.PodCliqueSet) field.ErrorList {
	before := map[string]*string{}
	for _, l := range mnnvlLayers(old) {
		if v, ok := l.annotations[grovev1alpha1.AnnotationMNNVLGroup]; ok {
			before[layerKey(old, l)] = &v
		} else {
			before[layerKey(old, l)] = nil
		}
	}
	var errs field.ErrorList
	for _, l := range mnnvlLayers(pcs) {
		was, existed := before[layerKey(pcs, l)]
		if !existed {
			continue // a new clique or group: refused elsewhere
		}
		v, ok := l.annotations[grovev1alpha1.AnnotationMNNVLGroup]
		if (was == nil) != !ok || (was != nil && *was != v) {
			errs = append(errs, field.Invalid(l.path.Key(grovev1alpha1.AnnotationMNNVLGroup), v, "is immutable: delete and recreate the PodCliqueSet to change MNNVL groups"))
		}
	}
	return errs
}

// layerKey identifies a layer across an update by what it is, not where it is listed.
func layerKey(pcs *grovev1alpha1.PodCliqueSet, l annotationLayer) string {
	switch {
	case l.clique != nil:
		return "clique/" + l.clique.Name
	case l.path.String() == "metadata.annotations":
		return "pcs"
	}
	for i, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if l.path.String() == field.NewPath("spec", "template").Child("podCliqueScalingGroups").Index(i).Child("annotations").String() {
			return "group/" + g.Name
		}
	}
	return l.path.String()
}
