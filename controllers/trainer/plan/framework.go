package plan

import (
	"errors"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// Network says how the pods of one workload reach each other.
type Network struct {
	// Hostname is the hostname of pod index of replicated job job. The index counts the pods
	// of every replica of the job in turn.
	Hostname func(job string, index int) string
	// Subdomain is the headless Service that gives the pods their DNS names.
	Subdomain string
	// RankFieldPath is the downward-API fieldPath giving a node pod its rank.
	RankFieldPath string
}

// Host is the DNS name of pod index of replicated job job, `<hostname>.<subdomain>`.
func (n Network) Host(job string, index int) string {
	return n.Hostname(job, index) + "." + n.Subdomain
}

// ApplyFramework injects the ML framework's environment into p.Template's pod templates and
// returns the objects that must exist before the pods start (namespaced, without owner
// references).
//
// Torch (torch.go): PET_* env and port 29500 on the trainer's "node" container, PET_* env on the
// envInjection targets, and torchtune's command. MPI (mpi.go): the SSH key Secret and the
// hostfile ConfigMap, their volumes and mounts, and OpenMPI's env on the launcher. JAX (jax.go)
// and XGBoost (xgboost.go): their coordinator's address, the node's rank and the process count
// on the trainer's "node" container. Flux (flux.go): the installer init container, the broker
// configuration ConfigMap, the CURVE certificate Secret and the wrapped command. Without an ML
// framework nothing changes (the TrainJob's env and node count apply to every runtime).
//
// The MPI Secret's key is new on every call: the Secret is immutable, so callers create it
// once and never update it.
func ApplyFramework(tj *trainerv1alpha1.TrainJob, rt *Runtime, p *Plan, net Network) ([]client.Object, error) {
	if tj == nil || rt == nil || p == nil {
		return nil, errors.New("the framework needs a TrainJob, its runtime and its plan")
	}
	if net.Hostname == nil || net.Subdomain == "" {
		return nil, errors.New("the framework needs the workload's network")
	}
	if err := CheckSupported(rt); err != nil {
		return nil, err
	}
	mp := rt.Spec.MLPolicy
	switch {
	case mp != nil && mp.Torch != nil:
		return nil, applyTorch(tj, rt, p, net)
	case mp != nil && mp.MPI != nil:
		return applyMPI(tj, rt, p, net)
	case mp != nil && mp.JAX != nil:
		applyJAX(tj, p, net)
	case mp != nil && mp.XGBoost != nil:
		applyXGBoost(tj, p, net)
	case mp != nil && mp.Flux != nil:
		return applyFlux(tj, rt, p, net)
	}
	return nil, nil
}

// trainerNode is the trainer job and its "node" container, or nils.
func trainerNode(spec *jobsetv1alpha2.JobSetSpec) (*jobsetv1alpha2.ReplicatedJob, *corev1.Container) {
	for i := range spec.ReplicatedJobs {
		rj := &spec.ReplicatedJobs[i]
		if ancestorOf(rj) == AncestorTrainer {
			return rj, container(&rj.Template.Spec.Template.Spec, Node)
		}
	}
	return nil, nil
}

// rankEnv is a variable holding the pod's node rank.
func rankEnv(name string, net Network) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: net.RankFieldPath}}}
}
