package podcliqueset

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/log"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
)

// fakeClient is a fake client builder over scheme with the indexes the manager's cache has (of
// the kinds scheme knows).
func fakeClient(scheme *runtime.Scheme) *fake.ClientBuilder {
	b := fake.NewClientBuilder().WithScheme(scheme)
	for _, i := range fieldindex.All {
		if _, _, err := scheme.ObjectKinds(i.Object); err == nil {
			b = b.WithIndex(i.Object, i.Field, i.Extract)
		}
	}
	return b
}

// fixture runs the Reconciler (default scheduler backends) over a fake client holding objs, and
// records its events, log lines and PodCliqueSet status writes.
type fixture struct {
	c            client.Client
	r            *Reconciler
	rec          *events.FakeRecorder
	mu           sync.Mutex // a pass logs from the goroutines that write its children side by side
	lines        []string
	statusWrites int
}

func newFixture(t *testing.T, objs ...client.Object) *fixture {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedulerv1alpha1.AddToScheme(scheme))
	f := &fixture{rec: events.NewFakeRecorder(20)}
	f.c = fakeClient(scheme).WithObjects(objs...).WithStatusSubresource(&grovev1alpha1.PodCliqueSet{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
			f.statusWrites++
			return c.SubResource(sub).Update(ctx, obj, opts...)
		}}).Build()
	registry, err := backends.PodPreparers(configv1alpha1.SchedulerConfiguration{})
	require.NoError(t, err)
	f.r = &Reconciler{Client: f.c, Recorder: f.rec, Backends: registry}
	return f
}

// reconcile runs one pass for PodCliqueSet ns/name, recording its log lines. (The PodCliqueSet's
// key is on every line controller-runtime's controller logs; test/e2e/operator asserts it on the
// running operator.)
func (f *fixture) reconcile(t *testing.T, name string) ctrl.Result {
	t.Helper()
	logger := funcr.New(func(_, args string) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.lines = append(f.lines, args)
	}, funcr.Options{})
	res, err := f.r.Reconcile(log.IntoContext(context.Background(), logger), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: name}})
	require.NoError(t, err)
	return res
}

// logged returns the first log line whose message starts with msg.
func (f *fixture) logged(msg string) string {
	for _, l := range f.lines {
		if strings.Contains(l, `"msg"="`+msg) {
			return l
		}
	}
	return ""
}

// warnings drains the recorded events and returns the Warning ones.
func (f *fixture) warnings() []string {
	var out []string
	for len(f.rec.Events) > 0 {
		if e := <-f.rec.Events; strings.HasPrefix(e, "Warning") {
			out = append(out, e)
		}
	}
	return out
}
