package chaos

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// The inference workloads live for the whole run in one namespace: two PodCliqueSets of a router
// and a scaling group of a leader and two workers that start after it.
const (
	inferenceNS = "chaos-inference"
	// scaledGroup is the scaling group the workload scales up and down during the run.
	scaledGroup = "inf-a-0-prefill"
)

// coherentSet is the inference PodCliqueSet rolled with the Coherent strategy: its worker's
// template changes every round, so Coherent updates are in flight while faults hit.
const coherentSet = "inf-b"

// inferenceSets are the inference PodCliqueSets and their replica counts.
var inferenceSets = map[string]int32{"inf-a": 1, "inf-b": 2}

// container is a small container; kwok runs nothing, the request only feeds the scheduler.
func container(name string) corev1.Container {
	return corev1.Container{
		Name: name, Image: "busybox:1.36",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
	}
}

func clique(name string, replicas int32, pool string, startsAfter ...string) *grovev1alpha1.PodCliqueTemplateSpec {
	c := &grovev1alpha1.PodCliqueTemplateSpec{
		Name: name,
		Spec: grovev1alpha1.PodCliqueSpec{
			RoleName: name, Replicas: replicas, StartsAfter: startsAfter,
			PodSpec: corev1.PodSpec{Containers: []corev1.Container{container(name)}},
		},
	}
	onPool(&c.Spec.PodSpec, pool)
	return c
}

// inferencePCS is the sample's disaggregated shape (config/samples) on the chaos pool.
func inferencePCS(name string, replicas int32) *grovev1alpha1.PodCliqueSet {
	pcs := &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: inferenceNS},
		Spec: grovev1alpha1.PodCliqueSetSpec{
			Replicas: replicas,
			Template: grovev1alpha1.PodCliqueSetTemplateSpec{
				StartupType: ptr.To(grovev1alpha1.CliqueStartupTypeExplicit),
				Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{
					clique("router", 1, poolChaos), clique("leader", 1, poolChaos), clique("worker", 2, poolChaos, "leader"),
				},
				PodCliqueScalingGroupConfigs: []grovev1alpha1.PodCliqueScalingGroupConfig{
					{Name: "prefill", CliqueNames: []string{"leader", "worker"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1)},
				},
			},
		},
	}
	if name == coherentSet {
		pcs.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: grovev1alpha1.CoherentStrategy}
	}
	return pcs
}

// revisionEnv is the variable whose value a Coherent update changes in the worker's template.
const revisionEnv = "CHAOS_REVISION"

// runsRevision reports whether a pod's containers carry the revision (revision 0: none).
func runsRevision(p *corev1.Pod, revision int) bool {
	for _, e := range p.Spec.Containers[0].Env {
		if e.Name == revisionEnv {
			return e.Value == strconv.Itoa(revision)
		}
	}
	return revision == 0
}

// stuckPCS is an inference PodCliqueSet whose one step keeps failing all run long: its external
// ResourceClaimTemplate is deleted right after it is admitted. It must report the failure and
// otherwise keep quiet (the bounded per-object writes invariant).
const stuckPCS = "stuck"

// stuckTemplate is the ResourceClaimTemplate stuckPCS names, created for admission and deleted.
func stuckTemplate() *resourcev1.ResourceClaimTemplate {
	rct := &resourcev1.ResourceClaimTemplate{ObjectMeta: metav1.ObjectMeta{Name: "stuck-gpu", Namespace: inferenceNS}}
	rct.Spec.Spec.Devices.Requests = []resourcev1.DeviceRequest{{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}}
	return rct
}

// stuck is stuckPCS: one small clique sharing one claim made from stuckTemplate.
func stuck() *grovev1alpha1.PodCliqueSet {
	pcs := &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: stuckPCS, Namespace: inferenceNS},
		Spec: grovev1alpha1.PodCliqueSetSpec{Replicas: 1, Template: grovev1alpha1.PodCliqueSetTemplateSpec{
			Cliques: []*grovev1alpha1.PodCliqueTemplateSpec{clique("worker", 1, poolStable)},
			ResourceSharing: []grovev1alpha1.PCSResourceSharingSpec{{ResourceSharingSpec: grovev1alpha1.ResourceSharingSpec{
				Name: "stuck-gpu", Scope: grovev1alpha1.ResourceSharingScopeAllReplicas}}},
		}},
	}
	return pcs
}

