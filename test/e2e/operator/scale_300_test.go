package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// TestThreeHundredPodPodCliqueSetIsUngated reports (it does not assert wall-clock limits) how long a
// 3-clique, 300-pod PodCliqueSet takes from apply to every pod created and ungated, with the
// operator's client at qps 200 / burst 400. `make bench` measures this against a baseline.
func TestThreeHundredPodPodCliqueSetIsUngated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: ns},
		Spec: grovev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{clique("frontend", 20), clique("prefill", 80), clique("decode", 200)},
		}},
	}
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.PodSpec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}
	}
	begin := time.Now()
	require.NoError(t, k8s().Create(ctx, pcs))
	var created, ungated time.Duration
	require.Eventually(t, func() bool {
		pods := listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "big"})
		if len(pods) == 300 && created == 0 {
			created = time.Since(begin)
		}
		gated := 0
		for _, p := range pods {
			if len(p.Spec.SchedulingGates) > 0 {
				gated++
			}
		}
		return len(pods) == 300 && gated == 0
	}, 5*time.Minute, 100*time.Millisecond)
	ungated = time.Since(begin)
	waitRunning(t, ns, "big", 300, 5*time.Minute)
	t.Logf("300 pods: created after %s, all ungated after %s, all Running after %s (operator client qps 200, burst 400)",
		created.Round(time.Millisecond), ungated.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
	writes := writesIn(t, ns, time.Time{})
	t.Logf("operator and backend writes: %d (%.2f per pod)", len(writes), float64(len(writes))/300)
}
