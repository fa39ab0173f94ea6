// Command bench measures the operators on the local cluster (kwok nodes) against the work the
// API server must do anyway: each scenario's times are reported as ratios to a baseline measured
// in the same run by a plain client with the operators' QPS and burst (these machines are noisy,
// so seconds mean little). It prints a table and writes a JSON file later runs can be compared
// with. `make bench` runs the full scenarios; `make bench-smoke` (part of `make test`) runs tiny
// ones so the harness cannot rot.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
)

// sizes are the knobs of one run.
type sizes struct {
	Nodes          int
	S1Workers      int32
	S2Sets, S2Pods int
	S3From, S3To   int32
	// S3Rounds is how often the scale-out runs, each against its own baseline: it lasts a few
	// seconds, where the machine's noise moves a single ratio by ±30%, so the target is checked
	// on the median round.
	S3Rounds       int
	S4Jobs, S4Pods int
	S4ExitAfter    string
	// S6Sets PodCliqueSets of S6Pods pods go through Kueue and without it.
	S6Sets, S6Pods int
	Rest           time.Duration
	// MemoryPods are the managed pods the memory step fills the cluster to, in turn.
	MemoryPods []int
	// PeerGroups groups of PeerGroupSize pods are the peers' many-small-groups shape; their
	// one-workload shape has S1Workers+1 pods.
	PeerGroups, PeerGroupSize int
	// Rollout is the workload the rollout family updates through Coherent, RollingRecreate and
	// LeaderWorkerSet.
	Rollout rolloutShape
	// RolloutRounds is how often each contender's workload is updated (its time is the median
	// round's, its lowest capacity the lowest of all). From the second round on, the update starts
	// from the gangs an earlier update left (under Coherent, one anchor per step).
	RolloutRounds int
	// RolloutGroups is the rollout family's second workload: groups only (issue 38: 100 groups of
	// 10 pods, one unavailable at a time), rolled RolloutGroupRounds times per contender (the
	// median round counts) and held to LeaderWorkerSet's time and writes.
	RolloutGroups      rolloutShape
	RolloutGroupRounds int
	// Recovery is the recovery family's gang, made RecoveryRounds times for each rival and
	// failed and recovered once each time; Placement the placement family's gang.
	Recovery, RecoveryRounds, Placement int
	// ScaleGroups groups of ScaleSize pods are doubled by the scale-out family, made ScaleRounds
	// times for each rival (the median round counts).
	ScaleGroups, ScaleSize, ScaleRounds int
	// OverlapDeletions lets each peer namespace's deletion run while the next contender runs
	// (smoke: the harness, not the numbers).
	OverlapDeletions bool
	EnforceTargets   bool
	// Only limits the run to these scenarios (peers, rollout, recovery, scale-out, placement, s1, s1-gang, s2…s6, memory); empty runs all. For iterating on
	// one figure: targets of scenarios not run are not checked.
	Only map[string]bool
	// HeapProfiles, when set, is a directory for the grove-operator's heap profile at each
	// managed-pod level of the memory step (its profiling endpoint is on only then).
	HeapProfiles string
}

var full = sizes{Nodes: 20, S1Workers: 999, S2Sets: 200, S2Pods: 5, S3From: 50, S3To: 100, S3Rounds: 5, S4Jobs: 50, S4Pods: 8,
	S4ExitAfter: "10s", S6Sets: 100, S6Pods: 8, Rest: 60 * time.Second, MemoryPods: []int{10000, 20000}, EnforceTargets: true,
	PeerGroups: 100, PeerGroupSize: 10, Rollout: rolloutShape{Frontend: 4, Prefill: 6, Decode: 4, Workers: 4}, RolloutRounds: 3,
	Recovery: 1000, RecoveryRounds: 3, Placement: 1000, ScaleGroups: 100, ScaleSize: 10, ScaleRounds: 3, RolloutGroups: rolloutShape{Prefill: 100, Workers: 9}, RolloutGroupRounds: 3}

var smoke = sizes{Nodes: 4, S1Workers: 49, S2Sets: 10, S2Pods: 5, S3From: 3, S3To: 6, S3Rounds: 1, S4Jobs: 3, S4Pods: 2,
	S4ExitAfter: "2s", S6Sets: 3, S6Pods: 2, Rest: 10 * time.Second, PeerGroups: 5, PeerGroupSize: 2,
	Rollout: rolloutShape{Frontend: 2, Prefill: 2, Decode: 2, Workers: 1}, RolloutRounds: 2, OverlapDeletions: true,
	Recovery: 20, RecoveryRounds: 2, Placement: 20, ScaleGroups: 3, ScaleSize: 2, ScaleRounds: 2, RolloutGroups: rolloutShape{Prefill: 3, Workers: 1}, RolloutGroupRounds: 2}

