package kueuee2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/yaml"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/cluster"
)

// TestKubeflowKueueExampleRunsToComplete applies Kubeflow Trainer v2.3's Kueue example
// (examples/yaml/03-kueue-integration.yaml: a suspended TrainJob in LocalQueue training-queue on
// Kubeflow's torch-distributed runtime) unchanged but for its namespace: Kueue admits it, and it
// runs to Complete. The cluster gets what the example expects: the runtime, and the queue with
// CPU and memory quota. Not parallel: its three pods would take room the topology tests count on
// (a rack of a topology-aware queue must fit their gangs whole).
func TestKubeflowKueueExampleRunsToComplete(t *testing.T) {
	ctx := context.Background()
	dir, err := apiserver.ModuleDir("github.com/kubeflow/trainer/v2", "v2.3.0")
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(dir, "manifests", "base", "runtimes", "torch_distributed.yaml"))
	require.NoError(t, err)
	ctr := &trainerv1alpha1.ClusterTrainingRuntime{}
	require.NoError(t, yaml.UnmarshalStrict(data, ctr))
	require.NoError(t, client.IgnoreAlreadyExists(k8s().Create(ctx, ctr)))

	ns := cluster.Current.NewNamespace(t)
	name := "examples-" + ns
	flavor := &kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: name}}
	cq := &kueuev1beta2.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: kueuev1beta2.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueuev1beta2.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
				Flavors: []kueuev1beta2.FlavorQuotas{{Name: kueuev1beta2.ResourceFlavorReference(name), Resources: []kueuev1beta2.ResourceQuota{
					{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("16")},
					{Name: corev1.ResourceMemory, NominalQuota: resource.MustParse("64Gi")},
				}}},
			}},
		},
	}
	lq := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Name: "training-queue", Namespace: ns},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: kueuev1beta2.ClusterQueueReference(name)}}
	for _, obj := range []client.Object{flavor, cq, lq} {
		require.NoError(t, k8s().Create(ctx, obj))
	}
	t.Cleanup(func() {
		for _, obj := range []client.Object{lq, cq, flavor} {
			_ = k8s().Delete(context.Background(), obj)
		}
	})

	objs, err := apiserver.ReadManifests(filepath.Join(dir, "examples", "yaml", "03-kueue-integration.yaml"))
	require.NoError(t, err)
	var names []string
	for _, u := range objs {
		if u.GetKind() != trainerv1alpha1.TrainJobKind {
			continue
		}
		u.SetNamespace(ns)
		names = append(names, u.GetName())
		eventually(t, 30*time.Second, func() (bool, string) {
			err := k8s().Create(ctx, u.DeepCopy())
			if err != nil && !strings.Contains(err.Error(), "not found") {
				require.NoError(t, err)
			}
			return err == nil, "creating the example TrainJob"
		})
	}
	require.NotEmpty(t, names, "the example has a TrainJob")
	for _, n := range names {
		eventually(t, 2*time.Minute, func() (bool, string) {
			tj := getTrainJob(t, ns, n)
			return meta.IsStatusConditionTrue(tj.Status.Conditions, trainerv1alpha1.TrainJobComplete), describeConditions(tj)
		})
	}
}

func describeConditions(tj *trainerv1alpha1.TrainJob) string {
	var out []string
	for _, c := range tj.Status.Conditions {
		out = append(out, c.Type+"="+string(c.Status)+"/"+c.Reason)
	}
	return tj.Name + ": " + strings.Join(out, ", ")
}
