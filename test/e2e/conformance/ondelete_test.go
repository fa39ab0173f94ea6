package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// onDeleteWorkload is upstream's workload-ondelete.yaml: workload1 with updateStrategy OnDelete
// and pc-a minAvailable 1.
func onDeleteWorkload(ns string) *grovev1alpha1.PodCliqueSet {
	m := full
	m.pcA = 1
	pcs := workload(ns, "workload-ondelete", m)
	pcs.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: grovev1alpha1.OnDeleteStrategy}
	return pcs
}

// verifyNoAutomaticDeletion is upstream's verifyNoAutomaticDeletionAfterUpdate: the OnDelete update
// is marked complete at once with its progress filled, and for 10 s no original pod is deleted.
// since is when the template was changed: the update recorded is this one.
func verifyNoAutomaticDeletion(t *testing.T, pcs *grovev1alpha1.PodCliqueSet, before map[string]types.UID, since time.Time) {
	t.Helper()
	var p *grovev1alpha1.PodCliqueSetUpdateProgress
	require.Eventually(t, func() bool {
		got := get(t, pcs)
		p = got.Status.UpdateProgress
		return p != nil && p.UpdateEndedAt != nil && !p.UpdateStartedAt.Time.Before(since.Truncate(time.Second))
	}, time.Minute, 200*time.Millisecond, "the OnDelete update is complete at once")
	assert.Nil(t, p.CurrentlyUpdating)
	assert.NotZero(t, p.TotalPodCliquesCount+p.TotalPodCliqueScalingGroupsCount, "totals are not 0/0")
	assert.LessOrEqual(t, p.UpdatedPodCliquesCount, p.TotalPodCliquesCount)
	assert.LessOrEqual(t, p.UpdatedPodCliqueScalingGroupsCount, p.TotalPodCliqueScalingGroupsCount)
	assert.Never(t, func() bool {
		now := uids(t, pcs.Namespace, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
		for name, uid := range before {
			if now[name] != uid {
				return true
			}
		}
		return false
	}, 10*time.Second, 500*time.Millisecond, "no pod is deleted automatically")
	assert.Len(t, uids(t, pcs.Namespace, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name}), len(before))
}

// deleteOne deletes one pod of a PodClique and returns its name.
func deleteOne(t *testing.T, ns, pclq string) string {
	t.Helper()
	ps := pods(t, ns, map[string]string{grovev1alpha1.LabelPodClique: pclq})
	require.NotEmpty(t, ps)
	require.NoError(t, k8s().Delete(context.Background(), &ps[0]))
	return ps[0].Name
}

// waitReplacedWith waits until the pod of that name is back, Ready, with the new template.
func waitReplacedWith(t *testing.T, ns, name string, old types.UID, trigger string) {
	t.Helper()
	require.Eventually(t, func() bool {
		p := &corev1.Pod{}
		return k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, p) == nil && p.UID != old &&
			p.DeletionTimestamp.IsZero() && ready(p) && hasTrigger(p, trigger)
	}, time.Minute, 200*time.Millisecond, "%s comes back on the new template", name)
}

func Test_OD1_NoAutomaticDeletionOnSpecChange(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := onDeleteWorkload(ns)
	deploy(t, pcs)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	since := time.Now()
	triggerUpdate(t, pcs, "pc-a")
	verifyNoAutomaticDeletion(t, pcs, before, since)
}

func Test_OD2_ManualDeletionCreatesUpdatedPod(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := onDeleteWorkload(ns)
	deploy(t, pcs)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	since := time.Now()
	trigger := triggerUpdate(t, pcs, "pc-a")
	verifyNoAutomaticDeletion(t, pcs, before, since)

	name := deleteOne(t, ns, "workload-ondelete-0-pc-a")
	waitReplacedWith(t, ns, name, before[name], trigger)
	waitReady(t, ns, pcs.Name, 10, time.Minute)
	require.Eventually(t, func() bool {
		pclq := &grovev1alpha1.PodClique{}
		return k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "workload-ondelete-0-pc-a"}, pclq) == nil &&
			pclq.Status.UpdatedReplicas == 1
	}, 30*time.Second, 200*time.Millisecond, "the PodClique counts one updated pod")
}

func Test_OD4_PCSGNoAutomaticDeletionOnSpecChange(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := onDeleteWorkload(ns)
	deploy(t, pcs)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	since := time.Now()
	triggerUpdate(t, pcs, "pc-b")
	verifyNoAutomaticDeletion(t, pcs, before, since)
}

