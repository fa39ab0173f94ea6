package plan

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubegrove/grove/test/builders"
)

var testStatusServer = &StatusServer{BaseURL: "https://status.grove-system.svc:10443", CA: []byte("CA PEM")}

func TestStatusServerWiresEveryTrainerContainerAndNothingElse(t *testing.T) {
	tj := trainJobYAML(t, "runtimeRef: {name: rt}")
	p := newPlan(t, tj, runtimeYAML(t, torchRuntime))

	cm := ApplyStatusServer(tj, p, testStatusServer)

	for _, name := range []string{"node", "sidecar"} {
		c := containerOf(t, p, "node", name)
		assert.Equal(t, map[string]string{
			"KUBEFLOW_TRAINER_SERVER_URL":     "https://status.grove-system.svc:10443/apis/trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/tj/status",
			"KUBEFLOW_TRAINER_SERVER_CA_CERT": "/var/run/secrets/kubeflow/trainer/ca.crt",
			"KUBEFLOW_TRAINER_SERVER_TOKEN":   "/var/run/secrets/kubeflow/trainer/token",
		}, filterEnv(builders.EnvOf(*c), "KUBEFLOW_TRAINER_SERVER_"), "container %s", name)
		assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: "kubeflow-trainer-token", MountPath: "/var/run/secrets/kubeflow/trainer", ReadOnly: true})
	}
	assert.Equal(t, "runtime", builders.EnvOf(*containerOf(t, p, "node", "node"))["RUNTIME_ENV"], "the runtime's env is kept")

	pod := jobOf(t, p, "node").Template.Spec.Template.Spec
	require.Len(t, pod.Volumes, 1)
	projected := pod.Volumes[0].Projected
	require.NotNil(t, projected)
	require.Len(t, projected.Sources, 2)
	token := projected.Sources[0].ServiceAccountToken
	require.NotNil(t, token)
	assert.Equal(t, "trainer.kubeflow.org/v1alpha1/namespaces/ns/trainjobs/tj/status", token.Audience, "a token for this TrainJob only")
	assert.Equal(t, int64(3600), *token.ExpirationSeconds)
	assert.Equal(t, "tj-tls-config", projected.Sources[1].ConfigMap.Name)
	assert.Equal(t, "default", pod.ServiceAccountName, "a projected token needs a named account")

	for _, job := range []string{"dataset-initializer", "model-initializer"} {
		spec := jobOf(t, p, job).Template.Spec.Template.Spec
		assert.Empty(t, spec.Volumes, "%s is not the trainer", job)
		assert.Empty(t, filterEnv(builders.EnvOf(spec.Containers[0]), "KUBEFLOW_TRAINER_SERVER_"), "%s is not the trainer", job)
	}

	require.NotNil(t, cm)
	assert.Equal(t, "tj-tls-config", cm.Name)
	assert.Equal(t, "ns", cm.Namespace)
	assert.Equal(t, map[string]string{"ca.crt": "CA PEM"}, cm.Data)
}

func TestStatusServerOffChangesNothing(t *testing.T) {
	tj := trainJobYAML(t, "runtimeRef: {name: rt}")
	p := newPlan(t, tj, runtimeYAML(t, torchRuntime))
	before := p.Template.DeepCopy()

	assert.Nil(t, ApplyStatusServer(tj, p, nil))
	assert.Equal(t, before, &p.Template)
}

func TestStatusServerKeepsTheTemplatesServiceAccount(t *testing.T) {
	tj := trainJobYAML(t, "runtimeRef: {name: rt}")
	p := newPlan(t, tj, runtimeYAML(t, torchRuntime))
	jobOf(t, p, "node").Template.Spec.Template.Spec.ServiceAccountName = "trainer"
	ApplyStatusServer(tj, p, testStatusServer)
	assert.Equal(t, "trainer", jobOf(t, p, "node").Template.Spec.Template.Spec.ServiceAccountName)
}

func TestStatusServerWiringIsIdempotent(t *testing.T) {
	tj := trainJobYAML(t, "runtimeRef: {name: rt}")
	p := newPlan(t, tj, runtimeYAML(t, torchRuntime))
	ApplyStatusServer(tj, p, testStatusServer)
	once := p.Template.DeepCopy()
	ApplyStatusServer(tj, p, testStatusServer)
	assert.Equal(t, once, &p.Template, "a second wiring replaces, never duplicates, env, mounts and the volume")
}

func filterEnv(env map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range env {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			out[k] = v
		}
	}
	return out
}
