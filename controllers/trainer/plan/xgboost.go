package plan

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// XGBoost's collective (Rabit) environment.
const (
	EnvXGBoostTrackerURI  = trainerv1alpha1.EnvXGBoostTrackerURI
	EnvXGBoostTrackerPort = trainerv1alpha1.EnvXGBoostTrackerPort
	EnvXGBoostTaskID      = trainerv1alpha1.EnvXGBoostTaskID
	EnvXGBoostNumWorker   = trainerv1alpha1.EnvXGBoostNumWorker
)

// applyXGBoost gives the trainer's "node" container the Rabit tracker's address (node 0, port
// 29500), the node's rank as DMLC_TASK_ID and DMLC_NUM_WORKER: one worker per GPU of a node (one
// per node without GPUs) times the nodes; and exposes the port. As in Kubeflow Trainer v2.3,
// only a TrainJob with a spec.trainer gets them.
func applyXGBoost(tj *trainerv1alpha1.TrainJob, p *Plan, net Network) {
	rj, c := trainerNode(&p.Template.Spec)
	if tj.Spec.Trainer == nil || c == nil {
		return
	}
	nodes := int(ptr.Deref(rj.Template.Spec.Parallelism, 1))
	upsertEnv(&c.Env,
		corev1.EnvVar{Name: EnvXGBoostTrackerURI, Value: net.Host(Node, 0)},
		corev1.EnvVar{Name: EnvXGBoostTrackerPort, Value: strconv.Itoa(int(TrainerPort))},
		rankEnv(EnvXGBoostTaskID, net),
		corev1.EnvVar{Name: EnvXGBoostNumWorker, Value: strconv.Itoa(nodes * XGBoostWorkersPerNode(tj, &p.Template.Spec))},
	)
	upsertPort(&c.Ports, corev1.ContainerPort{ContainerPort: TrainerPort})
}

// XGBoostWorkersPerNode is one worker per GPU of a node, or one for a node without GPUs; a
// node's resources are trainer.resourcesPerNode when given, else the runtime's.
func XGBoostWorkersPerNode(tj *trainerv1alpha1.TrainJob, spec *jobsetv1alpha2.JobSetSpec) int {
	return max(trainerv1alpha1.GPUsPerNode(resourcesPerNode(tj, spec)), 1)
}
