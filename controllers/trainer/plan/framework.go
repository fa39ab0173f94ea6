package plan

import (
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// Network says how the pods of one workload reach each other.
type Network struct {
	// Host is the DNS name of pod index of replicated job job. The index counts the pods of
	// every replica of the job in turn.
	Host func(job string, index int) string
	// RankFieldPath is the downward-API fieldPath giving a node pod its rank.
	RankFieldPath string
}

// ApplyFramework injects the ML framework's environment into p.Template's pod templates and
// returns the objects that must exist before the pods start (namespaced, without owner
// references).
//
// Torch (torch.go): PET_* env and port 29500 on the trainer's "node" container, PET_* env on the
// envInjection targets, and torchtune's command. MPI (mpi.go): the SSH key Secret and the
// hostfile ConfigMap, their volumes and mounts, and OpenMPI's env on the launcher. Without an
// ML framework nothing changes.
//
// The MPI Secret's key is new on every call: the Secret is immutable, so callers create it
// once and never update it.
func ApplyFramework(tj *trainerv1alpha1.TrainJob, rt *Runtime, p *Plan, net Network) ([]client.Object, error) {
	if tj == nil || rt == nil || p == nil {
		return nil, errors.New("the framework needs a TrainJob, its runtime and its plan")
	}
	if net.Host == nil {
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
	}
	return nil, nil
}
