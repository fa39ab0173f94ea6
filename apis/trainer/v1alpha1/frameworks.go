package v1alpha1

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
)

// Names a runtime template is read by, as Kubeflow Trainer v2.3 reads them.
const (
	// LabelTrainJobAncestor on a replicated job's Job template says which part of the TrainJob
	// spec configures it; AncestorTrainer marks the job spec.trainer configures.
	LabelTrainJobAncestor = "trainer.kubeflow.org/trainjob-ancestor-step"
	AncestorTrainer       = "trainer"
	// NodeName names the trainer container (and the MPI node job).
	NodeName = "node"
	// FluxInstallerContainer is the init container the Flux runtime adds to every node; a
	// runtime may not use the name.
	FluxInstallerContainer = "flux-installer"
)

// XGBoost's collective (Rabit) environment, set by the XGBoost runtime on the trainer; a
// TrainJob may not set them.
const (
	EnvXGBoostTrackerURI  = "DMLC_TRACKER_URI"
	EnvXGBoostTrackerPort = "DMLC_TRACKER_PORT"
	EnvXGBoostTaskID      = "DMLC_TASK_ID"
	EnvXGBoostNumWorker   = "DMLC_NUM_WORKER"
)

// XGBoostReservedEnv lists XGBoost's collective variables.
var XGBoostReservedEnv = []string{EnvXGBoostTrackerURI, EnvXGBoostTrackerPort, EnvXGBoostTaskID, EnvXGBoostNumWorker}

// GPUsPerNode is the count of the first resource whose name mentions "gpu", from the requests,
// else from the limits: how Kubeflow Trainer counts a node's GPUs whatever their vendor.
func GPUsPerNode(res corev1.ResourceRequirements) int {
	if n := gpus(res.Requests); n > 0 {
		return n
	}
	return gpus(res.Limits)
}

func gpus(list corev1.ResourceList) int {
	for _, name := range slices.Sorted(maps.Keys(list)) {
		if strings.Contains(strings.ToLower(string(name)), "gpu") {
			q := list[name]
			return int(q.Value())
		}
	}
	return 0
}

// NodeResources is the resources of the first "node" container, in the "node" job or the
// trainer job, that sets any: what a node of the template asks for.
func NodeResources(spec *jobsetv1alpha2.JobSetSpec) corev1.ResourceRequirements {
	for i := range spec.ReplicatedJobs {
		rj := &spec.ReplicatedJobs[i]
		if rj.Name != NodeName && rj.Template.Labels[LabelTrainJobAncestor] != AncestorTrainer {
			continue
		}
		for _, c := range rj.Template.Spec.Template.Spec.Containers {
			if c.Name == NodeName && (len(c.Resources.Limits) > 0 || len(c.Resources.Requests) > 0) {
				return c.Resources
			}
		}
	}
	return corev1.ResourceRequirements{}
}
