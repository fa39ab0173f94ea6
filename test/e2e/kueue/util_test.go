package kueuee2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
	"github.com/kubegrove/grove/test/cluster"
)

func k8s() client.Client { return cluster.Current.Client() }

const gpu corev1.ResourceName = "nvidia.com/gpu"

// queueWithGPUs makes a ClusterQueue of n GPUs (that preempts lower priorities within itself)
// and a LocalQueue of the same name in a new namespace, and returns the namespace.
func queueWithGPUs(t *testing.T, name string, n int64, edits ...func(*kueuev1beta2.ClusterQueue)) string {
	t.Helper()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	flavor := &kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "flavor-" + name}}
	cq := &kueuev1beta2.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueuev1beta2.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			Preemption:        &kueuev1beta2.ClusterQueuePreemption{WithinClusterQueue: kueuev1beta2.PreemptionPolicyLowerPriority},
			ResourceGroups: []kueuev1beta2.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, gpu},
				Flavors: []kueuev1beta2.FlavorQuotas{{Name: kueuev1beta2.ResourceFlavorReference(flavor.Name), Resources: []kueuev1beta2.ResourceQuota{
					{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("100")},
					{Name: gpu, NominalQuota: *resource.NewQuantity(n, resource.DecimalSI)},
				}}},
			}},
		},
	}
	for _, edit := range edits {
		edit(cq)
	}
	lq := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: kueuev1beta2.ClusterQueueReference(name)}}
	for _, obj := range []client.Object{flavor, cq, lq} {
		require.NoError(t, k8s().Create(ctx, obj))
	}
	t.Cleanup(func() {
		for _, obj := range []client.Object{lq, cq, flavor} {
			_ = k8s().Delete(context.Background(), obj)
		}
	})
	return ns
}

// strictFIFO makes the queue admit in creation order: an older Workload that does not fit blocks
// every newer one.
func strictFIFO(cq *kueuev1beta2.ClusterQueue) { cq.Spec.QueueingStrategy = kueuev1beta2.StrictFIFO }

// priorityClass makes a PriorityClass for the test.
func priorityClass(t *testing.T, name string, value int32) {
	t.Helper()
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
	require.NoError(t, k8s().Create(context.Background(), pc))
	t.Cleanup(func() { _ = k8s().Delete(context.Background(), pc) })
}

// gpuPCS is one replica of a clique of pods asking for gpusPerPod GPUs each, in queue.
func gpuPCS(ns, name, queue string, pods int32, gpusPerPod int64) *grovev1alpha1.PodCliqueSet {
	limits := corev1.ResourceList{gpu: *resource.NewQuantity(gpusPerPod, resource.DecimalSI), corev1.ResourceCPU: resource.MustParse("100m")}
	return &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{grovev1alpha1.LabelKueueQueueName: queue}},
		Spec: grovev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{{Name: "worker", Spec: grovev1alpha1.PodCliqueSpec{
				Replicas: pods,
				PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "worker", Image: "busybox:1.36",
					Resources: corev1.ResourceRequirements{Limits: limits, Requests: limits}}}},
			}}},
		}},
	}
}

func pods(t *testing.T, ns, pcs string) []corev1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	require.NoError(t, k8s().List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: pcs}))
	return list.Items
}

// eventually polls cond until it holds, failing with what it last described.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var ok bool
		ok, last = cond()
		return ok, nil
	})
	if err != nil {
		t.Fatalf("after %s: %s", timeout, last)
	}
}

// waitRunning waits until n pods of the PodCliqueSet exist and all run.
func waitRunning(t *testing.T, ns, pcs string, n int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() (bool, string) {
		last := pods(t, ns, pcs)
		msg := fmt.Sprintf("waiting for %d Running pods of %s/%s; saw %s", n, ns, pcs, describe(last))
		if len(last) != n {
			return false, msg
		}
		for _, p := range last {
			if p.Status.Phase != corev1.PodRunning || !p.DeletionTimestamp.IsZero() {
				return false, msg
			}
		}
		return true, ""
	})
}

