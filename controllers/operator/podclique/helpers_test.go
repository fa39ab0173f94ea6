package podclique

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
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
	for _, i := range indexes {
		b = b.WithIndex(i.obj, i.field, i.extract)
	}
	return b
}

// reconcilerFor is a Reconciler over c with the default scheduler backends.
func reconcilerFor(t *testing.T, c client.Client) *Reconciler {
	t.Helper()
	registry, err := backends.NewRegistry(configv1alpha1.SchedulerConfiguration{}, nil)
	require.NoError(t, err)
	return &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10), Backends: registry}
}

// countStatusWrites passes status updates on to the client and counts them in n.
func countStatusWrites(n *int) func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	return func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
		*n++
		return c.SubResource(sub).Update(ctx, obj, opts...)
	}
}
