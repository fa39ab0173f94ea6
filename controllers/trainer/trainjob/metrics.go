package trainjob

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
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
)

func init() {
	metrics.Registry.MustRegister(finishedJobs, ttlDeletions)
}
