package plan

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// Names of the replicated jobs and containers a runtime template is read by. A job is found by
// the ancestor label on its Job template (or, for MPI, by its name); a container by its name.
const (
	// AncestorLabel on a replicated job's Job template says which part of the TrainJob spec
	// configures it: AncestorTrainer, DatasetInitializer or ModelInitializer.
	AncestorLabel = trainerv1alpha1.LabelTrainJobAncestor
	// AncestorTrainer marks the job that spec.trainer configures.
	AncestorTrainer = trainerv1alpha1.AncestorTrainer
	// DatasetInitializer names the dataset initializer's ancestor value and container.
	DatasetInitializer = "dataset-initializer"
	// ModelInitializer names the model initializer's ancestor value and container.
	ModelInitializer = "model-initializer"
	// Node names the trainer container, and the job of the MPI worker nodes.
	Node = trainerv1alpha1.NodeName
	// Launcher names the MPI launcher job.
	Launcher = "launcher"
)

// TrainerPort is the port the trainer nodes talk on: torchrun's master port, exposed on the
// trainer container.
const TrainerPort int32 = 29500

// EnvStorageURI carries an initializer's spec.initializer.*.storageUri.
const EnvStorageURI = "STORAGE_URI"

// torchrun's environment (PyTorch elastic reads PET_<FLAG>).
const (
	EnvTorchNumNodes       = "PET_NNODES"
	EnvTorchNumProcPerNode = "PET_NPROC_PER_NODE"
	EnvTorchNodeRank       = "PET_NODE_RANK"
	EnvTorchMasterAddr     = "PET_MASTER_ADDR"
	EnvTorchMasterPort     = "PET_MASTER_PORT"
)

// NumProcPerNodeAuto lets torchrun pick one process per GPU.
const NumProcPerNodeAuto = "auto"

// OpenMPI's environment on the launcher.
const (
	EnvOpenMPIHostfile       = "OMPI_MCA_orte_default_hostfile"
	EnvOpenMPIKeepFQDNHosts  = "OMPI_MCA_orte_keep_fqdn_hostnames"
	EnvOpenMPIDefaultSlots   = "OMPI_MCA_orte_set_default_slots"
	EnvOpenMPIRSHArgs        = "OMPI_MCA_plm_rsh_args"
	OpenMPIRSHArgs           = "-o ConnectionAttempts=10"
	DefaultSSHAuthMountPath  = "/root/.ssh"
	MPIHostfileDir           = "/etc/mpi"
	MPIHostfileKey           = "hostfile"
	MPISSHAuthVolume         = "mpi-ssh-auth"
	MPIHostfileVolume        = "mpi-hostfile"
	MPISSHPublicKeyKey       = "ssh-publickey"
	MPISSHPrivateKeyFile     = "id_rsa"
	MPISSHPublicKeyFile      = "id_rsa.pub"
	MPISSHAuthorizedKeysFile = "authorized_keys"
)

// File modes of the MPI volumes' items.
const (
	MPISSHAuthDefaultMode    int32 = 0o400
	MPISSHPrivateKeyFileMode int32 = 0o640
	MPISSHPublicKeyFileMode  int32 = 0o644
	MPIHostfileMode          int32 = 0o444
)

// JobCompletionIndexFieldPath is the downward-API path of an indexed Job pod's index: a node's
// rank on the JobSet path.
var JobCompletionIndexFieldPath = fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation)

// SSHAuthSecretName is the MPI SSH key Secret of a TrainJob.
func SSHAuthSecretName(trainJob string) string { return trainJob + "-mpi-ssh-auth" }

// HostfileConfigMapName is the MPI hostfile ConfigMap of a TrainJob.
func HostfileConfigMapName(trainJob string) string { return trainJob + "-mpi-hostfile" }