// expectedInferencePods are the pod names a converged run has, given the scaled group's replicas.
func expectedInferencePods(scaled int32) []string {
	var want []string
	for name, replicas := range inferenceSets {
		for i := int32(0); i < replicas; i++ {
			want = append(want, fmt.Sprintf("%s-%d-router-0", name, i))
			groups := int32(2)
			if fmt.Sprintf("%s-%d-prefill", name, i) == scaledGroup {
				groups = scaled
			}
			for j := int32(0); j < groups; j++ {
				for _, p := range []string{"leader-0", "worker-0", "worker-1"} {
					want = append(want, fmt.Sprintf("%s-%d-prefill-%d-%s", name, i, j, p))
				}
			}
		}
	}
	return want
}

// exit tells kwok to end a pod with code after a delay once it runs ("" code: never).
type exit struct{ code, after string }

func withExit(meta *metav1.ObjectMeta, e exit) {
	if e.code == "" {
		return
	}
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Labels[cluster.LabelExitCode] = e.code
	meta.Annotations[cluster.AnnotationExitAfter] = e.after
}

// trainingCase is a Training PodCliqueSet whose every pod behaves the same in every incarnation,
// so its outcome does not depend on when faults strike: pods that always exit 1 use up the whole
// restart budget and fail; pods that always exit 0 succeed without a restart.
type trainingCase struct {
	name        string
	replicas    int32
	cliques     map[string]int32
	exit        exit
	maxRestarts int32
	// group, when set, makes these cliques one scaling group (1 replica, minAvailable 1): its
	// failures restart the whole replica once each, as the standalone cliques' do.
	group []string
}

var trainingCases = []trainingCase{
	{name: "crashy", replicas: 2, cliques: map[string]int32{"trainer": 2}, exit: exit{"1", "2s"}, maxRestarts: 2},
	{name: "crashy-group", replicas: 1, cliques: map[string]int32{"solo": 1, "lead": 1, "mem": 1}, exit: exit{"1", "3s"}, maxRestarts: 2,
		group: []string{"lead", "mem"}},
	{name: "steady", replicas: 1, cliques: map[string]int32{"trainer": 2, "launcher": 1}, exit: exit{"0", "3s"}, maxRestarts: 1},
}

// outcome is how a Training workload ends.
type outcome struct {
	Phase        grovev1alpha1.PodCliqueSetPhase
	RestartCount int32
}

// expected computes a case's outcome: every breach restarts until the budget is spent, then the
// next breach fails the workload; pods that all exit 0 succeed untouched.
func (c trainingCase) expected() outcome {
	if c.exit.code == "0" {
		return outcome{grovev1alpha1.PodCliqueSetPhaseSucceeded, 0}
	}
	return outcome{grovev1alpha1.PodCliqueSetPhaseFailed, c.maxRestarts}
}

func (c trainingCase) pcs(ns string) *grovev1alpha1.PodCliqueSet {
	pcs := &grovev1alpha1.PodCliqueSet{
		ObjectMeta: metav1.ObjectMeta{Name: c.name, Namespace: ns},
		Spec: grovev1alpha1.PodCliqueSetSpec{
			Replicas: c.replicas, WorkloadType: grovev1alpha1.WorkloadTypeTraining,
			TrainingSpec: &grovev1alpha1.TrainingSpec{MaxRestarts: ptr.To(c.maxRestarts)},
		},
	}
	for _, name := range sortedKeys32(c.cliques) {
		cl := clique(name, c.cliques[name], poolStable)
		cl.Spec.PodSpec.RestartPolicy = corev1.RestartPolicyNever
		meta := metav1.ObjectMeta{}
		withExit(&meta, c.exit)
		cl.Labels, cl.Annotations = meta.Labels, meta.Annotations
		pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, cl)
	}
	if len(c.group) > 0 {
		pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovev1alpha1.PodCliqueScalingGroupConfig{{
			Name: "grp", CliqueNames: c.group, Replicas: ptr.To[int32](1), MinAvailable: ptr.To[int32](1)}}
	}
	return pcs
}

// trainJobCase is a TrainJob on one of the two paths whose outcome is fixed: pods that exit 0
// complete it; pods that never exit run into activeDeadlineSeconds. Every runtime has a TTL.
type trainJobCase struct {
	name     string
	kind     trainerv1alpha1.WorkloadKind
	exit     exit
	deadline *int64
	ttl      int32
	// condition and reason are the expected finish.
	condition string
	reason    string
}

