package multikueuee2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	"github.com/kubegrove/grove/test/cluster"
)

// queueLabel names a job's LocalQueue.
const queueLabel = "kueue.x-k8s.io/queue-name"

// managerUser is the identity ConnectWorkers gives the manager's Kueue on each worker.
const managerUser = "multikueue-manager"

func cpu(n string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(n)}
}

// newTest makes a namespace of one name on all three clusters and the queue named after it:
// the manager's with the MultiKueue check and quota managerCPU, each worker's with its own.
func newTest(t *testing.T, managerCPU string, workerCPU map[string]string) string {
	t.Helper()
	ns := cluster.NewNamespaceOn(t, manager, workers[worker1Name], workers[worker2Name])
	quotas := map[string]corev1.ResourceList{}
	for name, n := range workerCPU {
		quotas[name] = cpu(n)
	}
	manager.SetUpMultiKueueQueues(t, workers, cluster.MultiKueueQueues{Namespace: ns, Manager: cpu(managerCPU), Workers: quotas})
	return ns
}

// jobSet is a JobSet of one Job of pods pods, each asking for cpuPerPod, queued in queue; each
// pod runs for runFor (kwok's test exit stage) and then succeeds.
func jobSet(ns, name, queue string, pods int32, cpuPerPod string, runFor time.Duration) *jobsetv1alpha2.JobSet {
	rj := jobsetv1alpha2.ReplicatedJob{Name: "workers", Replicas: 1}
	rj.Template.Spec.Parallelism = ptr.To(pods)
	rj.Template.Spec.Completions = ptr.To(pods)
	rj.Template.Spec.BackoffLimit = ptr.To[int32](0)
	rj.Template.Spec.Template.Labels = map[string]string{cluster.LabelExitCode: "0"}
	rj.Template.Spec.Template.Annotations = map[string]string{cluster.AnnotationExitAfter: runFor.String()}
	rj.Template.Spec.Template.Spec = corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name: "main", Image: "busybox:1.36",
			Resources: corev1.ResourceRequirements{Requests: cpu(cpuPerPod)},
		}},
	}
	js := &jobsetv1alpha2.JobSet{Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{rj}}}
	js.Name, js.Namespace, js.Labels = name, ns, map[string]string{queueLabel: queue}
	return js
}

// eventually polls cond until it holds, failing with what it last described.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		var ok bool
		ok, last = cond()
		return ok, nil
	})
	if err != nil {
		t.Fatalf("after %s: %s", timeout, last)
	}
}

// workloads lists the Workloads of ns on c.
func workloads(t *testing.T, c *cluster.Cluster, ns string) []kueuev1beta2.Workload {
	t.Helper()
	list := &kueuev1beta2.WorkloadList{}
	if err := c.Client().List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Logf("listing Workloads: %v", err)
		return nil
	}
	return list.Items
}

func describeWorkloads(wls []kueuev1beta2.Workload) string {
	var out []string
	for _, wl := range wls {
		var conds, checks []string
		for _, c := range wl.Status.Conditions {
			conds = append(conds, fmt.Sprintf("%s=%s(%s)", c.Type, c.Status, c.Reason))
		}
		for _, c := range wl.Status.AdmissionChecks {
			checks = append(checks, fmt.Sprintf("%s=%s(%s)", c.Name, c.State, c.Message))
		}
		out = append(out, fmt.Sprintf("%s clusterName=%v nominated=%v conditions=%v checks=%v",
			wl.Name, ptr.Deref(wl.Status.ClusterName, ""), wl.Status.NominatedClusterNames, conds, checks))
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// jobSetCreates are the successful creates of JobSets in ns that c's API server recorded, as
// "<name> by <user>".
func jobSetCreates(t *testing.T, c *cluster.Cluster, ns string) []string {
	t.Helper()
	return creates(t, c, ns, "jobsets")
}

// creates are the successful creates of resource in ns that c's API server recorded, as
// "<name> by <user>".
func creates(t *testing.T, c *cluster.Cluster, ns, resource string) []string {
	t.Helper()
	events, err := c.AuditEvents(func(ev cluster.AuditEvent) bool {
		return ev.ObjectRef.Resource == resource && ev.ObjectRef.Namespace == ns && ev.Verb == "create" &&
			ev.ObjectRef.Subresource == "" && ev.ResponseStatus.Code < 300
	})
	if err != nil {
		t.Fatalf("reading the audit log: %v", err)
	}
	var out []string
	for _, ev := range events {
		out = append(out, ev.ObjectRef.Name+" by "+ev.User.Username)
	}
	return out
}
