package conformance

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

func k8s() client.Client { return cluster.Current.Client() }

// pollTimeout is upstream's DefaultPollTimeout.
const pollTimeout = 4 * time.Minute

// minimums are the minAvailable of pc-a, sg-x, pc-b and pc-c in one of upstream's workloads.
type minimums struct{ pcA, sgX, pcB, pcC int32 }

// full is workload1's (every minimum equals its replicas), min workload2's.
var (
	full = minimums{pcA: 2, sgX: 2, pcB: 1, pcC: 3}
	min1 = minimums{pcA: 1, sgX: 1, pcB: 1, pcC: 1}
)

// workload is upstream's workload shape (workload1/2, workload-ondelete, the -gt variants): a
// standalone clique pc-a of 2 pods and a scaling group sg-x of 2 replicas, each a pc-b pod and
// three pc-c pods: 10 pods per PodCliqueSet replica. Upstream's pods ask for 80Mi on nodes that
// hold one each; here they are small and the cluster's nodes hold many.
func workload(ns, name string, m minimums) *grovev1alpha1.PodCliqueSet {
	clique := func(n string, replicas, min int32) *grovev1alpha1.PodCliqueTemplateSpec {
		return &grovev1alpha1.PodCliqueTemplateSpec{Name: n, Spec: grovev1alpha1.PodCliqueSpec{
			RoleName: n, Replicas: replicas, MinAvailable: ptr.To(min),
			PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: n, Image: "busybox:1.36",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("80Mi")}}}}},
		}}
	}
	return &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: grovev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{clique("pc-a", 2, m.pcA), clique("pc-b", 1, m.pcB), clique("pc-c", 3, m.pcC)},
			PodCliqueScalingGroupConfigs: []grovev1alpha1.PodCliqueScalingGroupConfig{
				{Name: "sg-x", CliqueNames: []string{"pc-b", "pc-c"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To(m.sgX)},
			},
		}},
	}
}

func pods(t *testing.T, ns string, sel map[string]string) []corev1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	require.NoError(t, k8s().List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels(sel)))
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			out = append(out, p)
		}
	}
	return out
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// deploy creates the PodCliqueSet, one replica of upstream's workload shape, and waits until its
// 10 pods are Ready (upstream's setupTest).
func deploy(t *testing.T, pcs *grovev1alpha1.PodCliqueSet) {
	t.Helper()
	require.NoError(t, k8s().Create(context.Background(), pcs))
	waitReady(t, pcs.Namespace, pcs.Name, 10, 2*time.Minute)
}

func waitReady(t *testing.T, ns, pcs string, n int, timeout time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		ps := pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs})
		if len(ps) != n {
			return false
		}
		for i := range ps {
			if !ready(&ps[i]) {
				return false
			}
		}
		return true
	}, timeout, 200*time.Millisecond, "%d Ready pods of %s/%s", n, ns, pcs)
}

// uids maps the pods of a PodCliqueSet (or of a selector) to their UIDs.
func uids(t *testing.T, ns string, sel map[string]string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, p := range pods(t, ns, sel) {
		out[p.Name] = p.UID
	}
	return out
}

// triggerUpdate changes clique's template the way upstream's triggerPodCliqueUpdate does: an
// UPDATE_TRIGGER variable with a fresh value in its first container.
func triggerUpdate(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, cliques ...string) string {
	t.Helper()
	value := strconv.FormatInt(time.Now().UnixNano(), 10)
	require.Eventually(t, func() bool {
		got := &grovev1alpha1.PodCliqueSet{}
		if k8s().Get(context.Background(), client.ObjectKeyFromObject(pcs), got) != nil {
			return false
		}
		for _, c := range got.Spec.Template.Cliques {
			for _, name := range cliques {
				if c.Name == name {
					c.Spec.PodSpec.Containers[0].Env = []corev1.EnvVar{{Name: "UPDATE_TRIGGER", Value: value}}
				}
			}
		}
		return k8s().Update(context.Background(), got) == nil
	}, 30*time.Second, 200*time.Millisecond, "updating %v", cliques)
	return value
}

func hasTrigger(p *corev1.Pod, value string) bool {
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name == "UPDATE_TRIGGER" && e.Value == value {
			return true
		}
	}
	return false
}

func get(t *testing.T, pcs *grovev1alpha1.PodCliqueSet) *grovev1alpha1.PodCliqueSet {
	t.Helper()
	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKeyFromObject(pcs), got))
	return got
}

func setStrategy(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, s grovev1alpha1.UpdateStrategyType) {
	t.Helper()
	patch := client.RawPatch("application/merge-patch+json", []byte(fmt.Sprintf(`{"spec":{"updateStrategy":{"type":%q}}}`, s)))
	require.NoError(t, k8s().Patch(context.Background(), pcs.DeepCopy(), patch))
}
