package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// gate is the baseline's scheduling gate: the same gate-then-lift work the operator does.
const gate = "bench.grove.io/baseline"

func podSpec(container string) corev1.PodSpec {
	return corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyAlways,
		Containers: []corev1.Container{{
			Name: container, Image: "busybox:1.36",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
		}},
	}
}

func clique(name string, replicas int32) *grovev1alpha1.PodCliqueTemplateSpec {
	return &grovev1alpha1.PodCliqueTemplateSpec{Name: name, Spec: grovev1alpha1.PodCliqueSpec{RoleName: name, Replicas: replicas, PodSpec: podSpec(name)}}
}

func pcs(ns, name string, cliques ...*grovev1alpha1.PodCliqueTemplateSpec) *grovev1alpha1.PodCliqueSet {
	return &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       grovev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: grovev1alpha1.PodCliqueSetTemplateSpec{Cliques: cliques}},
	}
}

// parallel runs n calls of f with limited concurrency; the client's rate limiter sets the pace.
func parallel(n, workers int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(i); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	return <-errs
}

// baseline is the work the API server must do anyway for n pods: a plain client with the
// operator's QPS and burst creates n gated pods, then lifts every gate.
func baseline(ctx context.Context, cs kubernetes.Interface, w *podWatch, ns string, n int) (phases, error) {
	begin := time.Now()
	err := parallel(n, 64, func(i int) error {
		spec := podSpec("main")
		spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: gate}}
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: ns}, Spec: spec}
		_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return phases{}, err
	}
	patch := []byte(`{"spec":{"schedulingGates":null}}`)
	err = parallel(n, 64, func(i int) error {
		_, err := cs.CoreV1().Pods(ns).Patch(ctx, fmt.Sprintf("pod-%d", i), types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return phases{}, err
	}
	return w.waitPhases(ctx, ns, n, begin, 10*time.Minute)
}

// trainingRuntime is the S4 runtime: a node job whose pods kwok ends with exit 0 after 10 s.
func trainingRuntime(ns string, exitAfter string) *trainerv1alpha1.TrainingRuntime {
	pod := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{cluster.LabelExitCode: "0"},
			Annotations: map[string]string{cluster.AnnotationExitAfter: exitAfter},
		},
		Spec: podSpec("node"),
	}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	return &trainerv1alpha1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bench"},
		Spec: trainerv1alpha1.TrainingRuntimeSpec{
			WorkloadKind: trainerv1alpha1.WorkloadKindPodCliqueSet,
			Template: trainerv1alpha1.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{{
				Name: "node", Replicas: 1,
				Template: batchv1.JobTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
					Spec:       batchv1.JobSpec{Template: pod},
				},
			}}}},
		},
	}
}

// trainingPCS is what S4 compares against: the same gang applied directly as a Training
// PodCliqueSet.
func trainingPCS(ns, name string, pods int32, exitAfter string) *grovev1alpha1.PodCliqueSet {
	c := clique("node", pods)
	c.Labels = map[string]string{cluster.LabelExitCode: "0"}
	c.Annotations = map[string]string{cluster.AnnotationExitAfter: exitAfter}
	c.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever
	p := pcs(ns, name, c)
	p.Spec.WorkloadType = grovev1alpha1.WorkloadTypeTraining
	p.Spec.Template.StartupType = ptr.To(grovev1alpha1.CliqueStartupTypeExplicit)
	return p
}

// waitAll polls until done reports true for every listed object.
func waitAll(ctx context.Context, timeout time.Duration, what string, done func() (int, int, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		got, want, err := done()
		if err == nil && got >= want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %d of %d after %s (%v)", what, got, want, timeout, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func succeededPCS(ctx context.Context, c client.Client, ns string) (int, error) {
	list := &grovev1alpha1.PodCliqueSetList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	n := 0
	for _, p := range list.Items {
		if p.Status.Phase == grovev1alpha1.PodCliqueSetPhaseSucceeded {
			n++
		}
	}
	return n, nil
}

func completeTrainJobs(ctx context.Context, c client.Client, ns string) (int, error) {
	list := &trainerv1alpha1.TrainJobList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	n := 0
	for _, tj := range list.Items {
		if meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1alpha1.TrainJobComplete) {
			n++
		}
	}
	return n, nil
}