// waitHeldByKueue waits up to a minute until n pods of the PodCliqueSet exist, none scheduled, each
// held by Kueue's admission gate.
func waitHeldByKueue(t *testing.T, ns, pcs string, n int) {
	t.Helper()
	eventually(t, time.Minute, func() (bool, string) {
		last := pods(t, ns, pcs)
		msg := fmt.Sprintf("waiting for %d pods of %s/%s held by Kueue; saw %s", n, ns, pcs, describe(last))
		if len(last) != n {
			return false, msg
		}
		for _, p := range last {
			if p.Spec.NodeName != "" || !p.DeletionTimestamp.IsZero() || !gated(&p, kueuegang.SchedulingGateAdmission) {
				return false, msg
			}
		}
		return true, ""
	})
}

// keptPending waits until Kueue keeps the Workload pending (waitKeptPending), then checks that
// no pod of the PodCliqueSet is scheduled: Kueue's decision, observed, rather than a wait for
// something not to happen.
func keptPending(t *testing.T, ns, pcs, workload string, timeout time.Duration) {
	t.Helper()
	waitKeptPending(t, ns, workload, timeout)
	for _, p := range pods(t, ns, pcs) {
		require.Empty(t, p.Spec.NodeName, "pod %s was scheduled before Kueue admitted its gang", p.Name)
	}
}

// waitKeptPending waits until Kueue has looked at the Workload and keeps it pending: its
// QuotaReserved condition is False.
func waitKeptPending(t *testing.T, ns, workload string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, func() (bool, string) {
		wl := &kueuev1beta2.Workload{}
		if err := k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: workload}, wl); err != nil {
			return false, err.Error()
		}
		return keptPendingNow(wl), fmt.Sprintf("Workload %s/%s: QuotaReserved is %+v", ns, workload, meta.FindStatusCondition(wl.Status.Conditions, kueuev1beta2.WorkloadQuotaReserved))
	})
}

// keptPendingNow reports whether Kueue has looked at wl and left it without quota.
func keptPendingNow(wl *kueuev1beta2.Workload) bool {
	c := meta.FindStatusCondition(wl.Status.Conditions, kueuev1beta2.WorkloadQuotaReserved)
	return c != nil && c.Status == metav1.ConditionFalse
}

func gated(p *corev1.Pod, gate string) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == gate {
			return true
		}
	}
	return false
}

func describe(pods []corev1.Pod) string {
	var out []string
	for _, p := range pods {
		var gates []string
		for _, g := range p.Spec.SchedulingGates {
			gates = append(gates, g.Name)
		}
		out = append(out, fmt.Sprintf("%s(%s node=%q gates=%v deleting=%v)", p.Name, p.Status.Phase, p.Spec.NodeName, gates, !p.DeletionTimestamp.IsZero()))
	}
	return "[" + strings.Join(out, " ") + "]"
}

// waitQueueAdmitted waits for the PodCliqueSet's QueueAdmitted condition and returns it.
func waitQueueAdmitted(t *testing.T, ns, name string, status metav1.ConditionStatus, reason string, timeout time.Duration) metav1.Condition {
	t.Helper()
	var got *metav1.Condition
	eventually(t, timeout, func() (bool, string) {
		pcs := &grovev1alpha1.PodCliqueSet{}
		if err := k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pcs); err != nil {
			return false, err.Error()
		}
		got = meta.FindStatusCondition(pcs.Status.Conditions, grovev1alpha1.ConditionQueueAdmitted)
		return got != nil && got.Status == status && got.Reason == reason, fmt.Sprintf("waiting for %s/%s QueueAdmitted=%s/%s; last %+v", ns, name, status, reason, got)
	})
	return *got
}

// assertEvent checks that an event of reason was recorded for the object.
func assertEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	require.Eventually(t, func() bool {
		list := &corev1.EventList{}
		if err := k8s().List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return false
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason {
				return true
			}
		}
		return false
	}, 30*time.Second, 250*time.Millisecond, "no %s event for %s/%s", reason, ns, name)
}

func resourceGPUs(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.DecimalSI) }