func Test_OD5_PCSGManualDeletionCreatesUpdatedReplica(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := onDeleteWorkload(ns)
	deploy(t, pcs)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	since := time.Now()
	trigger := triggerUpdate(t, pcs, "pc-c")
	verifyNoAutomaticDeletion(t, pcs, before, since)

	name := deleteOne(t, ns, "workload-ondelete-0-sg-x-0-pc-c")
	waitReplacedWith(t, ns, name, before[name], trigger)
	waitReady(t, ns, pcs.Name, 10, time.Minute)
}

func Test_OD6_MixedPCLQsAndPCSG(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := onDeleteWorkload(ns)
	deploy(t, pcs)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	since := time.Now()
	trigger := triggerUpdate(t, pcs, "pc-a", "pc-b", "pc-c")
	verifyNoAutomaticDeletion(t, pcs, before, since)

	a := deleteOne(t, ns, "workload-ondelete-0-pc-a")
	waitReplacedWith(t, ns, a, before[a], trigger)
	c := deleteOne(t, ns, "workload-ondelete-0-sg-x-1-pc-c")
	waitReplacedWith(t, ns, c, before[c], trigger)
	waitReady(t, ns, pcs.Name, 10, time.Minute)
}

func Test_OD9_StrategyTransition(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := onDeleteWorkload(ns)
	deploy(t, pcs)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	since := time.Now()
	triggerUpdate(t, pcs, "pc-a")
	verifyNoAutomaticDeletion(t, pcs, before, since)

	// To RollingRecreate, then an update of pc-b rolls by itself.
	setStrategy(t, pcs, grovev1alpha1.RollingRecreateStrategy)
	since = time.Now()
	trigger := triggerUpdate(t, pcs, "pc-b")
	require.Eventually(t, func() bool {
		got := get(t, pcs)
		p := got.Status.UpdateProgress
		return got.Status.UpdatedReplicas == 1 && p != nil && p.UpdateEndedAt != nil && !p.UpdateStartedAt.Time.Before(since.Truncate(time.Second))
	}, 2*time.Minute, 200*time.Millisecond, "the RollingRecreate update completes")
	rolled := 0
	for _, p := range pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name}) {
		if hasTrigger(&p, trigger) {
			rolled++
		}
	}
	assert.Equal(t, 2, rolled, "both pc-b pods were replaced")
	waitReady(t, ns, pcs.Name, 10, time.Minute)

	// Back to OnDelete: an update of pc-c deletes nothing.
	setStrategy(t, pcs, grovev1alpha1.OnDeleteStrategy)
	again := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	since = time.Now()
	triggerUpdate(t, pcs, "pc-c")
	verifyNoAutomaticDeletion(t, pcs, again, since)
}

// Test_OD7_MultipleReplicasPCS: with two PodCliqueSet replicas under OnDelete, a change of pc-a
// deletes no pod in either (upstream: no DELETED event for any of the 20 original pods within
// 10 s, and still 20 pods). Strengthened: the OnDelete update recorded is this one, with its
// progress filled (upstream skips that check here), and both replicas' pc-a PodCliques carry the
// new template, so a pod deleted in either comes back updated.
func Test_OD7_MultipleReplicasPCS(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := onDeleteWorkload(ns)
	deploy(t, pcs)
	scale(t, pcs.DeepCopy(), 2)
	waitReady(t, ns, pcs.Name, 20, 2*time.Minute)
	before := uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name})
	require.Len(t, before, 20)
	since := time.Now()
	trigger := triggerUpdate(t, pcs, "pc-a")
	verifyNoAutomaticDeletion(t, pcs, before, since)
	for i := 0; i < 2; i++ {
		name := grovev1alpha1.PodCliqueName(pcs.Name, i, "pc-a")
		assert.Eventually(t, func() bool {
			pclq := &grovev1alpha1.PodClique{}
			return k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, pclq) == nil &&
				hasTrigger(&corev1.Pod{Spec: pclq.Spec.PodSpec}, trigger)
		}, 30*time.Second, 200*time.Millisecond, "%s carries the new template", name)
	}
}

