package trainjob

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

var (
	finishedJobs = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grove_trainjobs_finished_total",
		Help: "TrainJobs this controller moved to Complete or Failed, by condition and reason.",
	}, []string{"condition", "reason"})
	ttlDeletions = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "grove_trainjob_ttl_deletions_total",
		Help: "Finished TrainJobs deleted because their runtime's ttlSecondsAfterFinished expired.",
	})
	phaseTransitions = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "grove_trainjob_phase_transitions_total",
		Help: "TrainJob phase changes this controller wrote, by the phase reached.",
	}, []string{"phase"})
	// From seconds (a job that fails at once: its runtime is unsupported) to days.
	timeToFinish = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "grove_trainjob_time_to_finish_seconds",
		Help:    "Time from a TrainJob's creation to its Complete or Failed condition, as this controller wrote it.",
		Buckets: prometheus.ExponentialBuckets(1, 4, 10),
	}, []string{"condition"})
	trainJobsDesc = prometheus.NewDesc("grove_trainjobs",
		"TrainJobs this controller manages, per namespace and phase (Pending, Running, Suspended, Complete, Failed), counted from the informer cache.",
		[]string{"namespace", "phase"}, nil)
)

// jobs counts the TrainJobs in the trainer-controller's cache at scrape time.
var jobs = &trainJobCounter{}

func init() {
	metrics.Registry.MustRegister(finishedJobs, ttlDeletions, phaseTransitions, timeToFinish, jobs)
	// Both conditions' series exist from the start, at zero: a series born with its first
	// observation shows no rate for it, so a dashboard would miss the first finished job.
	for _, c := range []string{trainerv1alpha1.TrainJobComplete, trainerv1alpha1.TrainJobFailed} {
		timeToFinish.WithLabelValues(c)
	}
}

// A TrainJob's phases, one word for its conditions as `kubectl grove status` names them.
const (
	phasePending   = "Pending"
	phaseRunning   = trainerv1alpha1.TrainJobRunning
	phaseSuspended = trainerv1alpha1.TrainJobSuspended
	phaseComplete  = trainerv1alpha1.TrainJobComplete
	phaseFailed    = trainerv1alpha1.TrainJobFailed
)

// phases are every phase, in the order the conditions decide them.
var phases = []string{phaseComplete, phaseFailed, phaseSuspended, phaseRunning, phasePending}

// phaseOf is a TrainJob's phase from its conditions: the first of Complete, Failed, Suspended and
// Running that is True, else Pending (not started: its runtime is missing, its workload's name is
// taken, or this controller has not seen it yet).
func phaseOf(conditions []metav1.Condition) string {
	for _, p := range phases[:len(phases)-1] {
		if meta.IsStatusConditionTrue(conditions, p) {
			return p
		}
	}
	return phasePending
}

// passSeries is what one pass's status write records for the metrics.
type passSeries struct {
	// phase is the phase the write moved the TrainJob into; empty when it stays.
	phase string
	// finished is the Complete or Failed condition the write set, empty when none; toFinish is
	// the time from the TrainJob's creation to it.
	finished string
	toFinish time.Duration
}

// seriesOf is what the status write of decision d, made for tj as the pass read it, records: a
// phase change and, for a finish, the time from creation to it (by the pass's clock, as the
// condition's transition time; never negative when the clocks disagree).
func seriesOf(tj *trainerv1alpha1.TrainJob, d decision) passSeries {
	var s passSeries
	if from, to := phaseOf(tj.Status.Conditions), phaseOf(d.status.Conditions); from != to {
		s.phase = to
	}
	if d.finish != nil {
		s.finished = d.finish.Type
		s.toFinish = max(d.now.Sub(tj.CreationTimestamp.Time), 0)
	}
	return s
}

// record adds the pass's series, once its status write succeeded.
func (s passSeries) record() {
	if s.phase != "" {
		phaseTransitions.WithLabelValues(s.phase).Inc()
	}
	if s.finished != "" {
		timeToFinish.WithLabelValues(s.finished).Observe(s.toFinish.Seconds())
	}
}

// trainJobCounter counts TrainJobs by namespace and phase at scrape time from the cache the
// reconciler already watches, so the figure needs no bookkeeping and is right again once a
// restarted binary has synced. Only the leader reports: every replica's cache holds every
// TrainJob, so a sum over replicas would count each job once per replica, and a replica that
// does not lead would start a TrainJob informer just to be scraped.
type trainJobCounter struct {
	mu      sync.Mutex
	reader  client.Reader
	elected <-chan struct{}
}

// set makes the counter read r once elected is closed (nil: at once).
func (c *trainJobCounter) set(r client.Reader, elected <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader, c.elected = r, elected
}

func (c *trainJobCounter) Describe(ch chan<- *prometheus.Desc) { ch <- trainJobsDesc }

func (c *trainJobCounter) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	r, elected := c.reader, c.elected
	c.mu.Unlock()
	if r == nil {
		return
	}
	if elected != nil {
		select {
		case <-elected:
		default:
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &trainerv1alpha1.TrainJobList{}
	if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		// The gauge is left out of this scrape; logged, so the gap is never silent.
		ctrllog.Log.WithName("trainjob-metrics").Error(err, "listing TrainJobs from the cache for grove_trainjobs failed: left out of this scrape")
		return
	}
	for _, s := range countTrainJobs(list.Items) {
		ch <- prometheus.MustNewConstMetric(trainJobsDesc, prometheus.GaugeValue, float64(s.count), s.namespace, s.phase)
	}
}

// jobCount is one series of grove_trainjobs.
type jobCount struct {
	namespace, phase string
	count            int
}

// countTrainJobs counts the TrainJobs this controller manages by namespace and phase. Every
// phase of a namespace with any such TrainJob is reported, zero included, so a phase that empties
// reads 0 rather than disappearing; a namespace without one has no series.
func countTrainJobs(items []trainerv1alpha1.TrainJob) []jobCount {
	counts := map[string]map[string]int{}
	for i := range items {
		tj := &items[i]
		if !managedByUs(tj) {
			continue
		}
		if counts[tj.Namespace] == nil {
			counts[tj.Namespace] = map[string]int{}
		}
		counts[tj.Namespace][phaseOf(tj.Status.Conditions)]++
	}
	namespaces := make([]string, 0, len(counts))
	for ns := range counts {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	out := make([]jobCount, 0, len(namespaces)*len(phases))
	for _, ns := range namespaces {
		for _, p := range phases {
			out = append(out, jobCount{namespace: ns, phase: p, count: counts[ns][p]})
		}
	}
	return out
}
