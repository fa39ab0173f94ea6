package plan

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func applyFramework(t *testing.T, tj *trainerv1alpha1.TrainJob, rt *Runtime) (*Plan, []client.Object) {
	t.Helper()
	p := newPlan(t, tj, rt)
	objs, err := ApplyFramework(tj, rt, p, testNetwork)
	require.NoError(t, err)
	return p, objs
}

func TestTorchEnvAndPortOnTheTrainerNodeContainer(t *testing.T) {
	tj := trainJobYAML(t, "runtimeRef: {name: rt}\ntrainer: {numNodes: 3, env: [{name: MINE, value: x}]}")
	p, objs := applyFramework(t, tj, runtimeYAML(t, torchRuntime))
	assert.Empty(t, objs)

	node := containerOf(t, p, Node, Node)
	assert.Equal(t, []string{"RUNTIME_ENV", "SHARED", "MINE",
		EnvTorchNumNodes, EnvTorchNumProcPerNode, EnvTorchNodeRank, EnvTorchMasterAddr, EnvTorchMasterPort}, envNames(node))
	assert.Equal(t, map[string]string{
		"RUNTIME_ENV": "runtime", "SHARED": "runtime", "MINE": "x",
		EnvTorchNumNodes:       "3",
		EnvTorchNumProcPerNode: "2", // the runtime's 2 CPUs
		EnvTorchNodeRank:       "fieldRef:rank",
		EnvTorchMasterAddr:     "node-0.net",
		EnvTorchMasterPort:     "29500",
	}, builders.EnvOf(*node))
	assert.Equal(t, []corev1.ContainerPort{{ContainerPort: 29500}}, node.Ports)

	assert.Empty(t, containerOf(t, p, Node, "sidecar").Env, "other containers are left alone")
	assert.Empty(t, containerOf(t, p, Node, "sidecar").Ports)
	assert.Len(t, containerOf(t, p, DatasetInitializer, DatasetInitializer).Env, 2)
}

func TestTorchRankComesFromTheNetwork(t *testing.T) {
	tj := trainJobYAML(t, "runtimeRef: {name: rt}\ntrainer: {}")
	p := newPlan(t, tj, runtimeYAML(t, torchRuntime))
	_, err := ApplyFramework(tj, runtimeYAML(t, torchRuntime), p, Network{
		Hostname:      func(job string, index int) string { return "pod" },
		Subdomain:     "node",
		RankFieldPath: JobCompletionIndexFieldPath,
	})
	require.NoError(t, err)
	env := builders.EnvOf(*containerOf(t, p, Node, Node))
	assert.Equal(t, "fieldRef:metadata.annotations['batch.kubernetes.io/job-completion-index']", env[EnvTorchNodeRank])
	assert.Equal(t, "pod.node", env[EnvTorchMasterAddr])
}

// Kubeflow Trainer v2.3 injects torchrun's environment only for a TrainJob with spec.trainer.
func TestTorchWithoutTrainerInjectsNothingIntoTheNodeContainer(t *testing.T) {
	p, _ := applyFramework(t, trainJobYAML(t, "runtimeRef: {name: rt}"), runtimeYAML(t, torchRuntime))
	node := containerOf(t, p, Node, Node)
	assert.Equal(t, []string{"RUNTIME_ENV", "SHARED"}, envNames(node))
	assert.Empty(t, node.Ports)
}

func TestTorchPortReplacesASamePortAndKeepsOthers(t *testing.T) {
	rt := runtimeYAML(t, torchRuntime)
	node := &rt.Spec.Template.Spec.ReplicatedJobs[2].Template.Spec.Template.Spec.Containers[0]
	node.Ports = []corev1.ContainerPort{{ContainerPort: 8080}, {Name: "rdzv", ContainerPort: 29500, Protocol: corev1.ProtocolTCP}}
	p, _ := applyFramework(t, trainJobYAML(t, "runtimeRef: {name: rt}\ntrainer: {}"), rt)
	assert.Equal(t, []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 29500}}, containerOf(t, p, Node, Node).Ports)
}

