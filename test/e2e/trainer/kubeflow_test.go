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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	"sigs.k8s.io/yaml"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// kubeflowRuntime creates one of the ClusterTrainingRuntimes Kubeflow Trainer v2.3 ships,
// unchanged (kwok completes Job pods at once, so their TrainJobs finish).
func kubeflowRuntime(t *testing.T, file string) *trainerv1alpha1.ClusterTrainingRuntime {
	t.Helper()
	dir, err := apiserver.ModuleDir("github.com/kubeflow/trainer/v2", "v2.3.0")
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "manifests", "base", "runtimes", file))
	require.NoError(t, err)
	rt := &trainerv1alpha1.ClusterTrainingRuntime{}
	require.NoError(t, yaml.UnmarshalStrict(data, rt))
	require.NoError(t, client.IgnoreAlreadyExists(k8s().Create(context.Background(), rt)))
	return rt
}

func TestKubeflowRuntimesRunPlainTrainJobsToComplete(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file       string
		containers map[string]string // replicated job -> container that must exist
		env        string            // an env var of the framework on the node container
		objects    []client.Object   // besides the JobSet
	}{
		{"torch_distributed.yaml", map[string]string{"node": "node"}, "PET_NNODES", nil},
		{"deepspeed_distributed.yaml", map[string]string{"node": "node", "launcher": "node"}, "", []client.Object{
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "kf-mpi-ssh-auth"}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kf-mpi-hostfile"}},
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			ns := cluster.Current.NewNamespace(t)
			rt := kubeflowRuntime(t, tc.file)
			tj := &trainerv1alpha1.TrainJob{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kf"},
				Spec: trainerv1alpha1.TrainJobSpec{
					RuntimeRef: trainerv1alpha1.RuntimeRef{Name: rt.Name},
					Trainer:    &trainerv1alpha1.Trainer{NumNodes: ptr.To[int32](2)},
				},
			}
			create(t, tj)
			waitCondition(t, tj, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)

			js := &jobsetv1alpha2.JobSet{}
			require.NoError(t, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "kf"}, js))
			for job, container := range tc.containers {
				var found bool
				for _, rj := range js.Spec.ReplicatedJobs {
					if rj.Name != job {
						continue
					}
					for _, c := range rj.Template.Spec.Template.Spec.Containers {
						if c.Name == container {
							found = true
							if tc.env != "" && job == "node" {
								assert.Contains(t, builders.EnvOf(c), tc.env)
							}
						}
					}
				}
				assert.True(t, found, "replicated job %s has container %s", job, container)
			}
			for _, obj := range tc.objects {
				obj.SetNamespace(ns)
				assert.NoError(t, k8s().Get(context.Background(), client.ObjectKeyFromObject(obj), obj), "%T %s", obj, obj.GetName())
			}
		})
	}
}
