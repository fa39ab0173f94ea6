package compate2e

import (
	"context"
	"maps"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// claims maps the namespace's ResourceClaims to their controller (kind/name).
func claims(ctx context.Context, t *testing.T, ns string) map[string]string {
	t.Helper()
	list := &resourcev1.ResourceClaimList{}
	require.NoError(t, k8s().List(ctx, list, client.InNamespace(ns)))
	out := map[string]string{}
	for _, c := range list.Items {
		if c.DeletionTimestamp.IsZero() {
			ref := metav1.GetControllerOf(&c)
			if ref == nil {
				out[c.Name] = ""
				continue
			}
			out[c.Name] = ref.Kind + "/" + ref.Name
		}
	}
	return out
}

// podClaims maps each pod's PodClique to the claims the pod references, in order.
func podClaims(ctx context.Context, t *testing.T, ns string) map[string][]string {
	t.Helper()
	pods := &corev1.PodList{}
	require.NoError(t, k8s().List(ctx, pods, client.InNamespace(ns)))
	out := map[string][]string{}
	for _, p := range pods.Items {
		var names []string
		for _, rc := range p.Spec.ResourceClaims {
			names = append(names, *rc.ResourceClaimName)
		}
		out[p.Labels[grovev1alpha1.LabelPodClique]] = names
	}
	return out
}

// waitClaims waits until the namespace's claims and their owners are want. Each step gets the
// tier's run timeout: claims of a removed level go by the garbage collector, and beside upstream's
// corpus deleting namespaces of thousands of pods on two cores it was seen to take over 2 minutes
// (etcd timing out), on a scale-in as on the PodCliqueSet's deletion.
func waitClaims(ctx context.Context, t *testing.T, ns string, want map[string]string, msg string) {
	t.Helper()
	var got map[string]string
	if !assert.Eventually(t, func() bool {
		got = claims(ctx, t, ns)
		return assert.ObjectsAreEqual(want, got)
	}, runTimeout, 500*time.Millisecond, msg) {
		assert.Equal(t, want, got, msg)
	}
}

// TestUpstreamResourceSharingMakesUpstreamsClaimsAtEveryLevel runs upstream's
// workload-resource-sharing (in both tiers) and checks the claims its own e2e test expects —
// names, owners, which pods reference which — through a scaling-group scale-out and scale-in, and
// that they go with the PodCliqueSet.
func TestUpstreamResourceSharingMakesUpstreamsClaimsAtEveryLevel(t *testing.T) {
	t.Parallel()
	for _, tier := range tiers {
		t.Run(tier, func(t *testing.T) {
			t.Parallel()
			claimsAtEveryLevel(t, upstreamWorkload(t, tier, "workload-resource-sharing.yaml"))
		})
	}
}

func claimsAtEveryLevel(t *testing.T, w workload) {
	ctx := context.Background()
	require.NoError(t, sharedTemplateNamespace(ctx))
	ns := cluster.Current.NewNamespace(t)
	create(ctx, t, ns, w)
	require.Eventually(t, func() bool { ok, _ := running(ctx, ns, "rs-test"); return ok }, runTimeout, time.Second)

	pcs, sga := "PodCliqueSet/rs-test", "PodCliqueScalingGroup/rs-test-0-sga"
	initial := map[string]string{
		"rs-test-all-int-tpl5": pcs, "rs-test-0-ext-tpl": pcs, "rs-test-0-int-tpl": pcs, "rs-test-all-int-tpl7": pcs,
		"rs-test-0-worker-a-0-int-tpl4": "PodClique/rs-test-0-worker-a", "rs-test-0-worker-a-all-ext-ns-tpl": "PodClique/rs-test-0-worker-a",
		"rs-test-0-sga-all-int-tpl2": sga, "rs-test-0-sga-0-int-tpl3": sga, "rs-test-0-sga-1-int-tpl3": sga, "rs-test-0-sga-all-int-tpl8": sga,
		"rs-test-0-sga-0-worker-b-all-int-tpl6": "PodClique/rs-test-0-sga-0-worker-b", "rs-test-0-sga-1-worker-b-all-int-tpl6": "PodClique/rs-test-0-sga-1-worker-b",
	}
	waitClaims(ctx, t, ns, initial, "the 12 claims of upstream's inventory, each owned by its level")
	assert.Equal(t, map[string][]string{
		"rs-test-0-worker-a": {"rs-test-all-int-tpl5", "rs-test-0-ext-tpl", "rs-test-0-int-tpl", "rs-test-0-worker-a-all-ext-ns-tpl", "rs-test-0-worker-a-0-int-tpl4"},
		"rs-test-0-sga-0-worker-b": {"rs-test-all-int-tpl5", "rs-test-all-int-tpl7", "rs-test-0-ext-tpl", "rs-test-0-sga-all-int-tpl2", "rs-test-0-sga-all-int-tpl8",
			"rs-test-0-sga-0-int-tpl3", "rs-test-0-sga-0-worker-b-all-int-tpl6"},
		"rs-test-0-sga-1-worker-b": {"rs-test-all-int-tpl5", "rs-test-all-int-tpl7", "rs-test-0-ext-tpl", "rs-test-0-sga-all-int-tpl2", "rs-test-0-sga-all-int-tpl8",
			"rs-test-0-sga-1-int-tpl3", "rs-test-0-sga-1-worker-b-all-int-tpl6"},
	}, podClaims(ctx, t, ns), "filters decide which pods get which claims")

	// A scaling group scaled out gains the claims of its new group replica, and loses them when
	// scaled back in.
	scaleGroup := func(n int32) {
		group := &grovev1alpha1.PodCliqueScalingGroup{}
		require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "rs-test-0-sga"}, group))
		patch := client.MergeFrom(group.DeepCopy())
		group.Spec.Replicas = n
		require.NoError(t, k8s().Patch(ctx, group, patch))
	}
	scaleGroup(3)
	three := maps.Clone(initial)
	three["rs-test-0-sga-2-int-tpl3"] = sga
	three["rs-test-0-sga-2-worker-b-all-int-tpl6"] = "PodClique/rs-test-0-sga-2-worker-b"
	waitClaims(ctx, t, ns, three, "scale-out of the group: 14 claims")
	scaleGroup(2)
	waitClaims(ctx, t, ns, initial, "scale-in of the group: back to the 12")

	// The PodCliqueSet deleted, every claim goes with its owner: the garbage collector removes
	// them two levels down (PodCliqueSet → scaling group and PodCliques → claims).
	require.NoError(t, k8s().Delete(ctx, &grovev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rs-test"}}))
	waitClaims(ctx, t, ns, map[string]string{}, "no claim outlives the PodCliqueSet")
}

// TestPodsOfAReplicaShareOneAllocatedClaim shares one device per PodCliqueSet replica: both pods
// of a replica reference one claim, kube-scheduler allocates it once and puts both on the node
// of its device, and the other replica gets a claim and a device of its own; scaling in deletes
// the claim of the replica that went.
func TestPodsOfAReplicaShareOneAllocatedClaim(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := builders.PodCliqueSet(ns, "share").Replicas(2).Clique("worker", 2).Obj()
	tmpl := grovev1alpha1.ResourceClaimTemplateConfig{Name: "gpu"}
	tmpl.TemplateSpec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "shared-gpu"}}}
	pcs.Spec.Template.ResourceClaimTemplates = []grovev1alpha1.ResourceClaimTemplateConfig{tmpl}
	pcs.Spec.Template.ResourceSharing = []grovev1alpha1.PCSResourceSharingSpec{{ResourceSharingSpec: grovev1alpha1.ResourceSharingSpec{Name: "gpu", Scope: grovev1alpha1.ResourceSharingScopePerReplica}}}
	require.NoError(t, k8s().Create(ctx, pcs))
	require.Eventually(t, func() bool { ok, _ := running(ctx, ns, "share"); return ok }, runTimeout, time.Second)

	pods := &corev1.PodList{}
	require.NoError(t, k8s().List(ctx, pods, client.InNamespace(ns)))
	require.Len(t, pods.Items, 4)
	nodeOf := map[string][]string{} // claim -> nodes of the pods referencing it
	for _, p := range pods.Items {
		require.Len(t, p.Spec.ResourceClaims, 1, p.Name)
		claim := *p.Spec.ResourceClaims[0].ResourceClaimName
		assert.Equal(t, "share-"+p.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex]+"-gpu", claim, "%s references its replica's claim", p.Name)
		assert.Equal(t, []corev1.ResourceClaim{{Name: claim}}, p.Spec.Containers[0].Resources.Claims, "the container sees the device")
		nodeOf[claim] = append(nodeOf[claim], p.Spec.NodeName)
	}
	devices := map[string]string{}
	for _, name := range []string{"share-0-gpu", "share-1-gpu"} {
		rc := &resourcev1.ResourceClaim{}
		require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rc))
		require.NotNil(t, rc.Status.Allocation, "%s is allocated by kube-scheduler", name)
		require.Len(t, rc.Status.Allocation.Devices.Results, 1)
		r := rc.Status.Allocation.Devices.Results[0]
		devices[name] = r.Pool + "/" + r.Device
		assert.Len(t, rc.Status.ReservedFor, 2, "%s is reserved for both pods of its replica", name)
		assert.Equal(t, []string{r.Pool, r.Pool}, nodeOf[name], "both pods run on the node of the shared device")
		assert.True(t, metav1.IsControlledBy(rc, pcs), "owned by the PodCliqueSet")
	}
	assert.NotEqual(t, devices["share-0-gpu"], devices["share-1-gpu"], "each replica has a device of its own")

	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got))
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Replicas = 1
	require.NoError(t, k8s().Patch(ctx, got, patch))
	waitClaims(ctx, t, ns, map[string]string{"share-0-gpu": "PodCliqueSet/share"}, "the claim of the replica scaled away goes")
	names := []string{}
	for n := range claims(ctx, t, ns) {
		names = append(names, n)
	}
	sort.Strings(names)
	assert.Equal(t, []string{"share-0-gpu"}, names)
}
