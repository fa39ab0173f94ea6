// Package multikueue runs Kueue's MultiKueue across three local clusters in one test binary — a
// manager and the workers "worker-1" and "worker-2", each with Kueue (pod, TrainJob and JobSet
// integrations) and the project's four binaries — and checks that work queued on the manager is
// dispatched to a worker with room, runs there, reports back, and is cleaned up with it.
package multikueuee2e

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubegrove/grove/test/cluster"
)

// Cluster names: the workers' are their MultiKueueCluster names on the manager.
const (
	managerName = "manager"
	worker1Name = "worker-1"
	worker2Name = "worker-2"
)

// config turns the Kueue integration on for every binary; workerConfig adds the worker's name
// in the manager's MultiKueueClusters.
const config = `kueue:
  enabled: true
`

func workerConfig(name string) string {
	return config + "  multiKueue:\n    clusterName: " + name + "\n"
}

var binDir string

// manager and workers are the running clusters (set up by TestMain).
var (
	manager *cluster.Cluster
	workers map[string]*cluster.Cluster
)

// binaries are the project's running binaries by cluster and name; the crash test kills and
// replaces some of them.
var (
	binariesMu sync.Mutex
	binaries   = map[string]map[string]*cluster.Process{}
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctrllog.SetLogger(logr.Discard()) // envtest's CRD installs log through it
	options := func(multiKueue *cluster.MultiKueueManager) cluster.Options {
		return cluster.Options{
			Nodes:           2,
			Kueue:           true,
			KueueFrameworks: []string{cluster.KueueFrameworkJobSet},
			MultiKueue:      multiKueue,
		}
	}
	opts := map[string]cluster.Options{
		managerName: options(&cluster.MultiKueueManager{GCInterval: 5 * time.Second, WorkerLostTimeout: 30 * time.Second}),
		worker1Name: options(nil),
		worker2Name: options(nil),
	}
	return cluster.MainMulti(m, opts, &binDir, func(cs map[string]*cluster.Cluster) error {
		manager = cs[managerName]
		workers = map[string]*cluster.Cluster{worker1Name: cs[worker1Name], worker2Name: cs[worker2Name]}
		began := time.Now()
		var wg sync.WaitGroup
		errs := make(chan error, len(cs))
		for name, c := range cs {
			cfg := config
			if name != managerName {
				cfg = workerConfig(name)
			}
			wg.Go(func() {
				if err := startBinaries(name, c, cfg); err != nil {
					errs <- fmt.Errorf("%s: %w", name, err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			return err
		}
		fmt.Printf("the project's binaries ready on %d clusters in %s\n", len(cs), time.Since(began).Round(time.Millisecond))
		began = time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := manager.ConnectWorkers(ctx, workers); err != nil {
			return err
		}
		fmt.Printf("MultiKueue connected %d workers in %s\n", len(workers), time.Since(began).Round(time.Millisecond))
		return nil
	})
}

// startBinaries runs the grove-webhook, grove-operator, kube-scheduler backend-controller and
// trainer-controller on c, as test/e2e/kueue does.
func startBinaries(name string, c *cluster.Cluster, cfg string) error {
	if _, err := c.StartWebhook(binDir, cfg, 2*time.Minute); err != nil {
		return err
	}
	var procs []*cluster.Process
	for _, b := range []struct{ name, arg string }{
		{"grove-operator", ""}, {"backend-controller", "--backend=kube-scheduler"}, {"trainer-controller", ""},
	} {
		var args []string
		if b.arg != "" {
			args = append(args, b.arg)
		}
		p, err := c.StartBinary(binDir, b.name, b.name, cfg, args...)
		if err != nil {
			return err
		}
		procs = append(procs, p)
		binariesMu.Lock()
		if binaries[name] == nil {
			binaries[name] = map[string]*cluster.Process{}
		}
		binaries[name][b.name] = p
		binariesMu.Unlock()
	}
	for _, p := range procs {
		if err := p.WaitReady(2 * time.Minute); err != nil {
			return err
		}
	}
	return nil
}
