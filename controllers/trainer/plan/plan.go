// Package plan turns a TrainJob and its runtime into the pod templates both workload paths
// build from: the runtime's JobSet template with the TrainJob's runtime patches, trainer and
// initializer overrides applied (NewPlan), then the ML framework's environment, volumes and
// supporting objects (ApplyFramework). It follows Kubeflow Trainer v2.3, which the TrainJob API
// is wire-compatible with; the JobSet path (controllers/trainer/tojobset) and the PodCliqueSet
// path differ only in how pods are addressed (Network).
package plan

import (
	"errors"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// Runtime is the runtime a TrainJob uses, as snapshotted when it started.
type Runtime struct {
	Kind string // TrainingRuntime or ClusterTrainingRuntime
	Name string
	Spec trainerv1alpha1.TrainingRuntimeSpec
}

// Plan is the runtime's JobSet template with one TrainJob's overrides applied.
type Plan struct {
	// Template is the runtime's JobSet template after the TrainJob's runtime patches (in list
	// order), its trainer and initializer overrides. Its metadata holds only the labels and
	// annotations to put on the workload (the runtime template's, then each patch's). Every
	// replicated job has parallelism = completions = its pod count, counted as Kubeflow Trainer
	// v2.3 does (setPodCounts): the trainer job runs NumNodes pods; for MPI trainer.numNodes sets
	// the "node" job instead (one less when the launcher runs as a node).
	Template trainerv1alpha1.JobSetTemplateSpec
	// NumNodes is trainer.numNodes, else mlPolicy.numNodes, else 1.
	NumNodes int32
	// NumProcPerNode is PET_NPROC_PER_NODE for torch: trainer.numProcPerNode, else "auto" when a
	// node has GPUs, else its CPU count (at least 1). For MPI it is the slots per node:
	// trainer.numProcPerNode, else mlPolicy.mpi.numProcPerNode (1 by default), and when that is 1
	// the node's GPU count if above 1. Otherwise trainer.numProcPerNode, else "1".
	NumProcPerNode string
}

// NewPlan applies a TrainJob's overrides to a copy of its runtime's template. A runtime with a
// policy this project does not implement gets an *UnsupportedError.
func NewPlan(tj *trainerv1alpha1.TrainJob, rt *Runtime) (*Plan, error) {
	if tj == nil || rt == nil {
		return nil, errors.New("a plan needs a TrainJob and its runtime")
	}
	if err := CheckSupported(rt); err != nil {
		return nil, err
	}
	tmpl := rt.Spec.Template.DeepCopy()
	labels, annotations := workloadMetadata(tj, tmpl.ObjectMeta)
	if err := applyRuntimePatches(tj, rt, &tmpl.Spec); err != nil {
		return nil, err
	}
	p := &Plan{Template: trainerv1alpha1.JobSetTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
		Spec:       tmpl.Spec,
	}}
	spec := &p.Template.Spec
	mergeResourcesPerNode(tj, rt, spec)
	setPodCounts(tj, rt, spec)
	applyInitializers(tj, spec)
	applyTrainer(tj, rt, spec)

	p.NumNodes = 1
	if mp := rt.Spec.MLPolicy; mp != nil && mp.NumNodes != nil {
		p.NumNodes = *mp.NumNodes
	}
	if tr := tj.Spec.Trainer; tr != nil && tr.NumNodes != nil {
		p.NumNodes = *tr.NumNodes
	}
	p.NumProcPerNode = numProcPerNode(tj, rt, spec)
	return p, nil
}

// workloadMetadata is the runtime template's labels and annotations with each runtime patch's
// template metadata laid over them in list order.
func workloadMetadata(tj *trainerv1alpha1.TrainJob, meta metav1.ObjectMeta) (map[string]string, map[string]string) {
	labels, annotations := maps.Clone(meta.Labels), maps.Clone(meta.Annotations)
	for _, patch := range tj.Spec.RuntimePatches {
		if patch.TrainingRuntimeSpec == nil || patch.TrainingRuntimeSpec.Template == nil || patch.TrainingRuntimeSpec.Template.Metadata == nil {
			continue
		}
		m := patch.TrainingRuntimeSpec.Template.Metadata
		if len(m.Labels) > 0 && labels == nil {
			labels = map[string]string{}
		}
		maps.Copy(labels, m.Labels)
		if len(m.Annotations) > 0 && annotations == nil {
			annotations = map[string]string{}
		}
		maps.Copy(annotations, m.Annotations)
	}
	return labels, annotations
}

