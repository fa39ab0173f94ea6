package plan

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// applyTorch gives torchrun its rendezvous.
//
// The trainer job's "node" container gets PET_NNODES (the trainer job's pod count),
// PET_NPROC_PER_NODE, PET_NODE_RANK (from net.RankFieldPath), PET_MASTER_ADDR (pod 0 of the
// "node" job) and PET_MASTER_PORT, and exposes port 29500 — only when the TrainJob has a
// spec.trainer, as in Kubeflow Trainer v2.3. A torchtune TrainJob (command "tune run") gets its
// rendezvous, recipe and config on the command line instead of the master env. Every
// envInjection target container gets all five variables whatever the TrainJob says.
func applyTorch(tj *trainerv1alpha1.TrainJob, rt *Runtime, p *Plan, net Network) error {
	spec := &p.Template.Spec
	trainerJob, node := trainerNode(spec)
	numNodes := int32(1)
	if trainerJob != nil {
		numNodes = ptr.Deref(trainerJob.Template.Spec.Parallelism, 1)
	}
	pet := []corev1.EnvVar{
		{Name: EnvTorchNumNodes, Value: strconv.Itoa(int(numNodes))},
		{Name: EnvTorchNumProcPerNode, Value: p.NumProcPerNode},
		rankEnv(EnvTorchNodeRank, net),
	}
	master := []corev1.EnvVar{
		{Name: EnvTorchMasterAddr, Value: net.Host(Node, 0)},
		{Name: EnvTorchMasterPort, Value: strconv.Itoa(int(TrainerPort))},
	}

	if tr := tj.Spec.Trainer; tr != nil && node != nil {
		upsertEnv(&node.Env, pet...)
		if isTorchTune(tr.Command) {
			node.Command = torchTuneCommand(tj, rt, p, numNodes, net)
		} else {
			upsertEnv(&node.Env, master...)
		}
		upsertPort(&node.Ports, corev1.ContainerPort{ContainerPort: TrainerPort})
	}

	if inj := rt.Spec.MLPolicy.Torch.EnvInjection; inj != nil {
		for i, target := range inj.Targets {
			rj := replicatedJob(spec, target.JobName)
			for j, name := range target.ContainerNames {
				var c *corev1.Container
				if rj != nil {
					c = containerOrInit(&rj.Template.Spec.Template.Spec, name)
				}
				if c == nil {
					return fmt.Errorf("%s %q: spec.mlPolicy.torch.envInjection.targets[%d].containerNames[%d]: replicated job %q has no container %q",
						rt.Kind, rt.Name, i, j, target.JobName, name)
				}
				upsertEnv(&c.Env, pet...)
				upsertEnv(&c.Env, master...)
			}
		}
	}
	return nil
}
