package trainere2e

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// TestMPIRuntimesOnThePodCliqueSetPathSucceedWithTheirLauncher runs Kubeflow's DeepSpeed and MLX
// runtimes on the PodCliqueSet path as they behave for real: the node pods run sshd and never
// exit, the launcher exits 0. Their JobSet successPolicy (All of launcher) becomes the
// PodCliqueSet's: the TrainJob is Complete when the launcher is, and the node pods are deleted,
// as JobSet deletes its active Jobs.
func TestMPIRuntimesOnThePodCliqueSetPathSucceedWithTheirLauncher(t *testing.T) {
	t.Parallel()
	dir, err := apiserver.ModuleDir("github.com/kubeflow/trainer/v2", "v2.3.0")
	require.NoError(t, err)
	for _, file := range []string{"manifests/base/runtimes/deepspeed_distributed.yaml", "manifests/base/runtimes/mlx_distributed.yaml"} {
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join(dir, file))
			require.NoError(t, err)
			ctr := &trainerv1alpha1.ClusterTrainingRuntime{}
			require.NoError(t, yaml.UnmarshalStrict(data, ctr))
			ns := cluster.Current.NewNamespace(t)
			rt := builders.RuntimeSpecOf(ctr.Spec).WorkloadKind(trainerv1alpha1.WorkloadKindPodCliqueSet).TrainingRuntime(ns, ctr.Name)
			require.NotNil(t, rt.Spec.Template.Spec.SuccessPolicy, "Kubeflow's MPI runtimes succeed with their launcher")
			for i := range rt.Spec.Template.Spec.ReplicatedJobs {
				rj := &rt.Spec.Template.Spec.ReplicatedJobs[i]
				if rj.Name == "launcher" {
					pod := &rj.Template.Spec.Template
					pod.Labels = map[string]string{cluster.LabelExitCode: "0"}
					pod.Annotations = map[string]string{cluster.AnnotationExitAfter: "3s"}
				}
			}
			create(t, rt)
			tj := builders.TrainJob(ns, "mpi", rt.Name).UID("").Nodes(3).Obj()
			create(t, tj)

			nodes := map[string]string{grovev1alpha1.LabelPodClique: "mpi-0-node"}
			require.Eventually(t, func() bool { return len(pods(t, ns, nodes)) > 0 }, time.Minute, 200*time.Millisecond, "the node pods start")
			done := waitCondition(t, tj, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)
			c := apimeta.FindStatusCondition(done.Status.Conditions, trainerv1alpha1.TrainJobComplete)
			require.NotNil(t, c)
			assert.Contains(t, c.Message, "successPolicy (All of launcher)")

			pcs := &grovev1alpha1.PodCliqueSet{}
			require.NoError(t, k8s().Get(context.Background(), client.ObjectKeyFromObject(tj), pcs))
			assert.Equal(t, grovev1alpha1.PodCliqueSetPhaseSucceeded, pcs.Status.Phase)
			waitNoPods(t, ns, nodes)
			launcher := pods(t, ns, map[string]string{grovev1alpha1.LabelPodClique: "mpi-0-launcher"})
			require.Len(t, launcher, 1, "the launcher that succeeded is kept")
			assert.Equal(t, corev1.PodSucceeded, launcher[0].Status.Phase)
		})
	}
}
