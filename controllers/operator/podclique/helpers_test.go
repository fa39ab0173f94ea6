package podclique

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
)

// fakeClient is a fake client builder with the kinds a PodClique pass reads and writes and the
// indexes the manager's cache has.
func fakeClient(t *testing.T) *fake.ClientBuilder {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedulerv1alpha1.AddToScheme(scheme))
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, i := range fieldindex.All {
		b = b.WithIndex(i.Object, i.Field, i.Extract)
	}
	return b
}

// reconcilerFor is a Reconciler over c with the default scheduler backends. It reads pods as
// the manager's cache holds them (see slimPods).
func reconcilerFor(t *testing.T, c client.Client) *Reconciler {
	t.Helper()
	registry, err := backends.PodPreparers(configv1alpha1.SchedulerConfiguration{})
	require.NoError(t, err)
	return &Reconciler{Client: slimPods{c}, Recorder: events.NewFakeRecorder(10), Backends: registry}
}

// slimPods reads pods through SlimPod, the transform of the grove-operator's pod cache, which
// the fake client does not apply: a pass that needed a field the cache drops fails its test
// here instead of misbehaving only in a cluster (a dropped scheduling group once made every
// gated pod of a scaled gang look misgrouped and recreated).
type slimPods struct{ client.Client }

func (c slimPods) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := c.Client.Get(ctx, key, obj, opts...); err != nil {
		return err
	}
	if pod, ok := obj.(*corev1.Pod); ok {
		slim, err := SlimPod(pod)
		if err != nil {
			return err
		}
		*pod = *slim.(*corev1.Pod)
	}
	return nil
}

func (c slimPods) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if pods, ok := list.(*corev1.PodList); ok {
		for i := range pods.Items {
			slim, err := SlimPod(&pods.Items[i])
			if err != nil {
				return err
			}
			pods.Items[i] = *slim.(*corev1.Pod)
		}
	}
	return nil
}

// countStatusWrites passes status updates on to the client and counts them in n.
func countStatusWrites(n *int) func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		*n++
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}
}
