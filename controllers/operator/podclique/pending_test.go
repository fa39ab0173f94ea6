package podclique

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/internal/reconcile/eventbatch"
)

// A pass that runs before the cache shows the pods the previous pass created sends no second
// create and writes no status from its stale view; once the cache shows them, status is written.
func TestAPassBeforeTheCacheShowsNewPodsNeitherRecreatesThemNorWritesStatus(t *testing.T) {
	pclq := gatedClique().Replicas(3, 3).Obj()
	lagging := true          // the cache does not show pods yet
	var creates atomic.Int32 // the pods are created side by side
	statusWrites := 0
	c := fakeClient(t).WithObjects(pclq, podGangOf(time.Now(), 2, "c-0", "c-1", "c-2")).
		WithStatusSubresource(pclq).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Pod); ok {
				creates.Add(1)
			}
			return c.Create(ctx, obj, opts...)
		},
		List: func(ctx context.Context, c client.WithWatch, list client.ObjectList, opts ...client.ListOption) error {
			if _, ok := list.(*corev1.PodList); ok && lagging {
				return nil
			}
			return c.List(ctx, list, opts...)
		},
		SubResourceUpdate: countStatusWrites(&statusWrites),
	}).Build()
	r := reconcilerFor(t, c)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pclq)}

	res, err := r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, int32(3), creates.Load(), "the first pass creates the three pods")
	assert.Equal(t, eventbatch.StatusPass(), res)

	res, err = r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, int32(3), creates.Load(), "a pass whose cache lags creates nothing again")
	assert.Zero(t, statusWrites, "nor writes a status without the pods")
	assert.Equal(t, eventbatch.StatusPass(), res, "it looks again later")

	lagging = false
	_, err = r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, int32(3), creates.Load())
	assert.Equal(t, 1, statusWrites, "once the cache shows them, the status is written with them")
}

// A pass that runs before the cache shows the deletion of a pod the previous pass deleted does
// not delete it again; once the cache shows a newer version of the pod, it is its own again.
func TestAPassBeforeTheCacheShowsADeletionDoesNotDeleteThePodAgain(t *testing.T) {
	pclq := gatedClique().Replicas(2, 2).Obj()
	podOf := func(i int) *corev1.Pod {
		return podBuilder("ns", "c", i, PodTemplateHash(pclq), true).Label(grovev1alpha1.LabelPodClique, "c").Label(grovev1alpha1.LabelPodGang, "g").
			ControlledBy(pclq, "PodClique").Obj()
	}
	var mu sync.Mutex
	var deletes []string
	// The API server takes every delete; the cache (the fake client, unchanged) does not show it.
	c := fakeClient(t).WithObjects(pclq, podGangOf(time.Now(), 2, "c-0", "c-1"), podOf(0), podOf(1), podOf(2)).
		WithStatusSubresource(pclq).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.DeleteOption) error {
			mu.Lock()
			defer mu.Unlock()
			deletes = append(deletes, obj.GetName())
			return nil
		},
	}).Build()
	r := reconcilerFor(t, c)
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pclq)}

	_, err := r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, []string{"c-2"}, deletes, "the pod beyond spec.replicas is deleted")

	_, err = r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, []string{"c-2"}, deletes, "a pass whose cache lags does not delete it again")

	surplus := &corev1.Pod{}
	require.NoError(t, c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "c-2"}, surplus))
	surplus.Labels["touched"] = "by another writer"
	require.NoError(t, c.Update(context.Background(), surplus))
	_, err = r.Reconcile(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, []string{"c-2", "c-2"}, deletes, "a newer version without a deletion is deleted again")
}
