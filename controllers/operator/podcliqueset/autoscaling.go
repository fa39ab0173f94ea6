package podcliqueset

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/children"
)

// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete

// defaultMetrics is what an autoscaler without metrics scales on: 80% average CPU utilisation.
var defaultMetrics = []autoscalingv2.MetricSpec{{
	Type: autoscalingv2.ResourceMetricSourceType,
	Resource: &autoscalingv2.ResourceMetricSource{
		Name:   corev1.ResourceCPU,
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](80)},
	},
}}

// wantedAutoscalers returns one HorizontalPodAutoscaler per autoscaled clique and scaling group
// of each replica. It targets the PodClique or PodCliqueScalingGroup through its scale
// subresource, so the autoscaler, not the template, owns their replicas.
func wantedAutoscalers(pcs *grovev1alpha1.PodCliqueSet) map[string]*autoscalingv2.HorizontalPodAutoscaler {
	want := map[string]*autoscalingv2.HorizontalPodAutoscaler{}
	add := func(replica int, kind, target string, cfg *grovev1alpha1.AutoScalingConfig, floor int32) {
		min := cfg.MinReplicas
		if min == nil {
			min = ptr.To(floor)
		}
		metrics := cfg.Metrics
		if len(metrics) == 0 {
			metrics = defaultMetrics
		}
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Name: target, Namespace: pcs.Namespace, Labels: children.ReplicaLabels(pcs.Name, replica)},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: grovev1alpha1.GroupVersion.String(), Kind: kind, Name: target},
				MinReplicas:    min,
				MaxReplicas:    cfg.MaxReplicas,
				Metrics:        metrics,
			},
		}
		setOwner(pcs, hpa)
		want[target] = hpa
	}
	for i := 0; i < int(pcs.Spec.Replicas); i++ {
		for _, c := range standaloneCliques(pcs) {
			if c.Spec.ScaleConfig != nil {
				floor := c.Spec.Replicas
				if c.Spec.MinAvailable != nil {
					floor = *c.Spec.MinAvailable
				}
				add(i, "PodClique", grovev1alpha1.PodCliqueName(pcs.Name, i, c.Name), c.Spec.ScaleConfig, floor)
			}
		}
		for _, g := range pcs.Spec.Template.PodCliqueScalingGroupConfigs {
			if g.ScaleConfig != nil {
				add(i, "PodCliqueScalingGroup", grovev1alpha1.PodCliqueScalingGroupName(pcs.Name, i, g.Name), g.ScaleConfig, children.GroupMinAvailable(&g))
			}
		}
	}
	return want
}

// sameAutoscaling compares the fields the operator sets; the API server defaults the others
// (behavior), and comparing those would rewrite the autoscaler on every reconcile.
func sameAutoscaling(have, want autoscalingv2.HorizontalPodAutoscalerSpec) bool {
	return have.ScaleTargetRef == want.ScaleTargetRef && equality.Semantic.DeepEqual(have.MinReplicas, want.MinReplicas) &&
		have.MaxReplicas == want.MaxReplicas && equality.Semantic.DeepEqual(have.Metrics, want.Metrics)
}
