package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

func k8s() client.Client { return cluster.Current.Client() }

func clique(name string, replicas int32, startsAfter ...string) *grovev1alpha1.PodCliqueTemplateSpec {
	return &grovev1alpha1.PodCliqueTemplateSpec{
		Name: name,
		Spec: grovev1alpha1.PodCliqueSpec{
			RoleName: name, Replicas: replicas, StartsAfter: startsAfter,
			PodSpec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: name, Image: "busybox:1.36",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			}}},
		},
	}
}

// disaggregated is the sample shape of config/samples: a router, and a scaling group of a leader and two
// workers that start after their leader.
func disaggregated(ns, name string, groupReplicas int32) *grovev1alpha1.PodCliqueSet {
	return &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: grovev1alpha1.PodCliqueSetSpec{
			Replicas: 1,
			Template: grovev1alpha1.PodCliqueSetTemplateSpec{
				StartupType: ptr.To(grovev1alpha1.CliqueStartupTypeExplicit),
				Cliques:     []*grovev1alpha1.PodCliqueTemplateSpec{clique("router", 1), clique("leader", 1), clique("worker", 2, "leader")},
				PodCliqueScalingGroupConfigs: []grovev1alpha1.PodCliqueScalingGroupConfig{
					{Name: "prefill", CliqueNames: []string{"leader", "worker"}, Replicas: ptr.To(groupReplicas), MinAvailable: ptr.To[int32](1)},
				},
			},
		},
	}
}

func listPods(t *testing.T, ns string, sel map[string]string) []corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	require.NoError(t, k8s().List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels(sel)))
	return pods.Items
}

// waitRunning waits until exactly n pods of the PodCliqueSet exist and all are Running.
func waitRunning(t *testing.T, ns, pcs string, n int, timeout time.Duration) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	require.Eventually(t, func() bool {
		pods = listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs})
		if len(pods) != n {
			return false
		}
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
				return false
			}
		}
		return true
	}, timeout, 200*time.Millisecond, "waiting for %d Running pods of %s/%s (last saw %d)", n, ns, pcs, len(pods))
	return pods
}

func pcsMeta(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
