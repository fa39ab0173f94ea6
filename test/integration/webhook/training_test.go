package webhookintegration

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/toolpath"
)

func TestTrainingWorkloadsRejectResizingRollingAndScaling(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	out, err := kubectlApply(t, ns, trainingPCS)
	require.NoError(t, err, out)

	for name, edit := range map[string][2]string{
		"spec.template.cliques[0].spec.replicas": {"replicas: 2", "replicas: 3"},
		"spec.template.cliques[0].spec.podSpec":  {"image: busybox", "image: busybox:1.37"},
	} {
		out, err := kubectlApply(t, ns, strings.Replace(trainingPCS, edit[0], edit[1], 1))
		require.Error(t, err, out)
		assert.Contains(t, out, name)
		assert.Contains(t, out, "Training workload")
	}

	// A PodClique of the Training PodCliqueSet, as the operator would create it.
	pclq := &grovev1alpha1.PodClique{
		ObjectMeta: metav1.ObjectMeta{Name: "train-0-trainer", Namespace: ns, Labels: map[string]string{grovev1alpha1.LabelPartOf: "train"}},
		Spec: grovev1alpha1.PodCliqueObjectSpec{PodCliqueSpec: grovev1alpha1.PodCliqueSpec{RoleName: "trainer", Replicas: 2,
			PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Name: "t", Image: "busybox"}}}}},
	}
	require.NoError(t, env.Client.Create(context.Background(), pclq))
	kubectl, err := toolpath.Bin("kubectl")
	require.NoError(t, err)
	scaleOut, err := exec.Command(kubectl, "--kubeconfig", kubeconfig, "-n", ns, "scale", "pclq/train-0-trainer", "--replicas=4").CombinedOutput()
	require.Error(t, err, string(scaleOut))
	assert.Contains(t, string(scaleOut), "spec.replicas: Forbidden")

	got := &grovev1alpha1.PodClique{}
	require.NoError(t, env.Client.Get(context.Background(), clientKey(ns, "train-0-trainer"), got))
	got.Spec.Replicas = 5
	err = env.Client.Update(context.Background(), got)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Training PodCliqueSet train")
}
