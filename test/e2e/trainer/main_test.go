// Package trainer runs the trainer-controller, the grove-operator and the kube-scheduler, volcano
// and scheduler-plugins backend-controllers as separate processes on the local cluster (with the
// real JobSet, Job and garbage-collector controllers, the coscheduling scheduler and kwok pods) and
// checks TrainJobs end to end: both workload paths, KEP-2899's deadline and TTL, suspend and
// resume, and a killed controller.
package trainere2e

import (
	"os"
	"testing"
	"time"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// binDir holds the project's binaries, built once per package run.
var binDir string

// trainer is the running trainer-controller; the crash test kills and replaces it.
var trainer *cluster.Process

// config enables the volcano and scheduler-plugins backends beside the default kube-scheduler, for
// TrainJobs whose runtime gang-schedules with Volcano or coscheduling on the PodCliqueSet path.
// kube-scheduler is in plain mode: these tests assert startup ordering by its gates, which hold
// dependents back from scheduling where kube-scheduler places pods one by one (in gang mode they
// are placed with their gang and held at start, test/e2e/compositegangs).
const config = `scheduler:
  profiles:
  - name: kube-scheduler
    default: true
  - name: volcano
  - name: scheduler-plugins
`

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	return cluster.MainWithBinaries(m, cluster.Options{Nodes: 4}, &binDir, func(c *cluster.Cluster) error {
		// Admission as deployed: every PodCliqueSet the trainer-controller builds is defaulted and
		// validated by grove-webhook, running as its ServiceAccount like the other three.
		if _, err := c.StartWebhook(binDir, config, time.Minute); err != nil {
			return err
		}
		if _, err := c.StartBinary(binDir, "grove-operator", "grove-operator", config); err != nil {
			return err
		}
		if _, err := c.StartBinary(binDir, "backend-controller", "backend-controller", config, "--backend=kube-scheduler"); err != nil {
			return err
		}
		// Volcano's CRDs are installed, its scheduler is not: gangs get their PodGroups, and
		// pods naming schedulerName volcano stay Pending.
		if _, err := c.StartBinary(binDir, "backend-controller", "backend-controller-volcano", config, "--backend=volcano"); err != nil {
			return err
		}
		// The real coscheduling scheduler places scheduler-plugins gangs (its default timeout).
		if _, err := c.StartBinary(binDir, "backend-controller", "backend-controller-plugins", config, "--backend=scheduler-plugins"); err != nil {
			return err
		}
		if err := c.StartCoscheduler(cluster.Coscheduling{SchedulerName: configv1alpha1.DefaultSchedulerPluginsSchedulerName, PermitWaitSeconds: 60}); err != nil {
			return err
		}
		var err error
		trainer, err = c.StartBinary(binDir, "trainer-controller", "trainer-controller", config)
		return err
	})
}
