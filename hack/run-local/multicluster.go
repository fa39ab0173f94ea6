package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
)

// The clusters of make run-local MULTICLUSTER=1: the workers' names are their MultiKueueCluster
// names on the manager.
var (
	managerCluster = "manager"
	workerClusters = []string{"worker-1", "worker-2"}
)

// multiclusterQueue is the namespace and the queue the multi-cluster sample is queued in: the
// manager's ClusterQueue has MultiKueue's admission check; worker-1's is too small for the
// sample, worker-2's has room (docs/kueue.md, Multi-cluster).
const multiclusterQueue = "default"

// runMulticluster starts a manager and two worker clusters, each with Kueue and the four
// binaries, connects the workers to the manager's MultiKueue, queues a Training PodCliqueSet on
// the manager and shows it run on worker-2 and succeed on the manager.
func runMulticluster(ctx context.Context, nodes int, dir string, runFor, samplesTimeout time.Duration) error {
	root, crdDirs, dir, err := prepare(dir)
	if err != nil {
		return err
	}
	fmt.Println("starting three local clusters (a MultiKueue manager and two workers) ...")
	names := append([]string{managerCluster}, workerClusters...)
	clusters := map[string]*cluster.Cluster{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		opts := cluster.Options{Nodes: nodes, Dir: filepath.Join(dir, name), KeepDir: true, CRDDirs: crdDirs, Scheme: apiserver.Scheme(), Kueue: true,
			KueueFrameworks: []string{cluster.KueueFrameworkJobSet}, CallerStopsOnInterrupt: true}
		if name == managerCluster {
			opts.MultiKueue = &cluster.MultiKueueManager{}
		}
		wg.Go(func() {
			c, err := cluster.Start(ctx, opts)
			if err != nil {
				errs[i] = fmt.Errorf("cluster %s: %w", name, err)
				return
			}
			mu.Lock()
			clusters[name] = c
			mu.Unlock()
		})
	}
	wg.Wait()
	defer func() {
		for _, c := range clusters {
			c.Stop()
		}
	}()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var binaries []*exec.Cmd
	defer func() {
		for _, b := range binaries {
			_ = b.Process.Signal(syscall.SIGTERM)
			_ = b.Wait()
		}
	}()
	for _, name := range names {
		if err := clusters[name].Client().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
		extra := ""
		if name != managerCluster {
			extra = "  multiKueue:\n    clusterName: " + name + "\n"
		}
		fmt.Printf("cluster %s:\n", name)
		started, _, err := startBinariesWith(ctx, clusters[name], root, filepath.Join(dir, name), true, true, extra)
		binaries = append(binaries, started...)
		if err != nil {
			return fmt.Errorf("cluster %s: %w", name, err)
		}
	}
	manager := clusters[managerCluster]
	workers := map[string]*cluster.Cluster{}
	for _, w := range workerClusters {
		workers[w] = clusters[w]
	}
	connectCtx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	err = manager.ConnectWorkers(connectCtx, workers)
	cancel()
	if err != nil {
		return err
	}
	fmt.Println("MultiKueue on the manager reaches worker-1 and worker-2 (MultiKueueClusters Active)")
	cpus := func(n int64) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: *resource.NewQuantity(n, resource.DecimalSI)}
	}
	if err := manager.CreateMultiKueueQueues(ctx, workers, cluster.MultiKueueQueues{Namespace: multiclusterQueue, Name: "team-a", Manager: cpus(16),
		Workers: map[string]corev1.ResourceList{"worker-1": cpus(1), "worker-2": cpus(8)}}); err != nil {
		return err
	}
	fmt.Println("queue default/team-a on every cluster: the manager's with MultiKueue's admission check; 1 CPU on worker-1, 8 on worker-2")

	sampleCtx, cancel := context.WithTimeout(ctx, samplesTimeout)
	defer cancel()
	sample := manifests{file: filepath.Join(root, "hack", "run-local", "multicluster.yaml")}
	if err := sample.apply(sampleCtx, manager.Client()); err != nil {
		return fmt.Errorf("applying multicluster.yaml on the manager: %w", err)
	}
	if err := showPhase(sampleCtx, manager, multiclusterQueue, "dispatched", grovev1alpha1.PodCliqueSetPhaseSucceeded); err != nil {
		return fmt.Errorf("sample multicluster.yaml did not reach its final state on the manager within %s: %w", samplesTimeout, err)
	}
	plugin := filepath.Join(root, "bin", "kubectl-grove")
	fmt.Printf("\nkubectl grove status pcs/dispatched, on the manager:\n")
	status := exec.CommandContext(ctx, plugin, "--kubeconfig", manager.AdminKubeconfig(), "status", "pcs/dispatched")
	status.Stdout, status.Stderr = os.Stdout, os.Stderr
	if err := status.Run(); err != nil {
		return fmt.Errorf("kubectl grove status pcs/dispatched: %w", err)
	}
	fmt.Printf(`
Three local clusters are running; each one's logs are in %s/<cluster>.
  manager:  export KUBECONFIG=%s
  worker-1: export KUBECONFIG=%s
  worker-2: export KUBECONFIG=%s
Queue Training work on the manager (label kueue.x-k8s.io/queue-name: team-a, namespace default)
and watch where it runs:
  %s status pcs/dispatched                          (on the manager: which worker ran it)
  kubectl get workloads.kueue.x-k8s.io -o wide      (on the manager: status.clusterName)
  kubectl get multikueueclusters                    (on the manager: is each worker reachable)
  kubectl get pcs,pg,pods                           (on a worker: the copies MultiKueue made)
`, dir, manager.AdminKubeconfig(), workers["worker-1"].AdminKubeconfig(), workers["worker-2"].AdminKubeconfig(), plugin)
	runUntilStopped(ctx, runFor)
	return nil
}
