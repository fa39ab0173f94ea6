package tojobset

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/plan"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/builders"
)

// The expectations below are Kubeflow Trainer v2.3.0's contract, written down from its source
// (pkg/runtime/framework/plugins/{torch,mpi,jobset}, pkg/constants) and its shipped runtimes, not
// from this package's output.

const kubeflowTrainerVersion = "v2.3.0"

// kubeflowRuntime decodes one of Kubeflow Trainer's shipped ClusterTrainingRuntimes.
func kubeflowRuntime(t *testing.T, file string) *plan.Runtime {
	t.Helper()
	dir, err := apiserver.ModuleDir("github.com/kubeflow/trainer/v2", kubeflowTrainerVersion)
	require.NoError(t, err)
	raw, err := os.ReadFile(filepath.Join(dir, "manifests", "base", "runtimes", file))
	require.NoError(t, err)
	var ctr trainerv1alpha1.ClusterTrainingRuntime
	require.NoError(t, yaml.UnmarshalStrict(raw, &ctr), "our API decodes Kubeflow's runtime unchanged")
	return &plan.Runtime{Kind: trainerv1alpha1.ClusterTrainingRuntimeKind, Name: ctr.Name, Spec: ctr.Spec}
}

func kubeflowTrainJob(t *testing.T, runtime, trainer string) *trainerv1alpha1.TrainJob {
	t.Helper()
	return simpleTrainJob(t, "runtimeRef: {name: "+runtime+"}\n"+trainer)
}

func jobNames(js *jobsetv1alpha2.JobSet) []string {
	var out []string
	for _, rj := range js.Spec.ReplicatedJobs {
		out = append(out, rj.Name)
	}
	return out
}

func containerNames(rj *jobsetv1alpha2.ReplicatedJob) []string {
	var out []string
	for _, c := range rj.Template.Spec.Template.Spec.Containers {
		out = append(out, c.Name)
	}
	return out
}

var nodeRank = corev1.EnvVar{Name: "PET_NODE_RANK", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
	FieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']",
}}}

