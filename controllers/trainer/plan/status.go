package plan

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// What Kubeflow Trainer v2.3's TrainJobStatus plugin gives the trainer's containers; the
// training code (Kubeflow's SDK) reads these names.
const (
	EnvStatusServerURL    = "KUBEFLOW_TRAINER_SERVER_URL"
	EnvStatusServerCACert = "KUBEFLOW_TRAINER_SERVER_CA_CERT"
	EnvStatusServerToken  = "KUBEFLOW_TRAINER_SERVER_TOKEN"
	// StatusTokenVolume is the projected volume holding the token and the server's CA.
	StatusTokenVolume = "kubeflow-trainer-token"
	// StatusMountPath is where the trainer's containers find the token and the CA.
	StatusMountPath = "/var/run/secrets/kubeflow/trainer"
	// StatusCAKey is the CA's key in the ConfigMap and its file name in the volume.
	StatusCAKey = "ca.crt"
	// statusTokenFile is the token's file name in the volume.
	statusTokenFile = "token"
	// statusTokenExpirySeconds is the token's lifetime; the kubelet renews it before it ends.
	statusTokenExpirySeconds = 3600
)

// Options are the deployment's settings a workload is built with, from the
// OperatorConfiguration.
type Options struct {
	// StatusServer, when set, wires the trainer to the trainer status server.
	StatusServer *StatusServer
	// Coscheduling is the scheduler-plugins backend's configuration when that backend is
	// enabled; on the PodCliqueSet path a runtime whose podGroupPolicy is coscheduling needs it.
	Coscheduling *configv1alpha1.SchedulerPluginsConfig
}

// StatusServer is where a TrainJob's trainer reports its progress: the trainer-controller's
// status server (controllers/trainer/statusserver).
type StatusServer struct {
	// BaseURL is https://<service>.<namespace>.svc:<port>, without a path.
	BaseURL string
	// CA is the PEM bundle the server's certificate chains to.
	CA []byte
}

// StatusPath is the path a TrainJob's progress is posted to, Kubeflow Trainer v2.3's.
func StatusPath(namespace, name string) string {
	return fmt.Sprintf("/apis/trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/%s/status", namespace, name)
}

// StatusAudience is the audience of the token that may post a TrainJob's progress: a token for
// one TrainJob is refused for any other.
func StatusAudience(namespace, name string) string {
	return fmt.Sprintf("trainer.kubeflow.org/v1alpha1/namespaces/%s/trainjobs/%s/status", namespace, name)
}

// StatusConfigMapName is the ConfigMap that carries the server's CA into a TrainJob's namespace.
func StatusConfigMapName(trainJob string) string { return trainJob + "-tls-config" }

// ApplyStatusServer wires the trainer's containers (every container of the first replicated job
// whose ancestor is the trainer, as Kubeflow's plugin does) to the status server: the URL, CA
// and token paths in their env, a projected volume with a service-account token bound to this
// TrainJob's audience and the CA, mounted read-only (and the pod's service account named:
// "default" when the template names none). It returns the ConfigMap with the CA that
// the volume projects; it must exist before the pods start. A nil server changes nothing.
func ApplyStatusServer(tj *trainerv1alpha1.TrainJob, p *Plan, s *StatusServer) *corev1.ConfigMap {
	if s == nil {
		return nil
	}
	env := []corev1.EnvVar{
		{Name: EnvStatusServerURL, Value: s.BaseURL + StatusPath(tj.Namespace, tj.Name)},
		{Name: EnvStatusServerCACert, Value: StatusMountPath + "/" + StatusCAKey},
		{Name: EnvStatusServerToken, Value: StatusMountPath + "/" + statusTokenFile},
	}
	mount := corev1.VolumeMount{Name: StatusTokenVolume, MountPath: StatusMountPath, ReadOnly: true}
	volume := corev1.Volume{Name: StatusTokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
				Audience: StatusAudience(tj.Namespace, tj.Name), ExpirationSeconds: ptr.To[int64](statusTokenExpirySeconds), Path: statusTokenFile,
			}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: StatusConfigMapName(tj.Name)},
				Items:                []corev1.KeyToPath{{Key: StatusCAKey, Path: StatusCAKey}},
			}},
		},
	}}}
	for i := range p.Template.Spec.ReplicatedJobs {
		rj := &p.Template.Spec.ReplicatedJobs[i]
		if ancestorOf(rj) != AncestorTrainer {
			continue
		}
		pod := &rj.Template.Spec.Template.Spec
		for j := range pod.Containers {
			upsertEnv(&pod.Containers[j].Env, env...)
			upsertVolumeMount(&pod.Containers[j].VolumeMounts, mount)
		}
		upsertVolume(&pod.Volumes, volume)
		if pod.ServiceAccountName == "" {
			// A token projection needs a named account. Where the ServiceAccount admission plugin
			// runs (every conformant cluster) it names "default" anyway; named here, the pod is
			// the same there and valid where the plugin is off.
			pod.ServiceAccountName = "default"
		}
		break
	}
	return &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: StatusConfigMapName(tj.Name), Namespace: tj.Namespace},
		Data:       map[string]string{StatusCAKey: string(s.CA)},
	}
}
