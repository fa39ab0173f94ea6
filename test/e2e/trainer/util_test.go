package trainere2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

func k8s() client.Client { return cluster.Current.Client() }

// exit makes pods exit with code after the given delay once Running ("" never exits).
type exit struct {
	code  string
	after string
}

var (
	succeedAfter2s = exit{"0", "2s"}
	neverExit      = exit{}
	// jobPodNeverExits keeps a Job's pod Running: kwok completes Job pods at once unless they
	// use the exit stage.
	jobPodNeverExits = exit{"0", "87600h"}
)

// podTemplate is a pod of the given container name with kwok's exit instructions.
func podTemplate(container string, e exit) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: container, Image: "busybox:1.36",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			}},
		},
	}
	if e.code != "" {
		t.Labels[cluster.LabelExitCode] = e.code
		t.Annotations[cluster.AnnotationExitAfter] = e.after
	}
	return t
}

func replicatedJob(name string, e exit, dependsOn ...string) jobsetv1alpha2.ReplicatedJob {
	rj := jobsetv1alpha2.ReplicatedJob{
		Name: name, Replicas: 1,
		Template: batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}},
			Spec: batchv1.JobSpec{
				Parallelism: ptr.To[int32](1), Completions: ptr.To[int32](1), BackoffLimit: ptr.To[int32](0),
				Template: podTemplate(name, e),
			},
		},
	}
	if name == "node" {
		rj.Template.Labels["trainer.kubeflow.org/trainjob-ancestor-step"] = "trainer"
	} else {
		rj.Template.Labels["trainer.kubeflow.org/trainjob-ancestor-step"] = name
	}
	for _, d := range dependsOn {
		rj.DependsOn = append(rj.DependsOn, jobsetv1alpha2.DependsOn{Name: d, Status: jobsetv1alpha2.DependencyComplete})
	}
	return rj
}

// runtimeSpec is a torch runtime of the given kind whose node pods behave as e; maxRestarts sets
// the JobSet failure policy.
func runtimeSpec(kind trainerv1alpha1.WorkloadKind, e exit, ttl *int32, maxRestarts int32, jobs ...jobsetv1alpha2.ReplicatedJob) trainerv1alpha1.TrainingRuntimeSpec {
	if kind == trainerv1alpha1.WorkloadKindJobSet && e == neverExit {
		e = jobPodNeverExits
	}
	if len(jobs) == 0 {
		jobs = []jobsetv1alpha2.ReplicatedJob{replicatedJob("node", e)}
	}
	return trainerv1alpha1.TrainingRuntimeSpec{
		WorkloadKind:            kind,
		TTLSecondsAfterFinished: ttl,
		MLPolicy:                &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), MLPolicySource: trainerv1alpha1.MLPolicySource{Torch: &trainerv1alpha1.TorchMLPolicySource{}}},
		Template: trainerv1alpha1.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
			ReplicatedJobs: jobs,
			FailurePolicy:  &jobsetv1alpha2.FailurePolicy{MaxRestarts: maxRestarts},
		}},
	}
}

// newRuntime creates a namespaced TrainingRuntime.
func newRuntime(t *testing.T, ns, name string, spec trainerv1alpha1.TrainingRuntimeSpec) *trainerv1alpha1.TrainingRuntime {
	t.Helper()
	rt := builders.RuntimeSpecOf(spec).TrainingRuntime(ns, name)
	require.NoError(t, k8s().Create(context.Background(), rt))
	return rt
}

// trainJob is a TrainJob on the namespaced runtime rt with numNodes nodes.
func trainJob(ns, name, rt string, nodes int32, deadline *int64, suspend bool) *trainerv1alpha1.TrainJob {
	b := builders.TrainJob(ns, name, rt).Nodes(nodes).Suspended(suspend)
	if deadline != nil {
		b.Deadline(*deadline)
	}
	return b.Obj()
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	require.NoError(t, k8s().Create(context.Background(), obj))
}

func get(t *testing.T, tj *trainerv1alpha1.TrainJob) *trainerv1alpha1.TrainJob {
	t.Helper()
	got := &trainerv1alpha1.TrainJob{}
	require.NoError(t, k8s().Get(context.Background(), client.ObjectKeyFromObject(tj), got))
	return got
}

// waitCondition waits for a TrainJob condition with the given status and reason.
func waitCondition(t *testing.T, tj *trainerv1alpha1.TrainJob, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) *trainerv1alpha1.TrainJob {
	t.Helper()
	got := &trainerv1alpha1.TrainJob{}
	var last *metav1.Condition
	require.Eventually(t, func() bool {
		if k8s().Get(context.Background(), client.ObjectKeyFromObject(tj), got) != nil {
			return false
		}
		last = meta.FindStatusCondition(got.Status.Conditions, typ)
		return last != nil && last.Status == status && (reason == "" || last.Reason == reason)
	}, timeout, 100*time.Millisecond, "%s: waiting for %s=%s (%s); last %+v", tj.Name, typ, status, reason, last)
	return got
}

// setSuspend suspends or resumes a TrainJob.
func setSuspend(t *testing.T, tj *trainerv1alpha1.TrainJob, suspend bool) {
	t.Helper()
	got := get(t, tj)
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Suspend = ptr.To(suspend)
	require.NoError(t, k8s().Patch(context.Background(), got, patch))
}

// pods lists the live pods of a TrainJob (both paths label them so).
func pods(t *testing.T, ns string, sel map[string]string) []corev1.Pod {
	t.Helper()
	list := &corev1.PodList{}
	require.NoError(t, k8s().List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels(sel)))
	return list.Items
}

// waitGone waits until obj no longer exists.
func waitGone(t *testing.T, obj client.Object, timeout time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		return apierrors.IsNotFound(k8s().Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	}, timeout, 200*time.Millisecond, "%T %s is deleted", obj, obj.GetName())
}

// waitNoPods waits up to a minute until no pod matches sel.
func waitNoPods(t *testing.T, ns string, sel map[string]string) {
	t.Helper()
	require.Eventually(t, func() bool { return len(pods(t, ns, sel)) == 0 }, time.Minute, 200*time.Millisecond, "pods %v are gone", sel)
}

// assertEvent waits for an event of reason on the named object.
func assertEvent(t *testing.T, ns, name, reason string) {
	t.Helper()
	require.Eventually(t, func() bool {
		list := &corev1.EventList{}
		if k8s().List(context.Background(), list, client.InNamespace(ns)) != nil {
			return false
		}
		for _, e := range list.Items {
			if e.InvolvedObject.Name == name && e.Reason == reason {
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "event %s on %s", reason, name)
}

func name(prefix string, i int) string { return fmt.Sprintf("%s-%d", prefix, i) }
