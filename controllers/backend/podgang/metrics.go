package podgang

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
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
		Name: "grove_backend_sync_errors_total", Help: "PodGang syncs that failed, per scheduler backend and the API's status reason (Other when it gave none).",
	}, []string{"backend", "reason"})
	acknowledgements = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grove_backend_acknowledgements_total",
		Help: "PodGang generations a scheduler backend acknowledged (SchedulerBackendReady=True), counted once the status write succeeded.",
	}, []string{"backend"})
	managedDesc = prometheus.NewDesc("grove_backend_objects_managed",
		"Scheduler objects a backend keeps for PodGangs, per kind, counted from the informer cache.", []string{"backend", "kind"}, nil)
)

// managed counts every registered backend's objects.
var managed = &managedObjects{}

func init() {
	metrics.Registry.MustRegister(syncSeconds, syncErrors, acknowledgements, managed)
}

// reasonOther is a sync error's reason when the API gave none of its own (a failed connection, a
// kind that is not served, the backend's own error).
const reasonOther = "Other"

// knownReasons are the API's status reasons, the values grove_backend_sync_errors_total's reason
// takes besides reasonOther: a bounded set whatever a scheduler's API server answers.
var knownReasons = map[metav1.StatusReason]bool{
	metav1.StatusReasonUnauthorized: true, metav1.StatusReasonForbidden: true, metav1.StatusReasonNotFound: true,
	metav1.StatusReasonAlreadyExists: true, metav1.StatusReasonConflict: true, metav1.StatusReasonGone: true,
	metav1.StatusReasonInvalid: true, metav1.StatusReasonServerTimeout: true, metav1.StatusReasonStoreReadError: true,
	metav1.StatusReasonTimeout: true, metav1.StatusReasonTooManyRequests: true, metav1.StatusReasonBadRequest: true,
	metav1.StatusReasonMethodNotAllowed: true, metav1.StatusReasonNotAcceptable: true, metav1.StatusReasonRequestEntityTooLarge: true,
	metav1.StatusReasonUnsupportedMediaType: true, metav1.StatusReasonInternalError: true, metav1.StatusReasonExpired: true,
	metav1.StatusReasonServiceUnavailable: true,
}

// syncErrorReason is the reason label of a failed sync: the API's status reason of the error (or
// of the error it wraps), else reasonOther.
func syncErrorReason(err error) string {
	if r := apierrors.ReasonForError(err); knownReasons[r] {
		return string(r)
	}
	return reasonOther
}

// acknowledges reports whether writing cond, the backend's SchedulerBackendReady, acknowledges
// the generation it names (ObservedGeneration) anew: it is True, and before (the conditions as
// the pass read them) held no True acknowledgement of that generation. A rewrite of a standing
// acknowledgement (another reason, new scheduling groups) is not counted again.
func acknowledges(before []metav1.Condition, cond metav1.Condition) bool {
	if cond.Status != metav1.ConditionTrue {
		return false
	}
	prev := meta.FindStatusCondition(before, cond.Type)
	return prev == nil || prev.Status != metav1.ConditionTrue || prev.ObservedGeneration != cond.ObservedGeneration
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
	// elected closes once this replica leads (nil: at once). Only the leader reports: a
	// standby's cache has no informers for these kinds, and two replicas reporting would double
	// every sum.
	elected <-chan struct{}
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
		if !s.leading() {
			continue
		}
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
			// The series is left out of this scrape; logged, so the gap is never silent.
			ctrllog.Log.WithName("podgang-metrics").Error(err, "listing scheduler objects from the cache for grove_backend_objects_managed failed: left out of this scrape", "backend", m.backend, "kind", gvk.Kind)
			continue
		}
		n := meta.LenList(l)
		ch <- prometheus.MustNewConstMetric(managedDesc, prometheus.GaugeValue, float64(n), m.backend, gvk.Kind)
	}
}

func (m managedSource) leading() bool {
	if m.elected == nil {
		return true
	}
	select {
	case <-m.elected:
		return true
	default:
		return false
	}
}
