package podclique

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	podsCreated = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "grove_podclique_pods_created_total", Help: "Pods created by the PodClique reconciler.",
	})
	podsDeleted = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "grove_podclique_pods_deleted_total", Help: "Pods deleted by the PodClique reconciler.",
	})
)

func init() {
	metrics.Registry.MustRegister(podsCreated, podsDeleted)
}
