package pcsadmission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// gpuPCS is valid() with NVIDIA GPUs on the leader and the workers, none on the router.
func gpuPCS() *grovev1alpha1.PodCliqueSet {
	pcs := valid()
	for _, c := range pcs.Spec.Template.Cliques[1:] {
		c.Spec.PodSpec.Containers[0].Resources.Limits = corev1.ResourceList{grovev1alpha1.ResourceNVIDIAGPU: resource.MustParse("4")}
	}
	return pcs
}

func setGroup(annotations *map[string]string, v string) {
	if *annotations == nil {
		*annotations = map[string]string{}
	}
	(*annotations)[grovev1alpha1.AnnotationMNNVLGroup] = v
}

func TestMNNVLGroupsAreRefusedWithTheAnnotationsPath(t *testing.T) {
	cases := []struct {
		name    string
		enabled bool
		mutate  func(*grovev1alpha1.PodCliqueSet)
		want    []string
	}{
		{"a PodCliqueSet-level group reaching GPU cliques only", true, func(p *grovev1alpha1.PodCliqueSet) { setGroup(&p.Annotations, "fabric") }, nil},
		{"opting out anywhere is always allowed", false, func(p *grovev1alpha1.PodCliqueSet) {
			setGroup(&p.Annotations, "none")
			setGroup(&p.Spec.Template.Cliques[0].Annotations, "none")
		}, nil},
		{"a group while MNNVL is off", false, func(p *grovev1alpha1.PodCliqueSet) { setGroup(&p.Annotations, "fabric") },
			[]string{"metadata.annotations[grove.io/mnnvl-group]"}},
		{"a group name that is no DNS label", true, func(p *grovev1alpha1.PodCliqueSet) {
			setGroup(&p.Spec.Template.PodCliqueScalingGroupConfigs[0].Annotations, "invalid value with spaces")
		}, []string{"spec.template.podCliqueScalingGroups[0].annotations[grove.io/mnnvl-group]"}},
		{"a clique without NVIDIA GPUs naming a group itself", true, func(p *grovev1alpha1.PodCliqueSet) {
			setGroup(&p.Spec.Template.Cliques[0].Annotations, "fabric")
		}, []string{"spec.template.cliques[0].annotations[grove.io/mnnvl-group]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := gpuPCS()
			tc.mutate(pcs)
			var got []string
			for _, e := range validateMNNVLCreate(pcs, tc.enabled) {
				assert.Equal(t, field.ErrorTypeInvalid, e.Type)
				got = append(got, e.Field)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestMNNVLGroupsAreImmutable(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*grovev1alpha1.PodCliqueSet)
		want   []string
	}{
		{"unchanged", func(*grovev1alpha1.PodCliqueSet) {}, nil},
		{"added to the PodCliqueSet", func(p *grovev1alpha1.PodCliqueSet) { setGroup(&p.Annotations, "other") }, []string{"metadata.annotations[grove.io/mnnvl-group]"}},
		{"changed on a clique", func(p *grovev1alpha1.PodCliqueSet) { setGroup(&p.Spec.Template.Cliques[2].Annotations, "none") },
			[]string{"spec.template.cliques[2].annotations[grove.io/mnnvl-group]"}},
		{"removed from a scaling group", func(p *grovev1alpha1.PodCliqueSet) {
			delete(p.Spec.Template.PodCliqueScalingGroupConfigs[0].Annotations, grovev1alpha1.AnnotationMNNVLGroup)
		}, []string{"spec.template.podCliqueScalingGroups[0].annotations[grove.io/mnnvl-group]"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := gpuPCS()
			setGroup(&old.Spec.Template.Cliques[2].Annotations, "workers")
			setGroup(&old.Spec.Template.PodCliqueScalingGroupConfigs[0].Annotations, "fabric")
			pcs := old.DeepCopy()
			tc.mutate(pcs)
			var got []string
			for _, e := range validateMNNVLUpdate(old, pcs) {
				got = append(got, e.Field)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}