func TestTorchEnvInjectionTargetsGetTheFullEnvironment(t *testing.T) {
	rt := runtimeYAML(t, torchRuntime)
	rt.Spec.MLPolicy.Torch.EnvInjection = &trainerv1alpha1.EnvInjection{Targets: []trainerv1alpha1.EnvInjectionTarget{
		{JobName: Node, ContainerNames: []string{"sidecar", "preflight"}},
		{JobName: ModelInitializer, ContainerNames: []string{ModelInitializer}},
	}}
	pod := &rt.Spec.Template.Spec.ReplicatedJobs[2].Template.Spec.Template.Spec
	pod.InitContainers = []corev1.Container{{Name: "preflight", Image: "p"}}
	want := map[string]string{
		EnvTorchNumNodes: "2", EnvTorchNumProcPerNode: "2", EnvTorchNodeRank: "fieldRef:rank",
		EnvTorchMasterAddr: "node-0.net", EnvTorchMasterPort: "29500",
	}
	for _, trainer := range []string{"", "trainer: {}"} {
		p, _ := applyFramework(t, trainJobYAML(t, "runtimeRef: {name: rt}\n"+trainer), rt)
		assert.Equal(t, want, builders.EnvOf(*containerOf(t, p, Node, "sidecar")))
		assert.Equal(t, want, builders.EnvOf(*containerOf(t, p, Node, "preflight")))
		assert.Equal(t, want, builders.EnvOf(*containerOf(t, p, ModelInitializer, ModelInitializer)))
		assert.Empty(t, containerOf(t, p, Node, "sidecar").Ports, "targets get env, not the port")
	}
}

func TestTorchEnvInjectionOfAMissingContainerIsAnError(t *testing.T) {
	rt := runtimeYAML(t, torchRuntime)
	rt.Spec.MLPolicy.Torch.EnvInjection = &trainerv1alpha1.EnvInjection{Targets: []trainerv1alpha1.EnvInjectionTarget{
		{JobName: Node, ContainerNames: []string{"sidecar"}},
		{JobName: "ghost", ContainerNames: []string{"c"}},
	}}
	tj := trainJobYAML(t, "runtimeRef: {name: rt}")
	_, err := ApplyFramework(tj, rt, newPlan(t, tj, rt), testNetwork)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.mlPolicy.torch.envInjection.targets[1].containerNames[0]")
}

func TestTorchTuneGetsItsRecipeOnTheCommandLine(t *testing.T) {
	torchtune := func(gpus string) string {
		return `
mlPolicy: {numNodes: 1, torch: {}}
template:
  spec:
    replicatedJobs:
    - name: node
      template:
        metadata: {labels: {trainer.kubeflow.org/trainjob-ancestor-step: trainer}}
        spec:
          template:
            spec:
              containers:
              - name: node
                image: torchtune
                command: [tune, run, --rdzv_endpoint=localhost:29500, full_finetune_distributed, --config, llama3_2/1B_full,
                  dataset.source=parquet, output_dir=/workspace/output, tokenizer.path=/workspace/model/tokenizer.model,
                  checkpointer.checkpoint_dir=/workspace/model]
                resources: {limits: {nvidia.com/gpu: ` + gpus + `}}`
	}
	fixed := []string{"output_dir=/workspace/output", "tokenizer.path=/workspace/model/tokenizer.model", "checkpointer.checkpoint_dir=/workspace/model"}
	cases := []struct {
		name    string
		gpus    string
		trainer string
		want    []string
	}{
		{
			name: "several GPUs on one node: distributed full fine-tuning",
			gpus: "2", trainer: "trainer: {command: [tune, run]}",
			want: []string{"tune", "run", "--rdzv_endpoint=node-0.net:29500", "full_finetune_distributed", "--config", "llama3_2/1B_full"},
		},
		{
			name: "one GPU: single-device full fine-tuning",
			gpus: "1", trainer: "trainer: {command: [tune, run]}",
			want: []string{"tune", "run", "full_finetune_single_device", "--config", "llama3_2/1B_full_single_device"},
		},
		{
			name: "one GPU with LoRA args",
			gpus: "1", trainer: "trainer: {command: [tune, run], args: ['model.lora_attn_modules=[q_proj,v_proj]']}",
			want: []string{"tune", "run", "lora_finetune_single_device", "--config", "llama3_2/1B_lora_single_device"},
		},
		{
			name: "several GPUs with QLoRA args",
			gpus: "2", trainer: "trainer: {command: [tune, run], args: [model.quantize_base=True]}",
			want: []string{"tune", "run", "--rdzv_endpoint=node-0.net:29500", "lora_finetune_distributed", "--config", "llama3_2/1B_qlora"},
		},
		{
			name: "several nodes: multi-node full fine-tuning",
			gpus: "2", trainer: "trainer: {command: [tune, run], numNodes: 2}",
			want: []string{"tune", "run", "--rdzv_endpoint=node-0.net:29500", "full_finetune_distributed", "--config", "llama3_2/1B_full_multinode"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := runtimeYAML(t, torchtune(tc.gpus))
			rt.Name = "torchtune-llama3.2-1b"
			tj := trainJobYAML(t, "runtimeRef: {name: torchtune-llama3.2-1b}\n"+tc.trainer)
			p, _ := applyFramework(t, tj, rt)
			node := containerOf(t, p, Node, Node)
			assert.Equal(t, append(tc.want, fixed...), node.Command)
			env := builders.EnvOf(*node)
			assert.Contains(t, env, EnvTorchNumNodes)
			assert.NotContains(t, env, EnvTorchMasterAddr, "torchtune takes the rendezvous on its command line")
			assert.Equal(t, []corev1.ContainerPort{{ContainerPort: 29500}}, node.Ports)

			again, err := ApplyFramework(tj, rt, p, testNetwork)
			require.NoError(t, err)
			assert.Empty(t, again)
			assert.Equal(t, append(tc.want, fixed...), node.Command, "applying twice changes nothing")
		})
	}
}

