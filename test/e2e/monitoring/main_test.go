// Package monitoring proves the shipped monitoring (deploy/components/monitoring) against the
// pinned Prometheus: it scrapes the four binaries on a local cluster, evaluates the shipped alerts
// and answers the shipped dashboard's queries while a scripted scenario makes each alert's cause
// happen, one after another.
package monitoring

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/kubegrove/grove/test/cluster"
)

var (
	binDir string
	// prom is the pinned Prometheus scraping the binaries every second, with every alert's `for`
	// at alertFor so each fires within seconds of its cause.
	prom *cluster.Prometheus
	// The processes the last scenarios stop.
	webhook, trainer *cluster.Process
	// trainerStatus is the trainer status server's loopback address.
	trainerStatus string
)

// alertFor is every alert's `for` here. It outlasts the missed scrapes of a loaded machine (each
// scrape has a second to answer): at 3 s, GroveWebhookDown fired before its scenario stopped the
// webhook, while two e2e clusters shared the 2 cores.
const alertFor = 10 * time.Second

// nodes is the cluster's size: two nodes of 8 GPUs, so a gang of three 8-GPU pods waits until a
// third node comes.
const nodes = 2

func TestMain(m *testing.M) {
	os.Exit(cluster.MainWithBinaries(m, cluster.Options{Nodes: nodes, SchedulerArgs: []string{"--pod-max-in-unschedulable-pods-duration=10s"}}, &binDir, func(c *cluster.Cluster) error {
		var err error
		if webhook, err = c.StartWebhook(binDir, cluster.GangSchedulerConfig, time.Minute); err != nil {
			return err
		}
		operator, err := c.StartBinary(binDir, "grove-operator", "grove-operator", cluster.GangSchedulerConfig)
		if err != nil {
			return err
		}
		backend, err := c.StartBinary(binDir, "backend-controller", "backend-controller", cluster.GangSchedulerConfig, "--backend=kube-scheduler")
		if err != nil {
			return err
		}
		if trainer, err = c.StartBinary(binDir, "trainer-controller", "trainer-controller", cluster.GangSchedulerConfig); err != nil {
			return err
		}
		trainerStatus = trainer.TrainerStatusHostPort
		prom, err = c.StartPrometheus(context.Background(), cluster.PrometheusOptions{
			Interval: time.Second,
			AlertFor: alertFor,
			// The job names the shipped ServiceMonitor gives the binaries.
			Targets: []cluster.PrometheusTarget{
				{Job: "grove-operator", MetricsURL: operator.MetricsURL},
				{Job: "grove-webhook", MetricsURL: webhook.MetricsURL},
				{Job: "backend-controller-kube-scheduler", MetricsURL: backend.MetricsURL},
				{Job: "trainer-controller", MetricsURL: trainer.MetricsURL},
			},
		})
		return err
	}))
}
