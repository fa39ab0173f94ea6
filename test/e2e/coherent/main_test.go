// Package coherent is the end-to-end tier of the Coherent update strategy (upstream Grove's
// GREP-393: spec.updateStrategy.type Coherent). It runs the project's binaries — grove-webhook,
// grove-operator, and backend-controller for kube-scheduler, KAI and scheduler-plugins — on a local cluster and
// checks what a user, and NVIDIA Dynamo, can observe of a Coherent update:
//
//   - at every pod event of an update (a watch, never a sample), each component keeps its budget
//     (replicas − rollingUpdate.maxUnavailable Ready pods of a standalone clique, available
//     replicas of a scaling group), the changed components move to the new version in
//     proportion (probe_test.go defines "within one unit"), unchanged components keep their pods
//     (by UID), and every gang the update makes is released to the scheduler whole;
//   - the update's status (updateProgress: inScope lists, currentlyUpdating with inFlightEpochs and
//     message, updateEndedAt), the replica's PodGangMap and its PodGangs (named by epoch);
//   - a grove-operator killed mid-step resumes the same step, a template change mid-update widens
//     the scope, a scale of a replica under update is refused with upstream's message and applied
//     once the update ends, and the installed CRD answers Dynamo's probe;
//   - upstream's Coherent samples (testdata, vendored unchanged) run and update.
//
// Gangs are placed by kube-scheduler in gang mode (the default profile), as in the conformance
// tier; upstream's two e2e workloads name kai-scheduler, which a second kube-scheduler serves
// under that name (as in the compat tier) with the KAI backend-controller keeping their gangs;
// one update runs under scheduler-plugins' coscheduling scheduler, its gangs kept by that
// backend-controller.
// The tests run one at a time: one kills the shared grove-operator, and the machine has two cores.
package coherent

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kaiv2 "github.com/kubegrove/grove/apis/kai/v2"
	"github.com/kubegrove/grove/test/cluster"
)

// operatorConfig is every binary's scheduler section: kube-scheduler in gang mode by default, and
// kai-scheduler for upstream's e2e workloads.
const operatorConfig = "scheduler:\n  profiles:\n" + cluster.GangSchedulerProfile + `  - name: kai-scheduler
    config: {defaultQueue: default}
  - name: scheduler-plugins
    config: {schedulerName: ` + coscheduler + `, scheduleTimeoutSeconds: 30}
`

// coscheduler is the scheduler-plugins scheduler's name (its Coscheduling plugin places the gangs
// of TestACoherentUpdateUnderCoschedulingPlacesEachStepsGangThroughItsPodGroup).
const coscheduler = "scheduler-plugins-scheduler"

// labelE2ENode is the node label upstream's e2e workloads require (node affinity) and tolerate.
const labelE2ENode = "node_role.e2e.grove.nvidia.com"

// queueTest is the KAI queue upstream's e2e workloads label.
const queueTest = "test"

// nodes are the shared kwok nodes (upstream's samples run there); the tests of this package's own
// workload add a pool of their own, sized to it (pool).
const nodes = 4

var (
	binDir string
	// operator is the running grove-operator; TestAGroveOperatorKilledMidStepResumesTheSameStep
	// kills and restarts it.
	operator *cluster.Process
	// operatorStarts counts grove-operator incarnations, naming each one's log.
	operatorStarts = 1
)

func node(i int) cluster.NodeSpec {
	n := cluster.DefaultNode(i)
	n.Labels[labelE2ENode] = "agent"
	return n
}

func TestMain(m *testing.M) {
	// kube-scheduler 1.37's gang mode can leave a new gang's pods, ungated and in their pod group,
	// waiting for its periodic retry of unschedulable pods (docs/rolling-updates.md, "Known with
	// kube-scheduler's gang mode"); an update makes a new gang at every step, so the cluster
	// shortens that retry from 5 minutes to 10 s, as the docs advise clusters that roll gangs.
	opts := cluster.Options{Nodes: nodes, Node: node, SchedulerArgs: []string{"--pod-max-in-unschedulable-pods-duration=10s"}}
	os.Exit(cluster.MainWithBinaries(m, opts, &binDir, func(c *cluster.Cluster) error {
		if _, err := c.StartWebhook(binDir, operatorConfig, time.Minute); err != nil {
			return err
		}
		var err error
		if operator, err = c.StartBinary(binDir, "grove-operator", "grove-operator", operatorConfig); err != nil {
			return err
		}
		for _, b := range []string{"kube-scheduler", "kai-scheduler", "scheduler-plugins"} {
			if _, err := c.StartBinaryAs(binDir, "backend-controller", "backend-controller-"+b, "backend-controller-"+b, operatorConfig, "--backend="+b); err != nil {
				return err
			}
		}
		if err := c.StartKAIStandIn(); err != nil {
			return err
		}
		// As the conformance tier runs it: a gang that did not fit backs off, so an older
		// partial gang cannot hold the last nodes in Permit.
		if err := c.StartCoscheduler(cluster.Coscheduling{SchedulerName: coscheduler, PermitWaitSeconds: 30, PodGroupBackoffSeconds: 15}); err != nil {
			return err
		}
		return createQueues(context.Background(), c)
	}))
}

func k8s() client.Client { return cluster.Current.Client() }

// createQueues creates the KAI queues upstream's workloads use: default (the kai-scheduler
// profile's defaultQueue) and test beneath it, without quota or limit.
func createQueues(ctx context.Context, c *cluster.Cluster) error {
	unlimited := func() *kaiv2.QueueResources {
		q := func() *kaiv2.ResourceQuota { return &kaiv2.ResourceQuota{Quota: -1, Limit: -1, OverQuotaWeight: 1} }
		return &kaiv2.QueueResources{CPU: q(), GPU: q(), Memory: q()}
	}
	for _, q := range []*kaiv2.Queue{
		{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: kaiv2.QueueSpec{Resources: unlimited()}},
		{ObjectMeta: metav1.ObjectMeta{Name: queueTest}, Spec: kaiv2.QueueSpec{ParentQueue: "default", Resources: unlimited()}},
	} {
		if err := c.Client().Create(ctx, q); err != nil {
			return fmt.Errorf("Queue %s: %w", q.Name, err)
		}
	}
	return nil
}

// killOperator kills grove-operator as a crash would; the returned func starts it again (same
// configuration and ports, a log of its own) and waits until it is ready.
func killOperator(t *testing.T) func() {
	t.Helper()
	operator.Kill()
	return func() {
		t.Helper()
		operatorStarts++
		p, err := cluster.Current.RestartBinary(operator, fmt.Sprintf("grove-operator-%d", operatorStarts))
		if err != nil {
			t.Fatalf("restarting grove-operator: %v", err)
		}
		operator = p
		if err := operator.WaitReady(time.Minute); err != nil {
			t.Fatalf("grove-operator after restart: %v", err)
		}
	}
}

// pool adds n nodes only namespace ns's pods land on, each with cpu whole CPUs (the workload's
// pods ask for one each), removed when the test ends.
func pool(t *testing.T, ns string, n int, cpu int64) {
	t.Helper()
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(cpu, resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	names, err := cluster.Current.AddPool(context.Background(), ns, n, capacity)
	if err != nil {
		t.Fatalf("adding the pool of %s: %v", ns, err)
	}
	t.Cleanup(func() { cluster.Current.DeleteNodes(context.Background(), names...) })
}
