package podcliqueset

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
)

// wantService is a replica's headless Service: one DNS name per pod of the replica.
func wantService(pcs *grovev1alpha1.PodCliqueSet, replica int) *corev1.Service {
	publish := true
	if c := pcs.Spec.Template.HeadlessServiceConfig; c != nil {
		publish = c.PublishNotReadyAddresses
	}
	labels := children.ReplicaLabels(pcs.Name, replica)
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: grovev1alpha1.HeadlessServiceName(pcs.Name, replica), Namespace: pcs.Namespace, Labels: labels},
		Spec: corev1.ServiceSpec{
			ClusterIP:                corev1.ClusterIPNone,
			Selector:                 maps.Clone(labels),
			PublishNotReadyAddresses: publish,
		},
	}
}

func standaloneCliques(pcs *grovev1alpha1.PodCliqueSet) []*grovev1alpha1.PodCliqueTemplateSpec {
	var out []*grovev1alpha1.PodCliqueTemplateSpec
	for _, c := range pcs.Spec.Template.Cliques {
		if children.GroupOf(pcs, c.Name) == nil {
			out = append(out, c)
		}
	}
	return out
}

// wantGroup is a replica's PodCliqueScalingGroup for the scaling group g at its template's size.
func wantGroup(pcs *grovev1alpha1.PodCliqueSet, replica int, g *grovev1alpha1.PodCliqueScalingGroupConfig) *grovev1alpha1.PodCliqueScalingGroup {
	labels := children.ReplicaLabels(pcs.Name, replica)
	labels[grovev1alpha1.LabelPodCliqueScalingGroup] = grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, replica, g.Name)
	want := &grovev1alpha1.PodCliqueScalingGroup{
		ObjectMeta: metav1.ObjectMeta{Name: labels[grovev1alpha1.LabelPodCliqueScalingGroup], Namespace: pcs.Namespace, Labels: labels, Annotations: maps.Clone(g.Annotations)},
		Spec: grovev1alpha1.PodCliqueScalingGroupSpec{
			Replicas:         children.GroupReplicas(g),
			MinAvailable:     ptr.To(children.GroupMinAvailable(g)),
			CliqueNames:      g.CliqueNames,
			TerminationDelay: g.TerminationDelay,
			// The PodCliqueScalingGroup reconciler applies the template to its PodCliques only once
			// the rollout has moved the generation hash onto the group.
			InheritedSpec: children.Inherited(pcs, children.GroupReplicas(g)),
		},
	}
	want.Spec.RollingUpdate = g.RollingUpdate.DeepCopy()
	if want.Spec.TerminationDelay == nil {
		want.Spec.TerminationDelay = pcs.Spec.Template.TerminationDelay
	}
	return want
}

// keepScaledReplicas decides a child's replicas: an autoscaled child keeps what its autoscaler
// chose; otherwise the template wins only when the template's value changed since it was last
// applied (the child's spec.templateReplicas), so `kubectl scale` on the child sticks until the
// template is edited.
func keepScaledReplicas(template, current int32, applied *int32, autoscaled bool) int32 {
	if autoscaled || (applied != nil && *applied == template) {
		return current
	}
	return template
}
