package podgang

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

var (
	syncSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "grove_backend_sync_duration_seconds",
		Help:    "Time a scheduler backend takes to sync one PodGang into its scheduler's objects.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
	}, []string{"backend"})
	syncErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grove_backend_sync_errors_total", Help: "PodGang syncs that failed, per scheduler backend.",
	}, []string{"backend"})
	managedDesc = prometheus.NewDesc("grove_backend_objects_managed",
		"Scheduler objects a backend keeps for PodGangs, per kind, counted from the informer cache.", []string{"backend", "kind"}, nil)
)

// managed counts every registered backend's objects.
var managed = &managedObjects{}

func init() {
	metrics.Registry.MustRegister(syncSeconds, syncErrors, managed)
}

// managedObjects counts the backends' objects at scrape time from the caches their reconcilers
// already watch, so the figure needs no bookkeeping and survives restarts.
type managedObjects struct {
	mu      sync.Mutex
	sources []managedSource
}

type managedSource struct {
	backend string
	reader  client.Reader
	scheme  *runtime.Scheme
	types   []client.Object
}

func (m *managedObjects) add(s managedSource) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sources = append(m.sources, s)
}

func (m *managedObjects) Describe(ch chan<- *prometheus.Desc) { ch <- managedDesc }

func (m *managedObjects) Collect(ch chan<- prometheus.Metric) {
	m.mu.Lock()
	sources := append([]managedSource(nil), m.sources...)
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range sources {
		s.collect(ctx, ch)
	}
}

func (m managedSource) collect(ctx context.Context, ch chan<- prometheus.Metric) {
	for _, obj := range m.types {
		gvk, err := apiutil.GVKForObject(obj, m.scheme)
		if err != nil {
			continue
		}
		list, err := m.scheme.New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err != nil {
			continue
		}
		l := list.(client.ObjectList)
		if err := m.reader.List(ctx, l, client.HasLabels{grovev1alpha1.LabelPodGang}); err != nil {
			continue
		}
		n := meta.LenList(l)
		ch <- prometheus.MustNewConstMetric(managedDesc, prometheus.GaugeValue, float64(n), m.backend, gvk.Kind)
	}
}