func TestKubeflowTorchDistributedRuntimeKeepsKubeflowsContract(t *testing.T) {
	rt := kubeflowRuntime(t, "torch_distributed.yaml")
	require.Equal(t, "torch-distributed", rt.Name)
	cases := []struct {
		name      string
		trainer   string
		wantNodes int32
		wantEnv   []corev1.EnvVar
		wantPorts []corev1.ContainerPort
	}{
		{
			// Kubeflow's torch plugin injects PET_* and the port only when spec.trainer is set.
			name:      "runtimeRef only",
			wantNodes: 1,
		},
		{
			name:      "three nodes",
			trainer:   "trainer: {numNodes: 3}",
			wantNodes: 3,
			wantEnv: []corev1.EnvVar{
				{Name: "PET_NNODES", Value: "3"},
				{Name: "PET_NPROC_PER_NODE", Value: "1"}, // no GPU and no CPU resources: one process
				nodeRank,
				{Name: "PET_MASTER_ADDR", Value: "tj-node-0-0.tj"},
				{Name: "PET_MASTER_PORT", Value: "29500"},
			},
			wantPorts: []corev1.ContainerPort{{ContainerPort: 29500}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			js, objs, err := Build(kubeflowTrainJob(t, "torch-distributed", tc.trainer), rt, false, plan.Options{})
			require.NoError(t, err)
			assert.Empty(t, objs, "no gang policy, no MPI")
			assert.Equal(t, "tj", js.Name)
			assert.Equal(t, "ns", js.Namespace)
			assert.Equal(t, "jobset.x-k8s.io/v1alpha2", js.APIVersion)
			assert.Equal(t, "JobSet", js.Kind)
			assert.Equal(t, "tj", js.Spec.Network.Subdomain)
			assert.Equal(t, ptr.To(true), js.Spec.Network.EnableDNSHostnames)
			assert.Equal(t, []string{"node"}, jobNames(js))

			node := &js.Spec.ReplicatedJobs[0]
			assert.EqualValues(t, 1, node.Replicas)
			assert.Equal(t, ptr.To(tc.wantNodes), node.Template.Spec.Parallelism)
			assert.Equal(t, ptr.To(tc.wantNodes), node.Template.Spec.Completions)
			assert.Equal(t, map[string]string{"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}, node.Template.Labels)
			assert.Equal(t, []string{"node"}, containerNames(node))
			c := node.Template.Spec.Template.Spec.Containers[0]
			assert.Equal(t, "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime", c.Image)
			assert.Equal(t, tc.wantEnv, c.Env)
			assert.Equal(t, tc.wantPorts, c.Ports)
		})
	}
}

func TestKubeflowTorchTuneRuntimeBuildsKubeflowsCommand(t *testing.T) {
	rt := kubeflowRuntime(t, filepath.Join("torchtune", "llama3_2", "llama3_2_1B.yaml"))
	require.Equal(t, "torchtune-llama3.2-1b", rt.Name)
	js, _, err := Build(kubeflowTrainJob(t, rt.Name, "trainer: {command: [tune, run]}"), rt, false, plan.Options{})
	require.NoError(t, err)
	assert.Equal(t, []string{"dataset-initializer", "model-initializer", "node"}, jobNames(js))
	c := js.Spec.ReplicatedJobs[2].Template.Spec.Template.Spec.Containers[0]
	// Two GPUs per node (the runtime's limit) on one node: distributed full fine-tuning with the
	// rendezvous on pod 0, then the runtime's output, tokenizer and checkpoint paths.
	assert.Equal(t, []string{
		"tune", "run",
		"--rdzv_endpoint=tj-node-0-0.tj:29500",
		"full_finetune_distributed", "--config", "llama3_2/1B_full",
		"output_dir=/workspace/output",
		"tokenizer.path=/workspace/model/original/tokenizer.model",
		"checkpointer.checkpoint_dir=/workspace/model",
	}, c.Command)
	assert.Equal(t, []corev1.EnvVar{
		{Name: "PET_NNODES", Value: "1"},
		{Name: "PET_NPROC_PER_NODE", Value: "auto"},
		nodeRank,
	}, c.Env, "torchtune gets no PET_MASTER_* env")
	assert.Equal(t, []corev1.ContainerPort{{ContainerPort: 29500}}, c.Ports)
}

func TestKubeflowMPIRuntimesKeepKubeflowsContract(t *testing.T) {
	for _, file := range []string{"deepspeed_distributed.yaml", "mlx_distributed.yaml"} {
		rt := kubeflowRuntime(t, file)
		cases := []struct {
			name         string
			trainer      string
			wantNodes    int32
			wantHostfile string
		}{
			{
				// The launcher runs as a node: the node job keeps its single pod.
				name: "runtimeRef only", wantNodes: 1,
				wantHostfile: "tj-node-0-0.tj slots=1\ntj-launcher-0-0.tj slots=1\n",
			},
			{
				name: "three nodes", trainer: "trainer: {numNodes: 3}", wantNodes: 2,
				wantHostfile: "tj-node-0-0.tj slots=1\ntj-node-0-1.tj slots=1\ntj-launcher-0-0.tj slots=1\n",
			},
		}
		for _, tc := range cases {
			t.Run(rt.Name+"/"+tc.name, func(t *testing.T) {
				js, objs, err := Build(kubeflowTrainJob(t, rt.Name, tc.trainer), rt, false, plan.Options{})
				require.NoError(t, err)
				assert.Equal(t, []string{"node", "launcher"}, jobNames(js))
				assert.Equal(t, jobsetv1alpha2.Network{EnableDNSHostnames: ptr.To(true), Subdomain: "tj", PublishNotReadyAddresses: ptr.To(true)}, *js.Spec.Network)
				assert.Equal(t, &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAll, TargetReplicatedJobs: []string{"launcher"}}, js.Spec.SuccessPolicy)

				node, launcher := &js.Spec.ReplicatedJobs[0], &js.Spec.ReplicatedJobs[1]
				assert.Equal(t, ptr.To(tc.wantNodes), node.Template.Spec.Parallelism)
				assert.Equal(t, ptr.To[int32](1), launcher.Template.Spec.Parallelism)
				assert.Equal(t, []jobsetv1alpha2.DependsOn{{Name: "node", Status: jobsetv1alpha2.DependencyReady}}, launcher.DependsOn)
				assert.Equal(t, []string{"node"}, containerNames(node))
				assert.Equal(t, []string{"node"}, containerNames(launcher))

				sshVolume := corev1.Volume{Name: "mpi-ssh-auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
					SecretName: "tj-mpi-ssh-auth", DefaultMode: ptr.To[int32](0o400),
					Items: []corev1.KeyToPath{
						{Key: "ssh-privatekey", Path: "id_rsa", Mode: ptr.To[int32](0o640)},
						{Key: "ssh-publickey", Path: "id_rsa.pub", Mode: ptr.To[int32](0o644)},
						{Key: "ssh-publickey", Path: "authorized_keys", Mode: ptr.To[int32](0o644)},
					},
				}}}
				hostfileVolume := corev1.Volume{Name: "mpi-hostfile", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "tj-mpi-hostfile"},
					Items:                []corev1.KeyToPath{{Key: "hostfile", Path: "hostfile", Mode: ptr.To[int32](0o444)}},
				}}}
				sshMount := corev1.VolumeMount{Name: "mpi-ssh-auth", MountPath: "/home/mpiuser/.ssh"}

				nodePod, launcherPod := node.Template.Spec.Template.Spec, launcher.Template.Spec.Template.Spec
				assert.Equal(t, []corev1.Volume{sshVolume}, nodePod.Volumes)
				assert.Equal(t, []corev1.Volume{sshVolume, hostfileVolume}, launcherPod.Volumes)
				assert.Equal(t, []corev1.VolumeMount{sshMount}, nodePod.Containers[0].VolumeMounts)
				assert.Equal(t, []corev1.VolumeMount{sshMount, {Name: "mpi-hostfile", MountPath: "/etc/mpi"}}, launcherPod.Containers[0].VolumeMounts)
				assert.Equal(t, []string{"/usr/sbin/sshd"}, nodePod.Containers[0].Command)
				assert.Empty(t, nodePod.Containers[0].Env)
				assert.Equal(t, []corev1.EnvVar{
					{Name: "OMPI_MCA_orte_default_hostfile", Value: "/etc/mpi/hostfile"},
					{Name: "OMPI_MCA_orte_keep_fqdn_hostnames", Value: "true"},
					{Name: "OMPI_MCA_orte_set_default_slots", Value: "1"},
					{Name: "OMPI_MCA_plm_rsh_args", Value: "-o ConnectionAttempts=10"},
				}, launcherPod.Containers[0].Env)
				for _, c := range []corev1.Container{nodePod.Containers[0], launcherPod.Containers[0]} {
					assert.Empty(t, c.Ports, "MPI exposes no trainer port")
				}

				require.Len(t, objs, 2)
				secret, ok := objs[0].(*corev1.Secret)
				require.True(t, ok, "the Secret comes first")
				assert.Equal(t, "tj-mpi-ssh-auth", secret.Name)
				assert.Equal(t, "ns", secret.Namespace)
				assert.Equal(t, corev1.SecretTypeSSHAuth, secret.Type)
				assert.Equal(t, ptr.To(true), secret.Immutable)
				assert.ElementsMatch(t, []string{"ssh-privatekey", "ssh-publickey"}, keys(secret.Data))
				cm, ok := objs[1].(*corev1.ConfigMap)
				require.True(t, ok)
				assert.Equal(t, "tj-mpi-hostfile", cm.Name)
				assert.Equal(t, map[string]string{"hostfile": tc.wantHostfile}, cm.Data)
				for _, obj := range objs {
					assert.Equal(t, "v1", obj.GetObjectKind().GroupVersionKind().Version)
				}
			})
		}
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestKubeflowJAXAndXGBoostRuntimesAddressNodeZeroOfTheJobSet(t *testing.T) {
	rank := "fieldRef:" + plan.JobCompletionIndexFieldPath
	for file, want := range map[string]map[string]string{
		"jax_distributed.yaml": {
			"JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": rank, "JAX_COORDINATOR_ADDRESS": "tj-node-0-0.tj:29500",
		},
		"xgboost_distributed.yaml": {
			"DMLC_TRACKER_URI": "tj-node-0-0.tj", "DMLC_TRACKER_PORT": "29500", "DMLC_TASK_ID": rank, "DMLC_NUM_WORKER": "2",
		},
	} {
		t.Run(file, func(t *testing.T) {
			rt := kubeflowRuntime(t, file)
			js, objs, err := Build(kubeflowTrainJob(t, rt.Name, "trainer: {numNodes: 2}"), rt, false, plan.Options{})
			require.NoError(t, err)
			assert.Empty(t, objs)
			require.Len(t, js.Spec.ReplicatedJobs, 1)
			c := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0]
			assert.Equal(t, want, builders.EnvOf(c))
			assert.Equal(t, []corev1.ContainerPort{{ContainerPort: plan.TrainerPort}}, c.Ports)
		})
	}
}