// Test_OD8_NodeFailureRecoveryWorkflow: a node fails; pc-a's template is changed to keep off it;
// nothing is deleted automatically; the pod on it is deleted by hand and its replacement carries
// the new affinity and runs elsewhere, while every pod on a healthy node stays. Adapted: the
// test's own 11 one-pod nodes (10 pods and a spare, as upstream's workers); the pods name their
// pool by a node selector, so the affinity term is added to pc-a rather than appended to
// upstream's existing one; the replacement keeps the pod's name here, so "new" is told by UID.
func Test_OD8_NodeFailureRecoveryWorkflow(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	pcs := onDeleteWorkload(ns)
	gangPool(t, pcs, 11, 11)
	deploy(t, pcs)
	all := map[string]string{grovev1alpha1.LabelPartOf: pcs.Name}
	before := uids(t, ns, all)

	pcA := pods(t, ns, map[string]string{grovev1alpha1.LabelPodClique: "workload-ondelete-0-pc-a"})
	require.NotEmpty(t, pcA)
	evict := pcA[0]
	failed := evict.Spec.NodeName
	require.NotEmpty(t, failed)
	healthy := map[string]types.UID{}
	for _, p := range pods(t, ns, all) {
		if p.Spec.NodeName != failed {
			healthy[p.Name] = p.UID
		}
	}

	since := time.Now()
	keepOff := corev1.NodeSelectorRequirement{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpNotIn, Values: []string{failed}}
	require.Eventually(t, func() bool {
		got := get(t, pcs)
		for _, c := range got.Spec.Template.Cliques {
			if c.Name == "pc-a" {
				c.Spec.PodSpec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{
						{MatchExpressions: []corev1.NodeSelectorRequirement{keepOff}},
					}},
				}}
			}
		}
		return k8s().Update(context.Background(), got) == nil
	}, 30*time.Second, 200*time.Millisecond, "keeping pc-a off %s", failed)
	verifyNoAutomaticDeletion(t, pcs, before, since)

	require.NoError(t, k8s().Delete(context.Background(), &evict))
	var replacement *corev1.Pod
	require.Eventually(t, func() bool {
		running := 0
		replacement = nil
		for _, p := range pods(t, ns, all) {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
			if p.Name == evict.Name && p.UID != evict.UID {
				replacement = p.DeepCopy()
			}
		}
		return running == 10 && replacement != nil
	}, pollTimeout, time.Second, "10 pods Running, %s among them anew", evict.Name)

	require.NotNil(t, replacement.Spec.Affinity, "the replacement has an affinity")
	require.NotNil(t, replacement.Spec.Affinity.NodeAffinity)
	require.NotNil(t, replacement.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	terms := replacement.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	require.NotEmpty(t, terms)
	assert.Contains(t, terms[0].MatchExpressions, keepOff, "the replacement carries the new affinity")
	assert.NotEqual(t, failed, replacement.Spec.NodeName)
	now := uids(t, ns, all)
	for name, uid := range healthy {
		assert.Equal(t, uid, now[name], "%s on a healthy node is untouched", name)
	}
}

// Test_OD3_ScaleInPrefersOutdatedPods: pc-a's template changes under OnDelete, one of its two pods
// is replaced by hand, and pc-a is scaled to 1. Upstream's steps (the first pod in list order is
// the one replaced) keep the updated pod, as upstream asserts. The second case shows the
// difference: a scale-in here removes the highest pod index, whatever its template, because a
// clique's indices stay 0…replicas-1 (hostnames and GROVE_PCLQ_POD_INDEX are ranks that
// distributed workloads rendezvous on); upstream removes outdated pods first and leaves a hole.
func Test_OD3_ScaleInPrefersOutdatedPods(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		replaced int // the pc-a pod index replaced by hand
		kept     func(updated, outdated string) string
	}{
		{name: "upstream's steps: the first pod is replaced, the outdated one goes", replaced: 0,
			kept: func(updated, _ string) string { return updated }},
		{name: "the last pod replaced: the highest index goes, updated or not", replaced: 1,
			kept: func(_, outdated string) string { return outdated }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := cluster.Current.NewNamespace(t)
			pcs := onDeleteWorkload(ns)
			deploy(t, pcs)
			const pclq = "workload-ondelete-0-pc-a"
			old := uids(t, ns, map[string]string{grovev1alpha1.LabelPodClique: pclq})
			require.Len(t, old, 2)
			since := time.Now()
			trigger := triggerUpdate(t, pcs, "pc-a")
			verifyNoAutomaticDeletion(t, pcs, uids(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name}), since)

			updated := grovev1alpha1.PodHostname(pclq, tc.replaced)
			outdated := grovev1alpha1.PodHostname(pclq, 1-tc.replaced)
			require.NoError(t, k8s().Delete(context.Background(), builders.Pod(ns, updated).Obj()))
			waitReplacedWith(t, ns, updated, old[updated], trigger)
			waitReady(t, ns, pcs.Name, 10, time.Minute)

			scale(t, pclqRef(ns, pclq), 1)
			waitReady(t, ns, pcs.Name, 9, pollTimeout)
			left := pods(t, ns, map[string]string{grovev1alpha1.LabelPodClique: pclq})
			require.Len(t, left, 1)
			assert.Equal(t, tc.kept(updated, outdated), left[0].Name)
		})
	}
}