var trainJobCases = []trainJobCase{
	{name: "tj-js-ok", kind: trainerv1alpha1.WorkloadKindJobSet, exit: exit{"0", "2s"}, ttl: 8, condition: trainerv1alpha1.TrainJobComplete},
	{name: "tj-pcs-ok", kind: trainerv1alpha1.WorkloadKindPodCliqueSet, exit: exit{"0", "2s"}, ttl: 8, condition: trainerv1alpha1.TrainJobComplete},
	// A Job pod without the exit label completes at once in kwok; a far exit keeps it running.
	{name: "tj-js-late", kind: trainerv1alpha1.WorkloadKindJobSet, exit: exit{"0", "87600h"}, deadline: ptr.To[int64](8), ttl: 5,
		condition: trainerv1alpha1.TrainJobFailed, reason: trainerv1alpha1.TrainJobDeadlineExceededReason},
	{name: "tj-pcs-late", kind: trainerv1alpha1.WorkloadKindPodCliqueSet, deadline: ptr.To[int64](8), ttl: 5,
		condition: trainerv1alpha1.TrainJobFailed, reason: trainerv1alpha1.TrainJobDeadlineExceededReason},
}

// runtime is the plain Kubeflow torch runtime of a case: one replicated job "node".
func (c trainJobCase) runtime(ns string) *trainerv1alpha1.TrainingRuntime {
	pod := corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{container("node")}}}
	onPool(&pod.Spec, poolStable)
	withExit(&pod.ObjectMeta, c.exit)
	job := jobsetv1alpha2.ReplicatedJob{
		Name: "node", Replicas: 1,
		Template: batchv1.JobTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
			Spec: batchv1.JobSpec{
				Parallelism: ptr.To[int32](1), Completions: ptr.To[int32](1), BackoffLimit: ptr.To[int32](0),
				Template: pod,
			},
		},
	}
	return &trainerv1alpha1.TrainingRuntime{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rt-" + c.name},
		Spec: trainerv1alpha1.TrainingRuntimeSpec{
			WorkloadKind:            c.kind,
			TTLSecondsAfterFinished: ptr.To(c.ttl),
			MLPolicy:                &trainerv1alpha1.MLPolicy{NumNodes: ptr.To[int32](1), MLPolicySource: trainerv1alpha1.MLPolicySource{Torch: &trainerv1alpha1.TorchMLPolicySource{}}},
			Template: trainerv1alpha1.JobSetTemplateSpec{Spec: jobsetv1alpha2.JobSetSpec{
				ReplicatedJobs: []jobsetv1alpha2.ReplicatedJob{job},
			}},
		},
	}
}

// observeFinalizer holds a TrainJob the TTL deleted until the test read how it finished: a
// restarted API server's watch cache starts afresh, so an informer that reconnects relists and
// never sees a finish and a deletion that both happened in between. The trainer-controller
// leaves TrainJobs that are being deleted alone, so the finalizer changes nothing else.
const observeFinalizer = "grove.test/chaos-observe"

func (c trainJobCase) trainJob(ns string) *trainerv1alpha1.TrainJob {
	return &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: c.name, Finalizers: []string{observeFinalizer}},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef:            trainerv1alpha1.RuntimeRef{Name: "rt-" + c.name, Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
			Trainer:               &trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](2)},
			ActiveDeadlineSeconds: c.deadline,
		},
	}
}

func sortedKeys32(m map[string]int32) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// createPersistently creates obj, retrying while admission or the API server is down (faults
// make both happen); it gives up after a timeout.
func createPersistently(ctx context.Context, c client.Client, obj client.Object, log func(string, ...any)) error {
	deadline := time.Now().Add(3 * time.Minute)
	var last error
	for time.Now().Before(deadline) {
		err := c.Create(ctx, obj.DeepCopyObject().(client.Object))
		if err == nil || strings.Contains(err.Error(), "already exists") {
			return nil
		}
		if last == nil || last.Error() != err.Error() {
			log("creating %T %s/%s is retried: %v", obj, obj.GetNamespace(), obj.GetName(), err)
		}
		last = err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
	return fmt.Errorf("creating %s/%s: %w", obj.GetNamespace(), obj.GetName(), last)
}
