package resourceclaims

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

var pcsGVK = grovev1alpha1.GroupVersion.WithKind("PodCliqueSet")

func setup(t *testing.T, objs ...client.Object) (client.Client, *grovev1alpha1.PodCliqueSet) {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	pcs := &grovev1alpha1.PodCliqueSet{ObjectMeta: metav1.ObjectMeta{Name: "inf", Namespace: "ns", UID: "pcs-uid"}}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build(), pcs
}

func templates() []grovev1alpha1.ResourceClaimTemplateConfig {
	t := grovev1alpha1.ResourceClaimTemplateConfig{Name: "gpu"}
	t.TemplateSpec.Labels = map[string]string{"team": "a"}
	t.TemplateSpec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}
	return []grovev1alpha1.ResourceClaimTemplateConfig{t}
}

func names(t *testing.T, c client.Client) []string {
	t.Helper()
	list := &resourcev1.ResourceClaimList{}
	require.NoError(t, c.List(context.Background(), list))
	var out []string
	for _, rc := range list.Items {
		out = append(out, rc.Name)
	}
	return out
}

func TestForNamesOneClaimPerAllReplicasEntryAndOnePerReplicaOtherwise(t *testing.T) {
	got := For("inf", []grovev1alpha1.ResourceSharingSpec{
		{Name: "a", Scope: grovev1alpha1.ResourceSharingScopeAllReplicas}, {Name: "p", Scope: grovev1alpha1.ResourceSharingScopePerReplica},
	}, 2)
	var n []string
	for _, w := range got {
		n = append(n, w.Name)
	}
	assert.Equal(t, []string{"inf-all-a", "inf-0-p", "inf-1-p"}, n)
}

func TestSyncCreatesMissingClaimsFromTheTemplateOwnedAndLabelled(t *testing.T) {
	c, pcs := setup(t)
	want := For(pcs.Name, []grovev1alpha1.ResourceSharingSpec{{Name: "gpu", Scope: grovev1alpha1.ResourceSharingScopePerReplica}}, 2)
	writes, err := Keeper{Client: c}.Sync(context.Background(), pcs, pcsGVK, pcs.Name, want, templates())
	require.NoError(t, err)
	assert.Equal(t, 2, writes)
	rc := &resourcev1.ResourceClaim{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-1-gpu"}, rc))
	assert.True(t, metav1.IsControlledBy(rc, pcs))
	assert.Equal(t, "gpu.example.com", rc.Spec.Devices.Requests[0].Exactly.DeviceClassName)
	assert.Equal(t, map[string]string{grovev1alpha1.LabelManagedBy: grovev1alpha1.LabelManagedByValue, grovev1alpha1.LabelPartOf: "inf",
		grovev1alpha1.LabelComponent: LabelComponentValue, "team": "a"}, rc.Labels)

	writes, err = Keeper{Client: c}.Sync(context.Background(), pcs, pcsGVK, pcs.Name, want, templates())
	require.NoError(t, err)
	assert.Zero(t, writes, "quiet at rest")
}

func TestSyncDeletesOnlyItsOwnUnwantedClaims(t *testing.T) {
	c, pcs := setup(t)
	k := Keeper{Client: c}
	entries := []grovev1alpha1.ResourceSharingSpec{{Name: "gpu", Scope: grovev1alpha1.ResourceSharingScopePerReplica}}
	_, err := k.Sync(context.Background(), pcs, pcsGVK, pcs.Name, For(pcs.Name, entries, 3), templates())
	require.NoError(t, err)
	foreign := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "inf-9-gpu", Namespace: "ns", Labels: map[string]string{
		grovev1alpha1.LabelPartOf: "inf", grovev1alpha1.LabelComponent: LabelComponentValue}}}
	require.NoError(t, c.Create(context.Background(), foreign))

	writes, err := k.Sync(context.Background(), pcs, pcsGVK, pcs.Name, For(pcs.Name, entries, 1), templates())
	require.NoError(t, err)
	assert.Equal(t, 2, writes)
	assert.ElementsMatch(t, []string{"inf-0-gpu", "inf-9-gpu"}, names(t, c), "the claims of replicas scaled away go; one it does not own stays")
}

func TestSyncResolvesExternalTemplatesAndReportsMissingOnes(t *testing.T) {
	external := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "shared"}}
	external.Spec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "nic", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "nic.example.com"}}}
	c, pcs := setup(t, external)
	want := For(pcs.Name, []grovev1alpha1.ResourceSharingSpec{
		{Name: "ext", Namespace: "shared", Scope: grovev1alpha1.ResourceSharingScopeAllReplicas},
		{Name: "ghost", Scope: grovev1alpha1.ResourceSharingScopeAllReplicas},
	}, 1)
	_, err := Keeper{Client: c}.Sync(context.Background(), pcs, pcsGVK, pcs.Name, want, templates())
	require.Error(t, err)
	assert.Contains(t, err.Error(), `resourceSharing "ghost": no resourceClaimTemplates entry and no ResourceClaimTemplate ns/ghost`)
	rc := &resourcev1.ResourceClaim{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-all-ext"}, rc), "the claims it can make are made")
	assert.Equal(t, "nic.example.com", rc.Spec.Devices.Requests[0].Exactly.DeviceClassName)
}

func TestSyncNeverAdoptsAClaimAnotherOwnerHolds(t *testing.T) {
	taken := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "inf-all-gpu", Namespace: "ns"}}
	c, pcs := setup(t, taken)
	_, err := Keeper{Client: c}.Sync(context.Background(), pcs, pcsGVK, pcs.Name,
		For(pcs.Name, []grovev1alpha1.ResourceSharingSpec{{Name: "gpu", Scope: grovev1alpha1.ResourceSharingScopeAllReplicas}}, 1), templates())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ResourceClaim inf-all-gpu exists and belongs to another owner")
}