func main() {
	smokeRun := flag.Bool("smoke", false, "tiny scenarios: check the harness, not the numbers")
	out := flag.String("out", "bench/results", "directory for the JSON result")
	keep := flag.Bool("keep", false, "keep the cluster's logs")
	only := flag.String("only", "", "comma-separated scenarios to run (peers,rollout,recovery,scale-out,placement,s1,s1-gang,s2,s3,s4,s5,s6,memory); empty: all")
	heapProfiles := flag.String("heap-profiles", "", "directory for the grove-operator's heap profile at each memory level (turns its profiling endpoint on)")
	flag.Parse()
	// The bench's client logs nothing of its own: the report is its output. Without a logger,
	// controller-runtime prints a stack on the first webhook warning it is handed.
	ctrllog.SetLogger(logr.Discard())
	sz := full
	if *smokeRun {
		sz = smoke
	}
	sz.HeapProfiles = *heapProfiles
	if *only != "" {
		sz.Only = map[string]bool{}
		for _, id := range strings.Split(*only, ",") {
			sz.Only[strings.TrimSpace(id)] = true
		}
	}
	report, err := run(context.Background(), sz, *keep)
	if report != nil {
		report.print(os.Stdout)
		if werr := report.save(*out); werr != nil {
			fmt.Fprintln(os.Stderr, werr)
			os.Exit(1)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	if sz.EnforceTargets && report.Missed > 0 {
		fmt.Fprintf(os.Stderr, "bench: %d target(s) missed\n", report.Missed)
		os.Exit(1)
	}
}

func (r *Report) save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	path := filepath.Join(dir, r.Started.UTC().Format("2006-01-02T15-04-05")+"-"+r.Mode+".json")
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return err
	}
	fmt.Println("results:", path)
	return nil
}

func run(ctx context.Context, sz sizes, keep bool) (*Report, error) {
	mode := "full"
	if !sz.EnforceTargets {
		mode = "smoke"
	}
	r := &Report{Mode: mode, Started: time.Now()}
	binDir, err := cluster.BuildBinaries()
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(binDir)
	crds, err := apiserver.CRDDirs()
	if err != nil {
		return nil, err
	}
	c, err := cluster.Start(ctx, cluster.Options{Nodes: sz.Nodes, Node: benchNode, CRDDirs: crds, Scheme: apiserver.Scheme(), KeepDir: keep,
		JobSetQPS: qps, JobSetBurst: burst,
		// A kubelet per node reports its pods in parallel: so does kwok, as many at once as nodes.
		KwokPodParallelism: sz.Nodes,
		// The shipped lease timings: with the tests' short ones, an API server loaded by 10,000
		// pods on two cores made the grove-operator miss a renewal and exit mid-run.
		LeaderElectionTimings: "leaseDuration: 15s, renewDeadline: 10s, retryPeriod: 2s",
		// Every controller gets the same client limits: the Job controller (JobSet's peer), the
		// garbage collector and the scheduler (at its default 50 QPS it paced every contender's
		// Running time alike: one binding and one event per pod).
		ControllerManagerArgs: []string{"--kube-api-qps", fmt.Sprint(qps), "--kube-api-burst", fmt.Sprint(burst)},
		SchedulerArgs:         []string{"--kube-api-qps", fmt.Sprint(qps), "--kube-api-burst", fmt.Sprint(burst)}})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	b := &bench{c: c, sz: sz, r: r, progress: newProgress()}
	// A kubelet restarts a static pod that exits: kube-scheduler losing its lease under the
	// fill's load must not end the run. Each restart is printed and reported.
	supervised, cancel := context.WithCancel(ctx)
	supervising := make(chan struct{})
	go func() {
		defer close(supervising)
		c.Supervise(supervised, 2*time.Second, b.componentsRestarted)
	}()
	stopSupervising := func() { cancel(); <-supervising }
	defer stopSupervising()
	err = b.run(ctx, binDir)
	stopSupervising()
	r.ComponentRestarts = b.componentRestarts()
	if err != nil {
		// Every component's log stays: they say why a phase failed.
		c.Keep()
		return r, fmt.Errorf("%w\n(every component's log is in %s)", err, c.Dir())
	}
	return r, nil
}