func runLauncherAsNode(rt *Runtime) bool {
	mp := rt.Spec.MLPolicy
	return mp != nil && mp.MPI != nil && ptr.Deref(mp.MPI.RunLauncherAsNode, false)
}

// trainsOnNode says whether spec.trainer's env and resourcesPerNode reach the "node" container
// of a replicated job: the trainer job's, and the MPI node job's when the launcher is a node.
func trainsOnNode(rt *Runtime, rj *jobsetv1alpha2.ReplicatedJob) bool {
	return ancestorOf(rj) == AncestorTrainer || (runLauncherAsNode(rt) && rj.Name == Node)
}

// mergeResourcesPerNode lays trainer.resourcesPerNode over the "node" container's resources:
// each named limit, request and claim of the TrainJob wins, the runtime's others stay.
func mergeResourcesPerNode(tj *trainerv1alpha1.TrainJob, rt *Runtime, spec *jobsetv1alpha2.JobSetSpec) {
	tr := tj.Spec.Trainer
	if tr == nil || tr.ResourcesPerNode == nil || rt.Spec.MLPolicy == nil {
		return
	}
	for i := range spec.ReplicatedJobs {
		rj := &spec.ReplicatedJobs[i]
		if !trainsOnNode(rt, rj) {
			continue
		}
		if c := container(&rj.Template.Spec.Template.Spec, Node); c != nil {
			c.Resources = mergeResources(c.Resources, *tr.ResourcesPerNode)
		}
	}
}

func mergeResources(base, over corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := *base.DeepCopy()
	if len(over.Limits) > 0 {
		if out.Limits == nil {
			out.Limits = corev1.ResourceList{}
		}
		for k, v := range over.Limits {
			out.Limits[k] = v.DeepCopy()
		}
	}
	if len(over.Requests) > 0 {
		if out.Requests == nil {
			out.Requests = corev1.ResourceList{}
		}
		for k, v := range over.Requests {
			out.Requests[k] = v.DeepCopy()
		}
	}
	for _, claim := range over.Claims {
		i := slices.IndexFunc(out.Claims, func(c corev1.ResourceClaim) bool { return c.Name == claim.Name })
		switch {
		case i < 0:
			out.Claims = append(out.Claims, claim)
		case claim.Request != "":
			out.Claims[i].Request = claim.Request
		}
	}
	return out
}

// setPodCounts sets every replicated job's parallelism and completions to its pod count. A job
// counts its template's parallelism (at least 1), except the trainer job, which runs
// mlPolicy.numNodes pods. trainer.numNodes then sets the trainer job's count, or for MPI the
// "node" job's (one less, at least 1, when the launcher runs as a node).
func setPodCounts(tj *trainerv1alpha1.TrainJob, rt *Runtime, spec *jobsetv1alpha2.JobSetSpec) {
	mp := rt.Spec.MLPolicy
	counts := make([]int32, len(spec.ReplicatedJobs))
	for i := range spec.ReplicatedJobs {
		rj := &spec.ReplicatedJobs[i]
		n := ptr.Deref(rj.Template.Spec.Parallelism, 1)
		if ancestorOf(rj) == AncestorTrainer && mp != nil {
			n = ptr.Deref(mp.NumNodes, 1)
		}
		counts[i] = max(n, 1)
	}
	if tr := tj.Spec.Trainer; tr != nil && tr.NumNodes != nil {
		n := *tr.NumNodes
		if mp != nil && mp.MPI != nil {
			if i := slices.IndexFunc(spec.ReplicatedJobs, func(rj jobsetv1alpha2.ReplicatedJob) bool { return rj.Name == Node }); i >= 0 {
				if runLauncherAsNode(rt) {
					n = max(n-1, 1)
				}
				counts[i] = n
			}
		} else if i := slices.IndexFunc(spec.ReplicatedJobs, func(rj jobsetv1alpha2.ReplicatedJob) bool { return ancestorOf(&rj) == AncestorTrainer }); i >= 0 {
			counts[i] = n
		}
	}
	for i := range spec.ReplicatedJobs {
		job := &spec.ReplicatedJobs[i].Template.Spec
		job.Parallelism, job.Completions = ptr.To(counts[i]), ptr.To(counts[i])
	}
}

