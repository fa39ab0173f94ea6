// Package smoke proves the local cluster the e2e tests run on: scheduling onto kwok nodes, the
// Job and JobSet controllers, the test exit stage, garbage collection and the Workload API.
package smokee2e

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/kubegrove/grove/test/cluster"
)

func TestMain(m *testing.M) {
	os.Exit(cluster.Main(m, cluster.Options{Nodes: 2}, nil))
}

func replicatedJob(name string, pods int32, labels, annotations map[string]string) jobsetv1alpha2.ReplicatedJob {
	rj := jobsetv1alpha2.ReplicatedJob{Name: name, Replicas: 1}
	rj.Template.Spec.Parallelism = ptr.To(pods)
	rj.Template.Spec.Completions = ptr.To(pods)
	rj.Template.Spec.BackoffLimit = ptr.To[int32](0)
	rj.Template.Spec.Template.Labels = labels
	rj.Template.Spec.Template.Annotations = annotations
	rj.Template.Spec.Template.Spec = corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{
			Name: "main", Image: "busybox:1.36",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: *resourceQuantity("100m")}},
		}},
	}
	return rj
}

// phaseRecorder remembers every phase each pod of a namespace went through, from a watch.
type phaseRecorder struct {
	mu     sync.Mutex
	phases map[string][]corev1.PodPhase
	times  map[string]map[corev1.PodPhase]time.Time
}

func recordPhases(t *testing.T, ns string) *phaseRecorder {
	t.Helper()
	watcher, err := client.NewWithWatch(cluster.Current.RESTConfig(), client.Options{})
	require.NoError(t, err)
	w, err := cluster.ListAndWatch(context.Background(), watcher, &corev1.PodList{}, ns)
	require.NoError(t, err)
	t.Cleanup(w.Stop)
	r := &phaseRecorder{phases: map[string][]corev1.PodPhase{}, times: map[string]map[corev1.PodPhase]time.Time{}}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			r.mu.Lock()
			seen := r.phases[pod.Name]
			if len(seen) == 0 || seen[len(seen)-1] != pod.Status.Phase {
				r.phases[pod.Name] = append(seen, pod.Status.Phase)
				if r.times[pod.Name] == nil {
					r.times[pod.Name] = map[corev1.PodPhase]time.Time{}
				}
				r.times[pod.Name][pod.Status.Phase] = time.Now()
			}
			r.mu.Unlock()
		}
	}()
	return r
}

func (r *phaseRecorder) snapshot() map[string][]corev1.PodPhase {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]corev1.PodPhase{}
	for k, v := range r.phases {
		out[k] = append([]corev1.PodPhase(nil), v...)
	}
	return out
}

func waitForJobSetCondition(t *testing.T, key client.ObjectKey, cond jobsetv1alpha2.JobSetConditionType, timeout time.Duration) {
	t.Helper()
	js := &jobsetv1alpha2.JobSet{}
	require.Eventually(t, func() bool {
		if err := cluster.Current.Client().Get(context.Background(), key, js); err != nil {
			return false
		}
		return meta.IsStatusConditionTrue(js.Status.Conditions, string(cond))
	}, timeout, 100*time.Millisecond, "JobSet %s never became %s", key, cond)
}

func TestJobSetWithTwoReplicatedJobsRunsToCompleted(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	phases := recordPhases(t, ns)
	js := &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "two-jobs", Namespace: ns},
		Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{
			replicatedJob("workers", 2, nil, nil),
			replicatedJob("leader", 1, nil, nil),
		}},
	}
	begin := time.Now()
	require.NoError(t, cluster.Current.Client().Create(context.Background(), js))
	waitForJobSetCondition(t, client.ObjectKeyFromObject(js), jobsetv1alpha2.JobSetCompleted, 90*time.Second)
	t.Logf("JobSet completed in %s", time.Since(begin).Round(time.Millisecond))

	require.Eventually(t, func() bool { return len(phases.snapshot()) == 3 }, 10*time.Second, 100*time.Millisecond)
	for pod, seen := range phases.snapshot() {
		assert.Equal(t, []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded}, seen, pod)
	}
}

