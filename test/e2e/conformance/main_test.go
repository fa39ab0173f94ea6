// Package conformance ports upstream Grove's own e2e cases (github.com/ai-dynamo/grove,
// operator/e2e/tests at fcc3b3bb) to the local cluster: each test is named after upstream's case,
// deploys upstream's workload shape and makes upstream's assertions; where the cluster forces an
// adaptation, the test says so in one comment. docs/upstream-compatibility.md maps every case.
// Upstream runs its suite under KAI, a gang scheduler: here kube-scheduler places every PodGang as
// a hierarchical gang (gang mode, CompositePodGroup), each pod group keeping its own minimum; the
// cases whose gangs are placed at their minimum first (workload2's) and those that scale a clique
// mid-update (RU-18, RU-20) run under scheduler-plugins' coscheduling scheduler.
package conformance

import (
	"os"
	"strconv"
	"testing"

	"github.com/kubegrove/grove/test/cluster"
)

// coscheduler is the scheduler-plugins scheduler's name, and the scheduler-plugins profile's;
// permitWaitSeconds is how long it holds a gang's placed pods for the rest (the profile's
// scheduleTimeoutSeconds too); podGroupBackoffSeconds keeps a gang that did not fit out of the way
// of younger gangs' pods for longer than a pod's own back-off (10 s): upstream's cases make gangs
// compete for the last free nodes (GS-12 saw an older partial gang take the one freed node on
// every retry for 5 minutes without it).
const (
	coscheduler            = "scheduler-plugins-scheduler"
	permitWaitSeconds      = 30
	podGroupBackoffSeconds = 15
)

// schedulerConfig enables kube-scheduler in gang mode (the default) and scheduler-plugins.
var schedulerConfig = "scheduler:\n  profiles:\n" + cluster.GangSchedulerProfile + `  - name: scheduler-plugins
    config: {schedulerName: ` + coscheduler + `, scheduleTimeoutSeconds: ` + strconv.Itoa(permitWaitSeconds) + `}
`

var binDir string

func TestMain(m *testing.M) {
	os.Exit(cluster.MainWithBinaries(m, cluster.Options{Nodes: 4}, &binDir, func(c *cluster.Cluster) error {
		if _, err := c.StartBinary(binDir, "grove-operator", "grove-operator", schedulerConfig); err != nil {
			return err
		}
		if _, err := c.StartBinary(binDir, "backend-controller", "backend-controller", schedulerConfig, "--backend=kube-scheduler"); err != nil {
			return err
		}
		if _, err := c.StartBinaryAs(binDir, "backend-controller", "backend-controller-plugins", "backend-controller-plugins", schedulerConfig, "--backend=scheduler-plugins"); err != nil {
			return err
		}
		return c.StartCoscheduler(cluster.Coscheduling{SchedulerName: coscheduler, PermitWaitSeconds: permitWaitSeconds, PodGroupBackoffSeconds: podGroupBackoffSeconds})
	}))
}
