package v1alpha1

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func gpuClique(name string, gpus string, group string) *PodCliqueTemplateSpec {
	c := &PodCliqueTemplateSpec{Name: name, Spec: PodCliqueSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: name}}}}}
	if gpus != "" {
		c.Spec.PodSpec.Containers[0].Resources.Limits = corev1.ResourceList{ResourceNVIDIAGPU: resource.MustParse(gpus)}
	}
	if group != "" {
		c.Annotations = map[string]string{AnnotationMNNVLGroup: group}
	}
	return c
}

// TestMNNVLGroupFollowsUpstreamsHierarchy is upstream Grove's three-layer example: a lower layer
// overrides a higher one, "none" opts out, cliques without NVIDIA GPUs never take part.
func TestMNNVLGroupFollowsUpstreamsHierarchy(t *testing.T) {
	pcs := &PodCliqueSet{}
	pcs.Annotations = map[string]string{AnnotationMNNVLGroup: "my-group"}
	pcs.Spec.Template.Cliques = []*PodCliqueTemplateSpec{
		gpuClique("gpu-a", "8", ""), gpuClique("gpu-b", "8", "my-group"), gpuClique("gpu-c", "8", ""), gpuClique("gpu-d", "8", "none"),
		gpuClique("cpu", "", ""), gpuClique("other", "8", "other-group"), gpuClique("zero", "0", ""),
	}
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []PodCliqueScalingGroupConfig{
		{Name: "opted-out-sg", CliqueNames: []string{"gpu-a", "gpu-b"}, Annotations: map[string]string{AnnotationMNNVLGroup: "none"}},
		{Name: "inherited-sg", CliqueNames: []string{"gpu-c", "gpu-d"}},
	}
	want := map[string]string{"gpu-a": "", "gpu-b": "my-group", "gpu-c": "my-group", "gpu-d": "", "cpu": "", "other": "other-group", "zero": ""}
	for _, c := range pcs.Spec.Template.Cliques {
		assert.Equal(t, want[c.Name], pcs.MNNVLGroup(c), c.Name)
	}
	assert.Equal(t, []string{"my-group", "other-group"}, pcs.MNNVLGroups())
	assert.Equal(t, "my-workload-1-my-group", ComputeDomainName("my-workload", 1, "my-group"))
}
