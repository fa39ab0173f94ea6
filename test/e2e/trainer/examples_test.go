package trainere2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
)

// TestKubeflowExampleTrainJobsRunToComplete applies Kubeflow Trainer v2.3's examples/yaml as
// they are (into the test's namespace) and runs each TrainJob to Complete. What an example
// expects of the cluster is made here first: Kubeflow's torch-distributed ClusterTrainingRuntime,
// and for the runtime-patches example its service account and nodes labelled node-type=training.
// The Volcano example runs in volcano_test.go and the Kueue one in test/e2e/kueue.
func TestKubeflowExampleTrainJobsRunToComplete(t *testing.T) {
	t.Parallel()
	dir, err := apiserver.ModuleDir("github.com/kubeflow/trainer/v2", "v2.3.0")
	require.NoError(t, err)
	kubeflowRuntime(t, "torch_distributed.yaml")
	cases := []struct {
		file    string
		prepare func(t *testing.T, ns string)
	}{
		{file: "01-multi-node.yaml"},
		{file: "02-runtime-patches.yaml", prepare: func(t *testing.T, ns string) {
			create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "training-sa"}})
			labelNodes(t, map[string]string{"node-type": "training"})
		}},
		{file: "05-multi-step.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			ns := cluster.Current.NewNamespace(t)
			if tc.prepare != nil {
				tc.prepare(t, ns)
			}
			objs, err := apiserver.ReadManifests(filepath.Join(dir, "examples", "yaml", tc.file))
			require.NoError(t, err)
			var jobs []*trainerv1alpha1.TrainJob
			for _, u := range objs {
				u.SetNamespace(ns)
				require.NoError(t, k8s().Create(context.Background(), u), "%s %s", u.GetKind(), u.GetName())
				if u.GetKind() == trainerv1alpha1.TrainJobKind {
					tj := &trainerv1alpha1.TrainJob{}
					require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, tj))
					jobs = append(jobs, tj)
				}
			}
			require.NotEmpty(t, jobs, "the example has a TrainJob")
			for _, tj := range jobs {
				waitCondition(t, tj, trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "", 2*time.Minute)
			}
		})
	}
}

// labelNodes adds labels to every node (kwok's nodes run every pod they are given).
func labelNodes(t *testing.T, labels map[string]string) {
	t.Helper()
	nodes := &corev1.NodeList{}
	require.NoError(t, k8s().List(context.Background(), nodes))
	for i := range nodes.Items {
		n := &nodes.Items[i]
		patch := client.MergeFrom(n.DeepCopy())
		for k, v := range labels {
			n.Labels[k] = v
		}
		require.NoError(t, k8s().Patch(context.Background(), n, patch))
	}
}
