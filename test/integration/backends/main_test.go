// Package backends runs the backend-controller's PodGang reconciler, with the KAI,
// scheduler-plugins and Volcano backends, against a real kube-apiserver with those schedulers'
// real CRDs:
// what the backends write is accepted by the schedulers' schemas, and edits by hand are repaired.
package backendsintegration

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/controllers/backend/fieldindex"
	"github.com/kubegrove/grove/controllers/backend/podgang"
	"github.com/kubegrove/grove/test/apiserver"
)

var env *apiserver.Env

// schedulerConfig enables KAI without a default queue, scheduler-plugins with a timeout and
// Volcano.
var schedulerConfig = configv1alpha1.SchedulerConfiguration{Profiles: []configv1alpha1.SchedulerProfile{
	{Name: configv1alpha1.SchedulerNameKAI},
	{Name: configv1alpha1.SchedulerNamePlugins, Config: &runtime.RawExtension{Raw: []byte(`{"scheduleTimeoutSeconds": 90}`)}},
	{Name: configv1alpha1.SchedulerNameVolcano},
}}

func TestMain(m *testing.M) {
	var err error
	if env, err = apiserver.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	code := 1
	if err = startBackends(ctx, configv1alpha1.SchedulerNameKAI, configv1alpha1.SchedulerNamePlugins, configv1alpha1.SchedulerNameVolcano); err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		code = m.Run()
	}
	cancel()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

// startBackends runs one manager per backend, as the backend-controller does per process.
func startBackends(ctx context.Context, names ...configv1alpha1.SchedulerName) error {
	for _, name := range names {
		mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Client.Scheme(), Metrics: metricsserver.Options{BindAddress: "0"}})
		if err != nil {
			return err
		}
		registry, err := backends.Syncers(schedulerConfig, mgr.GetClient())
		if err != nil {
			return err
		}
		b := registry.Get(name)
		if err := b.Init(ctx); err != nil {
			return err
		}
		_, keepsTopology := b.(backends.TopologySyncer)
		if err := fieldindex.Setup(ctx, mgr.GetFieldIndexer(), keepsTopology); err != nil {
			return err
		}
		if err := (&podgang.Reconciler{Client: mgr.GetClient(), Backend: b}).SetupWithManager(mgr, 2); err != nil {
			return err
		}
		go func() {
			if err := mgr.Start(ctx); err != nil {
				fmt.Fprintln(os.Stderr, "manager:", err)
			}
		}()
	}
	return nil
}

var nsCounter atomic.Int32

func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("backends-%d", nsCounter.Add(1))}}
	require.NoError(t, env.Client.Create(context.Background(), ns))
	return ns.Name
}
