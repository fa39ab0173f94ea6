// Package chaos runs a mixed workload on the local cluster — inference PodCliqueSets with scaling
// groups, Training PodCliqueSets whose pods fail deterministically, TrainJobs on the JobSet and
// the PodCliqueSet path with deadlines and TTLs — while a seeded schedule injects faults: SIGKILL
// of every binary, killed leaders of two-replica controllers, kube-apiserver restarts, deleted
// and unready pods, removed nodes and an unavailable webhook. Invariants are checked all along
// and at the end, and a table of figures is printed.
//
// CHAOS_DURATION (a Go duration, default 2m here; `make test-chaos` passes 30m) is how long faults
// are injected; CHAOS_SEED (default: random, always printed) fixes the fault schedule.
package chaos

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubegrove/grove/test/cluster"
)

// binDir holds the project's binaries, built once per run.
var binDir string

// fleet is every project binary the run started, by replica.
var fleet *replicaSet

// Node pools: training and TrainJob pods live on the stable pool, so a removed node never turns
// into a training failure (which would make the expected outcome depend on timing); inference
// pods live on the chaos pool, whose nodes come and go.
const (
	labelPool   = "grove.test/pool"
	poolStable  = "stable"
	poolChaos   = "chaos"
	stableNodes = 3
	chaosNodes  = 3
)

func TestMain(m *testing.M) {
	os.Exit(runMain(m))
}

func runMain(m *testing.M) int {
	// The test's own controller-runtime clients have nothing to say; without a logger they print
	// a warning with a stack trace instead.
	ctrllog.SetLogger(logr.Discard())
	opts := cluster.Options{
		Nodes: stableNodes + chaosNodes, Node: poolNode,
		// The Coherent workload makes a new gang at every step of its updates. After an API server
		// restart or a node removal, kube-scheduler 1.37's gang mode was seen to mark such a gang's
		// pod group unschedulable (nodes had room) and leave its pods, ungated, until its periodic
		// retry of unschedulable pods: 5 minutes by default, past the run's convergence wait.
		// docs/coherent-updates.md advises clusters that roll gangs to shorten it, as the Coherent
		// e2e tier does.
		SchedulerArgs: []string{"--pod-max-in-unschedulable-pods-duration=10s"},
		ControllerManagerArgs: []string{
			// kwok renews node leases from one busy process; when API server restarts and a
			// loaded machine delay renewals past the default grace period, the node lifecycle
			// controller marks every pod of the node unready, and kwok (unlike a kubelet) never
			// reports them ready again. Removed nodes are the fault this run injects, not slow
			// heartbeats.
			"--node-monitor-grace-period=5m",
			// The controller-manager is not under test: with the default 10 s renew deadline it
			// exits during API server restarts, and a garbage collector started while the API
			// server flaps was seen to miss deletions for minutes, leaving children of deleted
			// owners behind. A long lease keeps it running through the restarts.
			"--leader-elect-lease-duration=2m", "--leader-elect-renew-deadline=100s",
		},
	}
	code := cluster.MainWithBinaries(m, opts, &binDir, func(c *cluster.Cluster) error {
		fleet = newReplicaSet(c)
		return fleet.startAll(context.Background())
	})
	// A failed run dumps every component's log before returning; the verdict is printed after
	// them so that the end of the output (what a CI excerpt keeps) names the seed and violations.
	if verdict != "" {
		fmt.Println("\n" + verdict)
	}
	return code
}

// verdict is the failed run's seed and violations, printed once more at the very end.
var verdict string

// poolNode puts the first nodes in the stable pool and the rest in the chaos pool.
func poolNode(i int) cluster.NodeSpec {
	spec := cluster.DefaultNode(i)
	spec.Labels[labelPool] = poolStable
	if i >= stableNodes {
		spec.Labels[labelPool] = poolChaos
	}
	return spec
}

// chaosNodeSpec is the spec of the named chaos-pool node, to add it back after its removal.
func chaosNodeSpec(name string) cluster.NodeSpec {
	for i := stableNodes; i < stableNodes+chaosNodes; i++ {
		if spec := poolNode(i); spec.Name == name {
			return spec
		}
	}
	panic("not a chaos-pool node: " + name)
}

// onPool pins a pod template to a node pool.
func onPool(spec *corev1.PodSpec, pool string) {
	spec.NodeSelector = map[string]string{labelPool: pool}
}

// settings are the run's knobs from the environment.
type settings struct {
	duration time.Duration
	seed     int64
}

func loadSettings() (settings, error) {
	s := settings{duration: 2 * time.Minute, seed: time.Now().UnixNano()}
	if v := os.Getenv("CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			return s, fmt.Errorf("CHAOS_DURATION=%q: %w", v, err)
		}
		s.duration = d
	}
	if v := os.Getenv("CHAOS_SEED"); v != "" {
		seed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return s, fmt.Errorf("CHAOS_SEED=%q: %w", v, err)
		}
		s.seed = seed
	}
	return s, nil
}
