package builders

import (
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// TrainJobBuilder builds a TrainJob.
type TrainJobBuilder struct{ obj *trainerv1alpha1.TrainJob }

// TrainJob starts a TrainJob on the namespaced TrainingRuntime named runtime, unsuspended, with
// nothing overridden: the runtime decides its nodes and image.
func TrainJob(namespace, name, runtime string) *TrainJobBuilder {
	return &TrainJobBuilder{obj: &trainerv1alpha1.TrainJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("TrainJob-" + name)},
		Spec: trainerv1alpha1.TrainJobSpec{
			RuntimeRef: trainerv1alpha1.RuntimeRef{Name: runtime, Kind: ptr.To(trainerv1alpha1.TrainingRuntimeKind)},
		},
	}}
}

// ClusterRuntime makes it name a ClusterTrainingRuntime instead.
func (b *TrainJobBuilder) ClusterRuntime() *TrainJobBuilder {
	b.obj.Spec.RuntimeRef.Kind = ptr.To(trainerv1alpha1.ClusterTrainingRuntimeKind)
	return b
}

// Nodes sets spec.trainer.numNodes.
func (b *TrainJobBuilder) Nodes(n int32) *TrainJobBuilder {
	b.trainer().NumNodes = ptr.To(n)
	return b
}

// Image sets spec.trainer.image.
func (b *TrainJobBuilder) Image(image string) *TrainJobBuilder {
	b.trainer().Image = ptr.To(image)
	return b
}

// Suspended sets spec.suspend.
func (b *TrainJobBuilder) Suspended(suspend bool) *TrainJobBuilder {
	b.obj.Spec.Suspend = ptr.To(suspend)
	return b
}

// Deadline sets spec.activeDeadlineSeconds.
func (b *TrainJobBuilder) Deadline(seconds int64) *TrainJobBuilder {
	b.obj.Spec.ActiveDeadlineSeconds = ptr.To(seconds)
	return b
}

// Queue queues it in a Kueue LocalQueue, with a workload priority class when one is named.
func (b *TrainJobBuilder) Queue(queue, priority string) *TrainJobBuilder {
	b.Label(trainerv1alpha1.LabelKueueQueueName, queue)
	if priority != "" {
		b.Label("kueue.x-k8s.io/priority-class", priority)
	}
	return b
}

// ManagedBy sets spec.managedBy (Kueue's webhook sets kueue.x-k8s.io/multikueue on a TrainJob
// MultiKueue dispatches).
func (b *TrainJobBuilder) ManagedBy(manager string) *TrainJobBuilder {
	b.obj.Spec.ManagedBy = ptr.To(manager)
	return b
}

// Label sets a label.
func (b *TrainJobBuilder) Label(key, value string) *TrainJobBuilder {
	if b.obj.Labels == nil {
		b.obj.Labels = map[string]string{}
	}
	b.obj.Labels[key] = value
	return b
}

// UID sets metadata.uid.
func (b *TrainJobBuilder) UID(uid string) *TrainJobBuilder {
	b.obj.UID = types.UID(uid)
	return b
}

// Generation sets metadata.generation (a fake client does not).
func (b *TrainJobBuilder) Generation(g int64) *TrainJobBuilder {
	b.obj.Generation = g
	return b
}

// Created sets the creation time.
func (b *TrainJobBuilder) Created(t metav1.Time) *TrainJobBuilder {
	b.obj.CreationTimestamp = t
	return b
}

// Condition sets a status condition.
func (b *TrainJobBuilder) Condition(c metav1.Condition) *TrainJobBuilder {
	b.obj.Status.Conditions = append(b.obj.Status.Conditions, c)
	return b
}

// Obj returns the TrainJob.
func (b *TrainJobBuilder) Obj() *trainerv1alpha1.TrainJob { return b.obj }

func (b *TrainJobBuilder) trainer() *trainerv1alpha1.Trainer {
	if b.obj.Spec.Trainer == nil {
		b.obj.Spec.Trainer = &trainerv1alpha1.Trainer{}
	}
	return b.obj.Spec.Trainer
}

// RuntimeSpecBuilder builds the spec of a TrainingRuntime or ClusterTrainingRuntime.
type RuntimeSpecBuilder struct {
	spec trainerv1alpha1.TrainingRuntimeSpec
}

// RuntimeSpec starts a torch runtime of nodes nodes whose one replicated job, "node", runs image
// as the trainer (Kubeflow's ancestor label), on the PodCliqueSet path.
func RuntimeSpec(image string, nodes int32) *RuntimeSpecBuilder {
	b := &RuntimeSpecBuilder{spec: trainerv1alpha1.TrainingRuntimeSpec{
		WorkloadKind: trainerv1alpha1.WorkloadKindPodCliqueSet,
		MLPolicy: &trainerv1alpha1.MLPolicy{NumNodes: ptr.To(nodes),
			MLPolicySource: trainerv1alpha1.MLPolicySource{Torch: &trainerv1alpha1.TorchMLPolicySource{}}},
	}}
	return b.ReplicatedJob("node", "trainer", image)
}

// RuntimeSpecOf starts from a copy of an existing spec, such as that of a runtime Kubeflow ships.
func RuntimeSpecOf(spec trainerv1alpha1.TrainingRuntimeSpec) *RuntimeSpecBuilder {
	return &RuntimeSpecBuilder{spec: *spec.DeepCopy()}
}