// applyInitializers runs each initializer job once and hands its container the TrainJob's
// storageUri (as STORAGE_URI), env and secretRef (as envFrom).
func applyInitializers(tj *trainerv1alpha1.TrainJob, spec *jobsetv1alpha2.JobSetSpec) {
	ini := tj.Spec.Initializer
	for i := range spec.ReplicatedJobs {
		rj := &spec.ReplicatedJobs[i]
		var uri *string
		var env []corev1.EnvVar
		var secret *corev1.LocalObjectReference
		switch ancestorOf(rj) {
		case DatasetInitializer:
			rj.Replicas = 1
			if ini == nil || ini.Dataset == nil {
				continue
			}
			uri, env, secret = ini.Dataset.StorageUri, ini.Dataset.Env, ini.Dataset.SecretRef
		case ModelInitializer:
			rj.Replicas = 1
			if ini == nil || ini.Model == nil {
				continue
			}
			uri, env, secret = ini.Model.StorageUri, ini.Model.Env, ini.Model.SecretRef
		default:
			continue
		}
		c := container(&rj.Template.Spec.Template.Spec, ancestorOf(rj))
		if c == nil {
			continue
		}
		if uri != nil {
			upsertEnv(&c.Env, corev1.EnvVar{Name: EnvStorageURI, Value: *uri})
		}
		upsertEnv(&c.Env, env...)
		if secret != nil {
			c.EnvFrom = append(c.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: *secret}})
		}
	}
}

// applyTrainer runs the trainer job once and gives its "node" container the TrainJob's image,
// command and args; the TrainJob's env also reaches the MPI node job's when the launcher runs
// as a node.
func applyTrainer(tj *trainerv1alpha1.TrainJob, rt *Runtime, spec *jobsetv1alpha2.JobSetSpec) {
	tr := tj.Spec.Trainer
	for i := range spec.ReplicatedJobs {
		rj := &spec.ReplicatedJobs[i]
		c := container(&rj.Template.Spec.Template.Spec, Node)
		if ancestorOf(rj) == AncestorTrainer {
			rj.Replicas = 1
			if tr != nil && c != nil {
				if tr.Image != nil {
					c.Image = *tr.Image
				}
				if tr.Command != nil {
					c.Command = slices.Clone(tr.Command)
				}
				if tr.Args != nil {
					c.Args = slices.Clone(tr.Args)
				}
			}
		}
		if tr != nil && c != nil && trainsOnNode(rt, rj) {
			upsertEnv(&c.Env, tr.Env...)
		}
	}
}

// numProcPerNode resolves Plan.NumProcPerNode (see there).
func numProcPerNode(tj *trainerv1alpha1.TrainJob, rt *Runtime, spec *jobsetv1alpha2.JobSetSpec) string {
	tr := tj.Spec.Trainer
	if tr != nil && tr.NumProcPerNode != nil {
		return strconv.Itoa(int(*tr.NumProcPerNode))
	}
	res := resourcesPerNode(tj, spec)
	mp := rt.Spec.MLPolicy
	switch {
	case mp != nil && mp.Torch != nil:
		if trainerv1alpha1.GPUsPerNode(res) > 0 {
			return NumProcPerNodeAuto
		}
		return strconv.Itoa(max(1, cpusPerNode(res)))
	case mp != nil && mp.MPI != nil:
		n := int(ptr.Deref(mp.MPI.NumProcPerNode, 1))
		if g := trainerv1alpha1.GPUsPerNode(res); n == 1 && g > 1 {
			n = g
		}
		return strconv.Itoa(n)
	}
	return "1"
}

// resourcesPerNode is what a node asks for when working out processes per node:
// trainer.resourcesPerNode as given, else the runtime's.
func resourcesPerNode(tj *trainerv1alpha1.TrainJob, spec *jobsetv1alpha2.JobSetSpec) corev1.ResourceRequirements {
	if tr := tj.Spec.Trainer; tr != nil && tr.ResourcesPerNode != nil {
		return *tr.ResourcesPerNode
	}
	return trainerv1alpha1.NodeResources(spec)
}

// cpusPerNode is the CPU request, else limit, rounded up to whole CPUs.
func cpusPerNode(res corev1.ResourceRequirements) int {
	if q, ok := res.Requests[corev1.ResourceCPU]; ok && !q.IsZero() {
		return int(q.Value())
	}
	q := res.Limits[corev1.ResourceCPU]
	return int(q.Value())
}
