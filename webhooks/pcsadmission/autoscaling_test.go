package pcsadmission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

func TestAnAutoscalerMayScaleAComponentToZeroWhereTheClusterAllows(t *testing.T) {
	external := autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "queue_depth"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType}}}
	for _, tc := range []struct {
		name    string
		min     int32
		metrics []autoscalingv2.MetricSpec
		want    string
	}{
		{name: "minReplicas 0 with an External metric", min: 0, metrics: []autoscalingv2.MetricSpec{external}},
		{name: "minReplicas 0 on CPU alone: nothing to read with no pod", min: 0, want: "needs at least one Object or External metric"},
		{name: "a positive minimum below minAvailable is still refused", min: 1, want: "must be at least minAvailable (2)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &grovev1alpha1.AutoScalingConfig{MinReplicas: ptr.To(tc.min), MaxReplicas: 4, Metrics: tc.metrics}

			errs := validateScaleConfig(field.NewPath("scaleConfig"), sc, ptr.To[int32](2), 2)

			if tc.want == "" {
				assert.Empty(t, errs)
				return
			}
			assert.Contains(t, errs.ToAggregate().Error(), tc.want)
		})
	}
}