// ReplicatedJob adds a replicated job of one Job whose pods run image in a container named like
// the job; step is its trainer.kubeflow.org/trainjob-ancestor-step label ("" for none).
func (b *RuntimeSpecBuilder) ReplicatedJob(name, step, image string) *RuntimeSpecBuilder {
	rj := jobsetv1alpha2.ReplicatedJob{Name: name, Replicas: 1, Template: batchv1.JobTemplateSpec{
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: name, Image: image}},
		}}},
	}}
	if step != "" {
		rj.Template.Labels = map[string]string{"trainer.kubeflow.org/trainjob-ancestor-step": step}
	}
	b.spec.Template.Spec.ReplicatedJobs = append(b.spec.Template.Spec.ReplicatedJobs, rj)
	return b
}

// WorkloadKind sets what a TrainJob of it becomes (JobSet or PodCliqueSet).
func (b *RuntimeSpecBuilder) WorkloadKind(kind trainerv1alpha1.WorkloadKind) *RuntimeSpecBuilder {
	b.spec.WorkloadKind = kind
	return b
}

// TTL sets ttlSecondsAfterFinished.
func (b *RuntimeSpecBuilder) TTL(seconds int32) *RuntimeSpecBuilder {
	b.spec.TTLSecondsAfterFinished = ptr.To(seconds)
	return b
}

// MaxRestarts sets the JobSet template's failurePolicy.maxRestarts (a Training PodCliqueSet's
// maxRestarts on the PodCliqueSet path).
func (b *RuntimeSpecBuilder) MaxRestarts(n int32) *RuntimeSpecBuilder {
	b.spec.Template.Spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: n}
	return b
}

// PodSpecEdit applies edit to the pod spec of every replicated job added so far.
func (b *RuntimeSpecBuilder) PodSpecEdit(edit func(*corev1.PodSpec)) *RuntimeSpecBuilder {
	for i := range b.spec.Template.Spec.ReplicatedJobs {
		edit(&b.spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.Spec)
	}
	return b
}

// OnePodJobs makes the Job of every replicated job it has so far run one pod, never retried
// (parallelism and completions 1, backoffLimit 0).
func (b *RuntimeSpecBuilder) OnePodJobs() *RuntimeSpecBuilder {
	for i := range b.spec.Template.Spec.ReplicatedJobs {
		job := &b.spec.Template.Spec.ReplicatedJobs[i].Template.Spec
		job.Parallelism, job.Completions, job.BackoffLimit = ptr.To[int32](1), ptr.To[int32](1), ptr.To[int32](0)
	}
	return b
}

// PodLabel sets a label on the pod template of every replicated job it has so far.
func (b *RuntimeSpecBuilder) PodLabel(key, value string) *RuntimeSpecBuilder {
	return b.eachPodTemplate(func(m *metav1.ObjectMeta) { m.Labels = withEntry(m.Labels, key, value) })
}

// PodAnnotation sets an annotation on the pod template of every replicated job it has so far.
func (b *RuntimeSpecBuilder) PodAnnotation(key, value string) *RuntimeSpecBuilder {
	return b.eachPodTemplate(func(m *metav1.ObjectMeta) { m.Annotations = withEntry(m.Annotations, key, value) })
}

func (b *RuntimeSpecBuilder) eachPodTemplate(edit func(*metav1.ObjectMeta)) *RuntimeSpecBuilder {
	for i := range b.spec.Template.Spec.ReplicatedJobs {
		edit(&b.spec.Template.Spec.ReplicatedJobs[i].Template.Spec.Template.ObjectMeta)
	}
	return b
}

// withEntry returns m with key set to value, made when nil.
func withEntry(m map[string]string, key, value string) map[string]string {
	if m == nil {
		m = map[string]string{}
	}
	m[key] = value
	return m
}

// Spec returns the runtime spec.
func (b *RuntimeSpecBuilder) Spec() trainerv1alpha1.TrainingRuntimeSpec { return *b.spec.DeepCopy() }

// TrainingRuntime returns a namespaced runtime of this spec.
func (b *RuntimeSpecBuilder) TrainingRuntime(namespace, name string) *trainerv1alpha1.TrainingRuntime {
	return &trainerv1alpha1.TrainingRuntime{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: b.Spec()}
}

// ClusterTrainingRuntime returns a cluster-scoped runtime of this spec.
func (b *RuntimeSpecBuilder) ClusterTrainingRuntime(name string) *trainerv1alpha1.ClusterTrainingRuntime {
	return &trainerv1alpha1.ClusterTrainingRuntime{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: b.Spec()}
}

// JobSetBuilder builds a JobSet, as the trainer-controller leaves one behind.
type JobSetBuilder struct{ obj *jobsetv1alpha2.JobSet }

// JobSet starts an empty JobSet.
func JobSet(namespace, name string) *JobSetBuilder {
	return &JobSetBuilder{obj: &jobsetv1alpha2.JobSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, UID: types.UID("JobSet-" + name)},
	}}
}

// ControlledBy makes tj its controller, as the trainer-controller creates it.
func (b *JobSetBuilder) ControlledBy(tj *trainerv1alpha1.TrainJob) *JobSetBuilder {
	b.obj.OwnerReferences = append(b.obj.OwnerReferences, metav1.OwnerReference{APIVersion: trainerv1alpha1.GroupVersion.String(), Kind: "TrainJob",
		Name: tj.Name, UID: tj.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)})
	return b
}

// MarkedForDeletion sets its deletion timestamp, held by finalizers (an object without one is
// gone at once).
func (b *JobSetBuilder) MarkedForDeletion(at time.Time, finalizers ...string) *JobSetBuilder {
	b.obj.DeletionTimestamp = ptr.To(metav1.NewTime(at))
	b.obj.Finalizers = finalizers
	return b
}

// Obj returns the JobSet.
func (b *JobSetBuilder) Obj() *jobsetv1alpha2.JobSet { return b.obj }
