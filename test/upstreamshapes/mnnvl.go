package upstreamshapes

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	kaiv2alpha2 "github.com/kubegrove/grove/apis/kai/v2alpha2"
	"github.com/kubegrove/grove/test/builders"
)

// mnnvlWorkload starts a workload of upstream's MNNVL suite: labelled for queue test, gangs
// terminated after a second, with the MNNVL group annotation when group is not empty. Its pods
// name no scheduler.
func mnnvlWorkload(ns, name, group string) *builders.PodCliqueSetBuilder {
	b := builders.PodCliqueSet(ns, name).TerminationDelay(metav1.Duration{Duration: time.Second})
	p := b.Obj()
	labelled(p, kaiv2alpha2.QueueLabel, QueueTest)
	if group != "" {
		p.Annotations = map[string]string{grovev1alpha1.AnnotationMNNVLGroup: group}
	}
	return b
}

// gpu makes a clique's one container, named container, sleep with a limit of one NVIDIA GPU.
func gpu(container string) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) {
		ctr := &c.Spec.PodSpec.Containers[0]
		ctr.Name, ctr.Command = container, sleep
		ctr.Resources.Limits = corev1.ResourceList{grovev1alpha1.ResourceNVIDIAGPU: resource.MustParse("1")}
	}
}

// cpuOnly makes a clique's one container, named container, sleep without any GPU.
func cpuOnly(container string) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) {
		c.Spec.PodSpec.Containers[0].Name, c.Spec.PodSpec.Containers[0].Command = container, sleep
	}
}

// inGroup annotates a clique with its MNNVL group ("none" opts it out).
func inGroup(group string) func(*grovev1alpha1.PodCliqueTemplateSpec) {
	return func(c *grovev1alpha1.PodCliqueTemplateSpec) {
		c.Annotations = map[string]string{grovev1alpha1.AnnotationMNNVLGroup: group}
	}
}

// mnnvlGPU is one clique gpu-worker of one GPU pod, the PodCliqueSet in group ("" for none).
func mnnvlGPU(name, group string) func(string) *grovev1alpha1.PodCliqueSet {
	return func(ns string) *grovev1alpha1.PodCliqueSet {
		return mnnvlWorkload(ns, name, group).Clique("gpu-worker", 1, builders.MinAvailable(1), gpu("gpu-container")).Obj()
	}
}

// mnnvlComprehensiveBare is a GPU clique and a CPU clique with no MNNVL annotation anywhere.
func mnnvlComprehensiveBare(ns string) *grovev1alpha1.PodCliqueSet {
	return mnnvlWorkload(ns, "mnnvl-comprehensive-bare", "").
		Clique("gpu", 1, builders.MinAvailable(1), gpu("gpu")).
		Clique("cpu", 1, builders.MinAvailable(1), cpuOnly("cpu")).Obj()
}

// mnnvlCPUWithAnnotation is the PodCliqueSet in group default with a GPU clique gp and a CPU
// clique cp that names group default itself.
func mnnvlCPUWithAnnotation(ns string) *grovev1alpha1.PodCliqueSet {
	return mnnvlWorkload(ns, "mnnvl-cpu-with-annotation", "default").
		Clique("gp", 1, builders.MinAvailable(1), gpu("gpu")).
		Clique("cp", 1, builders.MinAvailable(1), cpuOnly("cpu"), inGroup("default")).Obj()
}

// mnnvlMix is every combination of inheriting, overriding and opting out, the PodCliqueSet in
// group default: standalone sa1 (inherits), sa2 (train), sa3 (none); group g1 (inherits) of p1
// (inherits), p2 (infer), p3 (none); g2 (train) of p4 (inherits), p5 (batch), p6 (none); g3
// (none) of p7 (inherits), p8 (solo), p9 (none). Every pod has one GPU.
func mnnvlMix(ns string) *grovev1alpha1.PodCliqueSet {
	b := mnnvlWorkload(ns, "mnnvl-mix", "default")
	groups := map[string]string{"sa2": "train", "sa3": "none", "p2": "infer", "p3": "none", "p5": "batch", "p6": "none", "p8": "solo", "p9": "none"}
	for _, name := range []string{"sa1", "sa2", "sa3", "p1", "p2", "p3", "p4", "p5", "p6", "p7", "p8", "p9"} {
		edits := []func(*grovev1alpha1.PodCliqueTemplateSpec){builders.MinAvailable(1), gpu("gpu")}
		if g, ok := groups[name]; ok {
			edits = append(edits, inGroup(g))
		}
		b.Clique(name, 1, edits...)
	}
	b.ScalingGroup("g1", 1, 1, "p1", "p2", "p3").ScalingGroup("g2", 1, 1, "p4", "p5", "p6").ScalingGroup("g3", 1, 1, "p7", "p8", "p9")
	p := b.Obj()
	// Upstream leaves the groups' replicas to the default (one).
	for i := range p.Spec.Template.PodCliqueScalingGroupConfigs {
		p.Spec.Template.PodCliqueScalingGroupConfigs[i].Replicas = nil
	}
	group(p, "g2").Annotations = map[string]string{grovev1alpha1.AnnotationMNNVLGroup: "train"}
	group(p, "g3").Annotations = map[string]string{grovev1alpha1.AnnotationMNNVLGroup: "none"}
	return p
}