func TestMPIHostfileListsEveryNodeWithItsSlots(t *testing.T) {
	cases := []struct {
		name    string
		asNode  bool
		trainer string
		procs   int32
		want    string
	}{
		{
			name: "launcher as a node, three nodes", asNode: true, trainer: "trainer: {numNodes: 3}", procs: 1,
			want: "node-0.net slots=1\nnode-1.net slots=1\nlauncher-0.net slots=1\n",
		},
		{
			name: "launcher only launches, two nodes with four processes", asNode: false, trainer: "trainer: {numNodes: 2}", procs: 4,
			want: "node-0.net slots=4\nnode-1.net slots=4\n",
		},
		{
			name: "the TrainJob's process count", asNode: true, trainer: "trainer: {numProcPerNode: 8}", procs: 1,
			want: "node-0.net slots=8\nlauncher-0.net slots=8\n",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rt := runtimeYAML(t, mpiRuntime)
			rt.Spec.MLPolicy.MPI.RunLauncherAsNode = ptr.To(tc.asNode)
			rt.Spec.MLPolicy.MPI.NumProcPerNode = ptr.To(tc.procs)
			p, objs := applyFramework(t, trainJobYAML(t, "runtimeRef: {name: rt}\n"+tc.trainer), rt)
			require.Len(t, objs, 2)
			cm, ok := objs[1].(*corev1.ConfigMap)
			require.True(t, ok)
			assert.Equal(t, "tj-mpi-hostfile", cm.Name)
			assert.Equal(t, "ns", cm.Namespace)
			assert.Equal(t, "ConfigMap", cm.Kind)
			assert.Equal(t, map[string]string{"hostfile": tc.want}, cm.Data)
			assert.Equal(t, strings.TrimPrefix(strings.Fields(strings.Split(tc.want, "\n")[0])[1], "slots="),
				builders.EnvOf(*containerOf(t, p, Launcher, Node))[EnvOpenMPIDefaultSlots])
		})
	}
}

func TestMPIHostfileCountsEveryReplicaOfTheNodeJob(t *testing.T) {
	rt := runtimeYAML(t, mpiRuntime)
	rt.Spec.MLPolicy.MPI.RunLauncherAsNode = ptr.To(false)
	rt.Spec.Template.Spec.ReplicatedJobs[0].Replicas = 2
	_, objs := applyFramework(t, trainJobYAML(t, "runtimeRef: {name: rt}\ntrainer: {numNodes: 2}"), rt)
	assert.Equal(t, "node-0.net slots=1\nnode-1.net slots=1\nnode-2.net slots=1\nnode-3.net slots=1\n", objs[1].(*corev1.ConfigMap).Data["hostfile"])
}

func TestMPISecretIsAnImmutableSSHKey(t *testing.T) {
	_, objs := applyFramework(t, trainJobYAML(t, "runtimeRef: {name: rt}"), runtimeYAML(t, mpiRuntime))
	secret, ok := objs[0].(*corev1.Secret)
	require.True(t, ok)
	assert.Equal(t, "tj-mpi-ssh-auth", secret.Name)
	assert.Equal(t, "ns", secret.Namespace)
	assert.Equal(t, "v1", secret.APIVersion)
	assert.Equal(t, "Secret", secret.Kind)
	assert.Equal(t, corev1.SecretTypeSSHAuth, secret.Type)
	assert.Equal(t, ptr.To(true), secret.Immutable)
	assert.Empty(t, secret.OwnerReferences)
	require.Contains(t, secret.Data, corev1.SSHAuthPrivateKey)
	require.Contains(t, secret.Data, MPISSHPublicKeyKey)
	assertKeyPair(t, secret.Data[corev1.SSHAuthPrivateKey], secret.Data[MPISSHPublicKeyKey])

	_, again := applyFramework(t, trainJobYAML(t, "runtimeRef: {name: rt}"), runtimeYAML(t, mpiRuntime))
	assert.NotEqual(t, secret.Data, again[0].(*corev1.Secret).Data, "every call makes a new key")
}

