package compate2e

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// computeDomains lists the namespace's ComputeDomains (those not being deleted), sorted.
func computeDomains(ctx context.Context, t *testing.T, ns string) []*unstructured.Unstructured {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(grovev1alpha1.ComputeDomainGVK.GroupVersion().WithKind("ComputeDomainList"))
	require.NoError(t, k8s().List(ctx, list, client.InNamespace(ns)))
	var out []*unstructured.Unstructured
	for i := range list.Items {
		if list.Items[i].GetDeletionTimestamp() == nil {
			out = append(out, &list.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out
}

func computeDomainNames(ctx context.Context, t *testing.T, ns string) []string {
	names := []string{}
	for _, cd := range computeDomains(ctx, t, ns) {
		names = append(names, cd.GetName())
	}
	return names
}

// mnnvlTemplates maps each pod's PodClique to the ResourceClaimTemplate of its mnnvl-claim ("" without).
func mnnvlTemplates(ctx context.Context, t *testing.T, ns string) map[string]string {
	t.Helper()
	pods := &corev1.PodList{}
	require.NoError(t, k8s().List(ctx, pods, client.InNamespace(ns)))
	out := map[string]string{}
	for _, p := range pods.Items {
		out[p.Labels[grovev1alpha1.LabelPodClique]] = ""
		for _, rc := range p.Spec.ResourceClaims {
			if rc.Name == grovev1alpha1.MNNVLClaimName && rc.ResourceClaimTemplateName != nil {
				out[p.Labels[grovev1alpha1.LabelPodClique]] = *rc.ResourceClaimTemplateName
				assert.Equal(t, []corev1.ResourceClaim{{Name: grovev1alpha1.MNNVLClaimName}}, p.Spec.Containers[0].Resources.Claims, "the GPU container claims the channel")
			}
		}
	}
	return out
}

// TestMNNVLKeepsOneComputeDomainPerGroupPerReplica runs upstream's mnnvl-gpu-default (in both
// tiers): one ComputeDomain per replica, made before the pods that claim its channel, following
// scale-out and scale-in, the annotation immutable, everything gone with the PodCliqueSet.
func TestMNNVLKeepsOneComputeDomainPerGroupPerReplica(t *testing.T) {
	t.Parallel()
	for _, tier := range tiers {
		t.Run(tier, func(t *testing.T) {
			t.Parallel()
			oneComputeDomainPerGroupPerReplica(t, upstreamWorkload(t, tier, "mnnvl-gpu-default.yaml"))
		})
	}
}

func oneComputeDomainPerGroupPerReplica(t *testing.T, w workload) {
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	create(ctx, t, ns, w)
	require.Eventually(t, func() bool { ok, _ := running(ctx, ns, "mnnvl-gpu-default"); return ok }, runTimeout, time.Second)

	cds := computeDomains(ctx, t, ns)
	require.Len(t, cds, 1)
	cd := cds[0]
	assert.Equal(t, "mnnvl-gpu-default-0-default", cd.GetName())
	tmpl, _, _ := unstructured.NestedString(cd.Object, "spec", "channel", "resourceClaimTemplate", "name")
	assert.Equal(t, cd.GetName(), tmpl, "its channel's template is named like it")
	numNodes, _, _ := unstructured.NestedInt64(cd.Object, "spec", "numNodes")
	assert.Zero(t, numNodes, "elastic, as upstream makes it")
	pcs := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "mnnvl-gpu-default"}, pcs))
	assert.True(t, metav1.IsControlledBy(cd, pcs), "owned by the PodCliqueSet")
	assert.Equal(t, map[string]string{"mnnvl-gpu-default-0-gpu-worker": "mnnvl-gpu-default-0-default"}, mnnvlTemplates(ctx, t, ns))
	assert.Less(t, cd.GetCreationTimestamp().Time, firstPod(ctx, t, ns).CreationTimestamp.Add(time.Second), "the ComputeDomain comes first")

	scale := func(n int32) {
		got := &grovev1alpha1.PodCliqueSet{}
		require.NoError(t, k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got))
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.Replicas = n
		require.NoError(t, k8s().Patch(ctx, got, patch))
	}
	scale(2)
	require.Eventually(t, func() bool { ok, _ := running(ctx, ns, "mnnvl-gpu-default"); return ok }, runTimeout, time.Second)
	assert.Equal(t, []string{"mnnvl-gpu-default-0-default", "mnnvl-gpu-default-1-default"}, computeDomainNames(ctx, t, ns))
	assert.Equal(t, "mnnvl-gpu-default-1-default", mnnvlTemplates(ctx, t, ns)["mnnvl-gpu-default-1-gpu-worker"], "each replica claims its own domain")
	scale(1)
	require.Eventually(t, func() bool {
		return assert.ObjectsAreEqual([]string{"mnnvl-gpu-default-0-default"}, computeDomainNames(ctx, t, ns))
	}, time.Minute, 500*time.Millisecond, "the domain of the replica scaled away goes")

	// The group is immutable; the refusal names it and nothing stored changes.
	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got))
	// A merge patch carries no resourceVersion: the refusal, not a conflict with the operator's
	// status writes, is what comes back.
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"grove.io/mnnvl-group":"other"}}}`))
	err := k8s().Patch(ctx, got.DeepCopy(), patch)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "metadata.annotations[grove.io/mnnvl-group]")
	require.NoError(t, k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got))
	assert.Equal(t, "default", got.Annotations[grovev1alpha1.AnnotationMNNVLGroup])

	require.NoError(t, k8s().Delete(ctx, got))
	// kube-controller-manager's garbage collector deletes them; with every e2e package running
	// beside this one on two cores it was seen to take over a minute.
	require.Eventually(t, func() bool { return len(computeDomains(ctx, t, ns)) == 0 }, 3*time.Minute, 500*time.Millisecond, "the domains go with the PodCliqueSet")
}

func firstPod(ctx context.Context, t *testing.T, ns string) *corev1.Pod {
	t.Helper()
	pods := &corev1.PodList{}
	require.NoError(t, k8s().List(ctx, pods, client.InNamespace(ns)))
	require.NotEmpty(t, pods.Items)
	first := &pods.Items[0]
	for i := range pods.Items {
		if pods.Items[i].CreationTimestamp.Before(&first.CreationTimestamp) {
			first = &pods.Items[i]
		}
	}
	return first
}

// TestMNNVLGroupsResolveAcrossTheHierarchy runs upstream's comprehensive mix (in both tiers):
// every combination of inheriting, overriding and opting out at PodCliqueSet, scaling-group and
// clique level.
func TestMNNVLGroupsResolveAcrossTheHierarchy(t *testing.T) {
	t.Parallel()
	for _, tier := range tiers {
		t.Run(tier, func(t *testing.T) {
			t.Parallel()
			groupsResolveAcrossTheHierarchy(t, upstreamWorkload(t, tier, "mnnvl-comprehensive-mix.yaml"))
		})
	}
}

func groupsResolveAcrossTheHierarchy(t *testing.T, w workload) {
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	create(ctx, t, ns, w)
	require.Eventually(t, func() bool { ok, _ := running(ctx, ns, "mnnvl-mix"); return ok }, runTimeout, time.Second)
	assert.Equal(t, []string{"mnnvl-mix-0-batch", "mnnvl-mix-0-default", "mnnvl-mix-0-infer", "mnnvl-mix-0-solo", "mnnvl-mix-0-train"}, computeDomainNames(ctx, t, ns))
	cd := func(g string) string { return "mnnvl-mix-0-" + g }
	assert.Equal(t, map[string]string{
		"mnnvl-mix-0-sa1": cd("default"), "mnnvl-mix-0-sa2": cd("train"), "mnnvl-mix-0-sa3": "",
		"mnnvl-mix-0-g1-0-p1": cd("default"), "mnnvl-mix-0-g1-0-p2": cd("infer"), "mnnvl-mix-0-g1-0-p3": "",
		"mnnvl-mix-0-g2-0-p4": cd("train"), "mnnvl-mix-0-g2-0-p5": cd("batch"), "mnnvl-mix-0-g2-0-p6": "",
		"mnnvl-mix-0-g3-0-p7": "", "mnnvl-mix-0-g3-0-p8": cd("solo"), "mnnvl-mix-0-g3-0-p9": "",
	}, mnnvlTemplates(ctx, t, ns))
}

// TestWithoutTheAnnotationNoComputeDomainIsMade runs upstream's bare and opted-out workloads (in
// both tiers).
func TestWithoutTheAnnotationNoComputeDomainIsMade(t *testing.T) {
	t.Parallel()
	for _, tier := range tiers {
		t.Run(tier, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			for _, file := range []string{"mnnvl-comprehensive-bare.yaml", "mnnvl-gpu-bare.yaml", "mnnvl-gpu-optout.yaml"} {
				w := upstreamWorkload(t, tier, file)
				ns := cluster.Current.NewNamespace(t)
				for _, name := range create(ctx, t, ns, w) {
					require.Eventually(t, func() bool { ok, _ := running(ctx, ns, name); return ok }, runTimeout, time.Second, file)
				}
				assert.Empty(t, computeDomains(ctx, t, ns), file)
				for clique, tmpl := range mnnvlTemplates(ctx, t, ns) {
					assert.Empty(t, tmpl, "%s: %s claims no channel", file, clique)
				}
			}
		})
	}
}