func TestPodExitingNonZeroFailsItsJobAndJobSet(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	js := &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Name: "crash", Namespace: ns},
		Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{
			replicatedJob("trainer", 1, map[string]string{cluster.LabelExitCode: "1"}, map[string]string{cluster.AnnotationExitAfter: "1s"}),
		}},
	}
	require.NoError(t, cluster.Current.Client().Create(context.Background(), js))
	waitForJobSetCondition(t, client.ObjectKeyFromObject(js), jobsetv1alpha2.JobSetFailed, 90*time.Second)

	jobs := &batchv1.JobList{}
	require.NoError(t, cluster.Current.Client().List(context.Background(), jobs, client.InNamespace(ns)))
	require.Len(t, jobs.Items, 1)
	failed := false
	for _, c := range jobs.Items[0].Status.Conditions {
		failed = failed || (c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue)
	}
	assert.True(t, failed, "the Job is Failed")

	pods := &corev1.PodList{}
	require.NoError(t, cluster.Current.Client().List(context.Background(), pods, client.InNamespace(ns)))
	require.NotEmpty(t, pods.Items)
	pod := pods.Items[0]
	assert.Equal(t, corev1.PodFailed, pod.Status.Phase)
	require.NotEmpty(t, pod.Status.ContainerStatuses)
	require.NotNil(t, pod.Status.ContainerStatuses[0].State.Terminated)
	assert.Equal(t, int32(1), pod.Status.ContainerStatuses[0].State.Terminated.ExitCode)
}

func TestExitStageWaitsForTheRequestedDelay(t *testing.T) {
	t.Parallel()
	ns := cluster.Current.NewNamespace(t)
	phases := recordPhases(t, ns)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "exit-zero", Namespace: ns,
			Labels:      map[string]string{cluster.LabelExitCode: "0"},
			Annotations: map[string]string{cluster.AnnotationExitAfter: "3s"},
		},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36"}}},
	}
	require.NoError(t, cluster.Current.Client().Create(context.Background(), pod))
	require.Eventually(t, func() bool {
		got := &corev1.Pod{}
		return cluster.Current.Client().Get(context.Background(), client.ObjectKeyFromObject(pod), got) == nil && got.Status.Phase == corev1.PodSucceeded
	}, 60*time.Second, 100*time.Millisecond)
	phases.mu.Lock()
	defer phases.mu.Unlock()
	ran := phases.times[pod.Name][corev1.PodSucceeded].Sub(phases.times[pod.Name][corev1.PodRunning])
	assert.GreaterOrEqual(t, ran, 2500*time.Millisecond, "the pod ran for its exit-after delay before exiting")
	assert.Equal(t, []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded}, phases.phases[pod.Name])
}

func TestGarbageCollectorDeletesChildrenOfADeletedOwner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	c := cluster.Current.Client()
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner", Namespace: ns}}
	require.NoError(t, c.Create(ctx, owner))
	child := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "child", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID}},
	}}
	require.NoError(t, c.Create(ctx, child))
	require.NoError(t, c.Delete(ctx, owner))
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(c.Get(ctx, client.ObjectKeyFromObject(child), &corev1.ConfigMap{}))
	}, 60*time.Second, 100*time.Millisecond, "the garbage collector deletes the child")
}

func TestWorkloadAPIIsServed(t *testing.T) {
	t.Parallel()
	dc, err := discovery.NewDiscoveryClientForConfig(cluster.Current.RESTConfig())
	require.NoError(t, err)
	resources, err := dc.ServerResourcesForGroupVersion("scheduling.k8s.io/v1beta1")
	require.NoError(t, err)
	names := map[string]bool{}
	for _, r := range resources.APIResources {
		names[r.Name] = true
	}
	assert.True(t, names["workloads"], "workloads served")
	assert.True(t, names["podgroups"], "podgroups served")
}