// assertKeyPair checks that the authorized key line is the private key's public half in
// OpenSSH's format, and that ssh-keygen agrees when it is installed.
func assertKeyPair(t *testing.T, private, authorized []byte) {
	t.Helper()
	block, _ := pem.Decode(private)
	require.NotNil(t, block)
	assert.Equal(t, "EC PRIVATE KEY", block.Type)
	key, err := x509.ParseECPrivateKey(block.Bytes)
	require.NoError(t, err)

	fields := strings.Fields(string(authorized))
	require.Len(t, fields, 2)
	assert.True(t, bytes.HasSuffix(authorized, []byte("\n")))
	assert.Equal(t, "ecdsa-sha2-nistp521", fields[0])
	blob, err := base64.StdEncoding.DecodeString(fields[1])
	require.NoError(t, err)
	var parts [][]byte
	for len(blob) > 0 {
		require.GreaterOrEqual(t, len(blob), 4)
		n := binary.BigEndian.Uint32(blob)
		require.GreaterOrEqual(t, uint32(len(blob)-4), n)
		parts = append(parts, blob[4:4+n])
		blob = blob[4+n:]
	}
	require.Len(t, parts, 3)
	assert.Equal(t, "ecdsa-sha2-nistp521", string(parts[0]))
	assert.Equal(t, "nistp521", string(parts[1]))
	public, err := ecdsa.ParseUncompressedPublicKey(key.Curve, parts[2])
	require.NoError(t, err)
	assert.True(t, public.Equal(&key.PublicKey))

	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		return
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "id_rsa")
	require.NoError(t, os.WriteFile(file, private, 0o600))
	out, err := exec.Command(keygen, "-y", "-f", file).Output()
	require.NoError(t, err)
	assert.Equal(t, strings.Join(fields, " "), strings.TrimSpace(string(out)), "ssh-keygen derives the same public key")
}

func TestMPIVolumesMountsAndLauncherEnv(t *testing.T) {
	p, _ := applyFramework(t, trainJobYAML(t, "runtimeRef: {name: rt}\ntrainer: {env: [{name: MINE, value: x}]}"), runtimeYAML(t, mpiRuntime))
	sshVolume := corev1.Volume{Name: "mpi-ssh-auth", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName:  "tj-mpi-ssh-auth",
		DefaultMode: ptr.To[int32](0o400),
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

	assert.Equal(t, []corev1.Volume{sshVolume}, jobOf(t, p, Node).Template.Spec.Template.Spec.Volumes)
	assert.Equal(t, []corev1.VolumeMount{sshMount}, containerOf(t, p, Node, Node).VolumeMounts)
	assert.Equal(t, []corev1.Volume{sshVolume, hostfileVolume}, jobOf(t, p, Launcher).Template.Spec.Template.Spec.Volumes)
	launcher := containerOf(t, p, Launcher, Node)
	assert.Equal(t, []corev1.VolumeMount{sshMount, {Name: "mpi-hostfile", MountPath: "/etc/mpi"}}, launcher.VolumeMounts)
	assert.Equal(t, map[string]string{
		"MINE":                              "x",
		"OMPI_MCA_orte_default_hostfile":    "/etc/mpi/hostfile",
		"OMPI_MCA_orte_keep_fqdn_hostnames": "true",
		"OMPI_MCA_orte_set_default_slots":   "1",
		"OMPI_MCA_plm_rsh_args":             "-o ConnectionAttempts=10",
	}, builders.EnvOf(*launcher))
	assert.Equal(t, map[string]string{"MINE": "x"}, builders.EnvOf(*containerOf(t, p, Node, Node)), "only the launcher gets OpenMPI's env")
	for _, c := range []*corev1.Container{launcher, containerOf(t, p, Node, Node)} {
		assert.NotContains(t, builders.EnvOf(*c), EnvTorchNumNodes)
		assert.Empty(t, c.Ports)
	}
}

func TestMPISSHMountDefaultsToRootSSH(t *testing.T) {
	rt := runtimeYAML(t, mpiRuntime)
	rt.Spec.MLPolicy.MPI.SSHAuthMountPath = nil
	p, _ := applyFramework(t, trainJobYAML(t, "runtimeRef: {name: rt}"), rt)
	assert.Equal(t, []corev1.VolumeMount{{Name: "mpi-ssh-auth", MountPath: "/root/.ssh"}}, containerOf(t, p, Node, Node).VolumeMounts)
}

func TestNoFrameworkChangesNothing(t *testing.T) {
	rt := runtimeYAML(t, torchRuntime)
	rt.Spec.MLPolicy = nil
	tj := trainJobYAML(t, "runtimeRef: {name: rt}\ntrainer: {image: x}")
	p := newPlan(t, tj, rt)
	before := p.Template.DeepCopy()
	objs, err := ApplyFramework(tj, rt, p, testNetwork)
	require.NoError(t, err)
	assert.Empty(t, objs)
	assert.Equal(t, *before, p.Template)
}
