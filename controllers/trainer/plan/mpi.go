package plan

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// applyMPI wires OpenMPI over SSH.
//
// The "node" and "launcher" jobs mount the SSH key Secret (private key as id_rsa, public key as
// id_rsa.pub and authorized_keys) into their "node" container at sshAuthMountPath; the launcher
// also mounts the hostfile at /etc/mpi and gets OpenMPI's env. The hostfile lists every pod of
// the "node" job (and of the launcher when it runs as a node) with numProcPerNode slots.
func applyMPI(tj *trainerv1alpha1.TrainJob, rt *Runtime, p *Plan, net Network) ([]client.Object, error) {
	policy := rt.Spec.MLPolicy.MPI
	slots, err := strconv.Atoi(p.NumProcPerNode)
	if err != nil {
		return nil, fmt.Errorf("MPI slots per node %q: %w", p.NumProcPerNode, err)
	}
	sshMount := ptr.Deref(policy.SSHAuthMountPath, DefaultSSHAuthMountPath)
	secretName, hostfileName := SSHAuthSecretName(tj.Name), HostfileConfigMapName(tj.Name)

	sshVolume, hostfileVolume := mpiVolumes(secretName, hostfileName)
	launcherEnv := []corev1.EnvVar{
		{Name: EnvOpenMPIHostfile, Value: MPIHostfileDir + "/" + MPIHostfileKey},
		{Name: EnvOpenMPIKeepFQDNHosts, Value: "true"},
		{Name: EnvOpenMPIDefaultSlots, Value: strconv.Itoa(slots)},
		{Name: EnvOpenMPIRSHArgs, Value: OpenMPIRSHArgs},
	}

	var hostfile strings.Builder
	spec := &p.Template.Spec
	for i := range spec.ReplicatedJobs {
		rj := &spec.ReplicatedJobs[i]
		if rj.Name != Node && rj.Name != Launcher {
			continue
		}
		pod := &rj.Template.Spec.Template.Spec
		upsertVolume(&pod.Volumes, sshVolume)
		if rj.Name == Launcher {
			upsertVolume(&pod.Volumes, hostfileVolume)
		}
		if c := container(pod, Node); c != nil {
			upsertVolumeMount(&c.VolumeMounts, corev1.VolumeMount{Name: MPISSHAuthVolume, MountPath: sshMount})
			if rj.Name == Launcher {
				upsertVolumeMount(&c.VolumeMounts, corev1.VolumeMount{Name: MPIHostfileVolume, MountPath: MPIHostfileDir})
				upsertEnv(&c.Env, launcherEnv...)
			}
		}
		if rj.Name == Node || runLauncherAsNode(rt) {
			pods := int(max(rj.Replicas, 1)) * int(ptr.Deref(rj.Template.Spec.Parallelism, 1))
			for index := range pods {
				fmt.Fprintf(&hostfile, "%s slots=%d\n", net.Host(rj.Name, index), slots)
			}
		}
	}

	secret, err := sshAuthSecret(tj, secretName)
	if err != nil {
		return nil, err
	}
	configMap := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: hostfileName, Namespace: tj.Namespace},
		Data:       map[string]string{MPIHostfileKey: hostfile.String()},
	}
	return []client.Object{secret, configMap}, nil
}

// mpiVolumes are the SSH key Secret's volume (private key, public key, authorized_keys) and the
// hostfile ConfigMap's.
func mpiVolumes(secretName, hostfileName string) (ssh, hostfile corev1.Volume) {
	ssh = corev1.Volume{Name: MPISSHAuthVolume, VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
		SecretName:  secretName,
		DefaultMode: ptr.To(MPISSHAuthDefaultMode),
		Items: []corev1.KeyToPath{
			{Key: corev1.SSHAuthPrivateKey, Path: MPISSHPrivateKeyFile, Mode: ptr.To(MPISSHPrivateKeyFileMode)},
			{Key: MPISSHPublicKeyKey, Path: MPISSHPublicKeyFile, Mode: ptr.To(MPISSHPublicKeyFileMode)},
			{Key: MPISSHPublicKeyKey, Path: MPISSHAuthorizedKeysFile, Mode: ptr.To(MPISSHPublicKeyFileMode)},
		},
	}}}
	hostfile = corev1.Volume{Name: MPIHostfileVolume, VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: hostfileName},
		Items:                []corev1.KeyToPath{{Key: MPIHostfileKey, Path: MPIHostfileKey, Mode: ptr.To(MPIHostfileMode)}},
	}}}
	return ssh, hostfile
}

// sshAuthSecret is an immutable kubernetes.io/ssh-auth Secret with a new key pair.
func sshAuthSecret(tj *trainerv1alpha1.TrainJob, name string) (*corev1.Secret, error) {
	private, public, err := newSSHKeyPair()
	if err != nil {
		return nil, fmt.Errorf("generating the MPI SSH key of TrainJob %s: %w", tj.Name, err)
	}
	return &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: tj.Namespace},
		Type:       corev1.SecretTypeSSHAuth,
		Immutable:  ptr.To(true),
		Data:       map[string][]byte{corev1.SSHAuthPrivateKey: private, MPISSHPublicKeyKey: public},
	}, nil
}
