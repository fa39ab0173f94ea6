package v1alpha1

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Multi-node NVLink (MNNVL), with upstream Grove's annotation semantics: grove.io/mnnvl-group on
// the PodCliqueSet, a scaling group or a clique names the group whose cliques share one NVIDIA
// ComputeDomain per PodCliqueSet replica; a lower level overrides a higher one, "none" opts out,
// and only cliques requesting nvidia.com/gpu take part.
const (
	// AnnotationMNNVLGroup names a clique's MNNVL group.
	AnnotationMNNVLGroup = "grove.io/mnnvl-group"
	// MNNVLGroupOptOut as the annotation's value opts out of a parent's group.
	MNNVLGroupOptOut = "none"
	// MNNVLClaimName is the pod's claim on its ComputeDomain's channel (as upstream names it).
	MNNVLClaimName = "mnnvl-claim"
	// ResourceNVIDIAGPU is the extended resource that makes a container take part in MNNVL.
	ResourceNVIDIAGPU corev1.ResourceName = "nvidia.com/gpu"
	// ComputeDomainCRD is the CRD MNNVL needs (NVIDIA's DRA driver installs it).
	ComputeDomainCRD = "computedomains.resource.nvidia.com"
)

// ComputeDomainGVK is the kind of NVIDIA's ComputeDomain.
var ComputeDomainGVK = schema.GroupVersionKind{Group: "resource.nvidia.com", Version: "v1beta1", Kind: "ComputeDomain"}

// ComputeDomainName is the ComputeDomain (and the ResourceClaimTemplate its driver makes) of one
// MNNVL group in one PodCliqueSet replica: <pcs>-<replica>-<group>.
func ComputeDomainName(pcs string, replica int, group string) string {
	return fmt.Sprintf("%s-%d-%s", pcs, replica, group)
}

// MNNVLGroupOf resolves the annotation over layers, narrowest first: the first layer that has it
// decides; "none" or no layer means no group.
func MNNVLGroupOf(layers ...map[string]string) string {
	for _, l := range layers {
		if v, ok := l[AnnotationMNNVLGroup]; ok {
			if v == MNNVLGroupOptOut {
				return ""
			}
			return v
		}
	}
	return ""
}

// RequestsNVIDIAGPU tells whether any container or init container asks for nvidia.com/gpu.
func RequestsNVIDIAGPU(ps *corev1.PodSpec) bool {
	return slices.ContainsFunc(ps.Containers, containerRequestsNVIDIAGPU) || slices.ContainsFunc(ps.InitContainers, containerRequestsNVIDIAGPU)
}

func containerRequestsNVIDIAGPU(c corev1.Container) bool {
	for _, l := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		if q, ok := l[ResourceNVIDIAGPU]; ok && !q.IsZero() {
			return true
		}
	}
	return false
}

// MNNVLGroup is a clique's effective MNNVL group: its own annotation, else its scaling group's,
// else the PodCliqueSet's; "" when none applies or the clique requests no NVIDIA GPU.
func (pcs *PodCliqueSet) MNNVLGroup(clique *PodCliqueTemplateSpec) string {
	if !RequestsNVIDIAGPU(&clique.Spec.PodSpec) {
		return ""
	}
	layers := []map[string]string{clique.Annotations}
	for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
		if slices.Contains(g.CliqueNames, clique.Name) {
			layers = append(layers, g.Annotations)
			break
		}
	}
	return MNNVLGroupOf(append(layers, pcs.Annotations)...)
}

// MNNVLGroups are the PodCliqueSet's MNNVL groups in use, sorted: one ComputeDomain each per
// replica.
func (pcs *PodCliqueSet) MNNVLGroups() []string {
	var out []string
	for _, c := range pcs.Spec.Template.Cliques {
		if c == nil {
			continue
		}
		if g := pcs.MNNVLGroup(c); g != "" && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	slices.Sort(out)
	return out
}
