// Package statemetrics exports the grove-operator's gauges of what is true now (docs/metrics.md):
// gangs waiting for placement and for how long, pods held back and by what, PodCliqueSets by
// phase, and the updates under way. They are computed at scrape time from the manager's informer
// cache, so they need no bookkeeping, cannot drift from the objects, and are right again the
// moment a restarted operator has synced. Deciding the series is pure (series.go); the Collector
// only lists and emits. It reads and never writes, so it makes no decision that changes the
// cluster and logs none; a list that fails is logged, since its gauges then miss a scrape.
package statemetrics

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
)

var (
	unscheduledDesc = prometheus.NewDesc("grove_podgangs_unscheduled",
		"PodGangs not Scheduled now, by the reason they wait (PodsPending, Unschedulable, SchedulingGated, WaitingForPlacement, QueuePending, Other).",
		[]string{"namespace", "backend", "reason"}, nil)
	longestDesc = prometheus.NewDesc("grove_podgangs_unscheduled_longest_seconds",
		"The longest wait for placement of the PodGangs in that state: since creation, or since Scheduled last left True for a gang placed before.",
		[]string{"namespace", "backend", "reason"}, nil)
	gatedDesc = prometheus.NewDesc("grove_pods_gated",
		"The operator's pods held back now, by what holds them (GangNotCreated, BackendNotReady, BaseGangNotScheduled, ParentClique, QueueAdmission, Topology, Other).",
		[]string{"namespace", "reason"}, nil)
	podCliqueSetsDesc = prometheus.NewDesc("grove_podcliquesets",
		"PodCliqueSets by workload type and status.phase.",
		[]string{"namespace", "workload_type", "phase"}, nil)
	replicasUpdatingDesc = prometheus.NewDesc("grove_podcliqueset_replicas_updating",
		"PodCliqueSet replicas and scaling-group replicas being replaced by an update now.",
		[]string{"namespace"}, nil)
	updatesInProgressDesc = prometheus.NewDesc("grove_podcliqueset_updates_in_progress",
		"PodCliqueSets whose UpdateInProgress is True or, past the progress deadline, Unknown, by update strategy.",
		[]string{"namespace", "strategy"}, nil)
	updatesStalledDesc = prometheus.NewDesc("grove_podcliqueset_updates_stalled",
		"PodCliqueSets whose UpdateInProgress reason is ProgressDeadlineExceeded.",
		[]string{"namespace"}, nil)
)

// listTimeout bounds a scrape's wait for the cache: a cache still syncing (just elected) leaves
// the families it cannot list out of that scrape rather than hold the scrape past its timeout.
const listTimeout = 5 * time.Second

// Collector computes the operator's gauges of what is true now at each scrape.
type Collector struct {
	// Reader lists the objects; the manager's informer cache. A scrape never reaches the API
	// server: listing every pod every 15 seconds would cost it more than the metrics are worth.
	Reader client.Reader
	// Clock tells how long gangs have waited.
	Clock clock.PassiveClock
	// Elected closes once this replica leads (ctrl.Manager.Elected); nil: always. Only the leader
	// reports: its reconcilers are the ones whose watches fill the cache (a standby replica would
	// start informers of every pod just to be scraped), and a sum over replicas would count every
	// object once per replica.
	Elected <-chan struct{}
}

// Setup registers the operator's Collector, reading the manager's cache, with
// controller-runtime's registry.
func Setup(mgr ctrl.Manager) error {
	return metrics.Registry.Register(&Collector{Reader: mgr.GetCache(), Clock: clock.RealClock{}, Elected: mgr.Elected()})
}

// Describe sends the descriptors of every gauge.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{unscheduledDesc, longestDesc, gatedDesc, podCliqueSetsDesc, replicasUpdatingDesc, updatesInProgressDesc, updatesStalledDesc} {
		ch <- d
	}
}

// Collect lists the objects from the cache and sends the series; a family whose objects cannot
// be listed is left out of this scrape.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if !c.leading() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	now := c.Clock.Now()
	// A failed list leaves its gauges out of this scrape (an alert on them then resolves): it is
	// logged, so the gap is never silent.
	list := func(obj client.ObjectList, opts ...client.ListOption) error {
		err := c.Reader.List(ctx, obj, opts...)
		if err != nil {
			ctrllog.Log.WithName("statemetrics").Error(err, "listing from the cache for the metrics failed: the gauges that need it are left out of this scrape", "list", fmt.Sprintf("%T", obj))
		}
		return err
	}

	gangList := &schedulerv1alpha1.PodGangList{}
	gangsErr := list(gangList, client.UnsafeDisableDeepCopy)
	gangs := pointers(gangList.Items)
	if gangsErr == nil {
		for k, w := range unscheduledGangs(gangs, now) {
			ch <- prometheus.MustNewConstMetric(unscheduledDesc, prometheus.GaugeValue, float64(w.count), k.namespace, k.backend, k.reason)
			ch <- prometheus.MustNewConstMetric(longestDesc, prometheus.GaugeValue, max(w.longest, 0).Seconds(), k.namespace, k.backend, k.reason)
		}
	}

	groupList := &grovev1alpha1.PodCliqueScalingGroupList{}
	groupsErr := list(groupList, client.UnsafeDisableDeepCopy)
	groups := pointers(groupList.Items)

	pods, cliques, maps := &corev1.PodList{}, &grovev1alpha1.PodCliqueList{}, &grovev1alpha1.PodGangMapList{}
	if gangsErr == nil && groupsErr == nil &&
		// Only the pods something may hold: a list of every pod would copy each (20,000 pods: 25 MB
		// a scrape).
		list(pods, client.MatchingFields{fieldindex.HeldPods: "true"}, client.UnsafeDisableDeepCopy) == nil &&
		list(cliques, client.UnsafeDisableDeepCopy) == nil &&
		list(maps, client.UnsafeDisableDeepCopy) == nil {
		v := newView(pointers(cliques.Items), gangs, groups, pointers(maps.Items))
		for k, n := range gatedPods(pointers(pods.Items), v) {
			ch <- prometheus.MustNewConstMetric(gatedDesc, prometheus.GaugeValue, float64(n), k.namespace, k.reason)
		}
	}

	pcsList := &grovev1alpha1.PodCliqueSetList{}
	if groupsErr == nil && list(pcsList, client.UnsafeDisableDeepCopy) == nil {
		s := workloads(pointers(pcsList.Items), groups)
		for k, n := range s.phases {
			ch <- prometheus.MustNewConstMetric(podCliqueSetsDesc, prometheus.GaugeValue, float64(n), k.namespace, k.workloadType, k.phase)
		}
		for ns, n := range s.replicasUpdating {
			ch <- prometheus.MustNewConstMetric(replicasUpdatingDesc, prometheus.GaugeValue, float64(n), ns)
		}
		for k, n := range s.inProgress {
			ch <- prometheus.MustNewConstMetric(updatesInProgressDesc, prometheus.GaugeValue, float64(n), k.namespace, k.strategy)
		}
		for ns, n := range s.stalled {
			ch <- prometheus.MustNewConstMetric(updatesStalledDesc, prometheus.GaugeValue, float64(n), ns)
		}
	}
}

func (c *Collector) leading() bool {
	if c.Elected == nil {
		return true
	}
	select {
	case <-c.Elected:
		return true
	default:
		return false
	}
}

// pointers points at each item of a list, read-only: the items may be the cache's own.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
