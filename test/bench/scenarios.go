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

// baselineService labels a baseline pod with the headless Service that selects it.
const baselineService = "bench.grove.io/service"

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

// baselineShape is the shape of the pods a baseline makes: as many as the scenario's, perService
// to a headless Service (as the scenario's PodCliqueSet replicas have), and for a scale-out the
// running pods the added ones join.
type baselineShape struct {
	Pods, PerService, Existing int
}

// baseline is the work the API server must do anyway for the pods: a plain client with the
// operator's QPS and burst creates their headless Services (the endpoints controllers' work for
// them is the workload's, whoever creates the pods), then the gated pods with the same DNS
// identity, then lifts every gate. Existing pods are made and running before the clock starts.
func baseline(ctx context.Context, cs kubernetes.Interface, w *podWatch, ns string, shape baselineShape) (phases, error) {
	begin := time.Now()
	services := (shape.Existing + shape.Pods + shape.PerService - 1) / shape.PerService
	err := parallel(services, 64, func(i int) error {
		name := fmt.Sprintf("svc-%d", i)
		_, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.ServiceSpec{
				ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{baselineService: name}, PublishNotReadyAddresses: true,
			},
		}, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return phases{}, err
	}
	create := func(from, n int, gated bool) error {
		return parallel(n, 64, func(i int) error {
			i += from
			service := fmt.Sprintf("svc-%d", i/shape.PerService)
			spec := podSpec("main")
			if gated {
				spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: gate}}
			}
			spec.Hostname, spec.Subdomain = fmt.Sprintf("pod-%d", i), service
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("pod-%d", i), Namespace: ns, Labels: map[string]string{baselineService: service},
			}, Spec: spec}
			_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
			return err
		})
	}
	if shape.Existing > 0 {
		if err := create(0, shape.Existing, false); err != nil {
			return phases{}, err
		}
		if _, err := w.waitPhases(ctx, ns, shape.Existing, begin, 10*time.Minute); err != nil {
			return phases{}, err
		}
		time.Sleep(3 * time.Second) // as the scenario waits before it scales out
		begin = time.Now()
	}
	if err := create(shape.Existing, shape.Pods, true); err != nil {
		return phases{}, err
	}
	patch := []byte(`{"spec":{"schedulingGates":null}}`)
	err = parallel(shape.Pods, 64, func(i int) error {
		name := fmt.Sprintf("pod-%d", shape.Existing+i)
		_, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if err != nil {
		return phases{}, err
	}
	return w.waitPhases(ctx, ns, shape.Pods, begin, 10*time.Minute)
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
