package plan

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// JAX's distributed environment (jax.distributed.initialize reads these).
const (
	EnvJAXNumProcesses       = "JAX_NUM_PROCESSES"
	EnvJAXProcessID          = "JAX_PROCESS_ID"
	EnvJAXCoordinatorAddress = "JAX_COORDINATOR_ADDRESS"
)

// applyJAX gives the trainer's "node" container JAX's multi-process environment, one process
// per node: JAX_NUM_PROCESSES (the trainer job's pod count), JAX_PROCESS_ID (the node rank) and
// JAX_COORDINATOR_ADDRESS (node 0 on port 29500), and exposes the port. As in Kubeflow Trainer
// v2.3, only a TrainJob with a spec.trainer gets them.
func applyJAX(tj *trainerv1alpha1.TrainJob, p *Plan, net Network) {
	rj, c := trainerNode(&p.Template.Spec)
	if tj.Spec.Trainer == nil || c == nil {
		return
	}
	nodes := ptr.Deref(rj.Template.Spec.Parallelism, 1)
	upsertEnv(&c.Env,
		corev1.EnvVar{Name: EnvJAXNumProcesses, Value: strconv.Itoa(int(nodes))},
		rankEnv(EnvJAXProcessID, net),
		corev1.EnvVar{Name: EnvJAXCoordinatorAddress, Value: net.Host(Node, 0) + ":" + strconv.Itoa(int(TrainerPort))},
	)
	upsertPort(&c.Ports, corev1.ContainerPort{ContainerPort: TrainerPort})
}
