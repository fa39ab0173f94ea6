package compatintegration

import (
	"bytes"
	"context"
	"io/fs"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/toolpath"
	"github.com/kubegrove/grove/test/upstreamcorpus"
	"github.com/kubegrove/grove/test/upstreamshapes"
	"github.com/kubegrove/grove/webhooks/trainjobadmission"
)

// kubeflowTrainerVersion is the upstream release whose manifests must apply unchanged.
const kubeflowTrainerVersion = "v2.3.0"

func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if !d.IsDir() && (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) && name != "kustomization.yaml" {
			files = append(files, path)
		}
		return nil
	}))
	sort.Strings(files)
	require.NotEmpty(t, files, "no manifests under %s", dir)
	return files
}

// dryRunKinds dry-runs every document of the given kinds in file and returns how many it tried.
func dryRunKinds(ctx context.Context, t *testing.T, ns, file string, kinds ...string) (int, error) {
	t.Helper()
	objs, err := apiserver.ReadManifests(file)
	require.NoError(t, err)
	n := 0
	for _, obj := range objs {
		if !contains(kinds, obj.GetKind()) {
			continue
		}
		n++
		setNamespace(obj, ns)
		if err := dryRun(ctx, obj); err != nil {
			return n, err
		}
	}
	return n, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// setNamespace moves a namespaced object into the test's namespace; cluster-scoped kinds keep none.
func setNamespace(obj *unstructured.Unstructured, ns string) {
	switch obj.GetKind() {
	case "ClusterTrainingRuntime", "Queue", "Namespace":
		obj.SetNamespace("")
	default:
		obj.SetNamespace(ns)
	}
}

func TestSamplesAreAcceptedByTheAPIServer(t *testing.T) {
	t.Parallel()
	root, err := toolpath.RepoRoot()
	require.NoError(t, err)
	ns := newNamespace(t)
	for _, file := range yamlFiles(t, filepath.Join(root, "config", "samples")) {
		objs, err := apiserver.ReadManifests(file)
		require.NoError(t, err)
		require.NotEmpty(t, objs, file)
		for _, obj := range objs {
			setNamespace(obj, ns)
			assert.NoError(t, dryRun(context.Background(), obj), "%s: %s %s", filepath.Base(file), obj.GetKind(), obj.GetName())
		}
	}
}

func TestKubeflowShippedRuntimesAreAcceptedUnchanged(t *testing.T) {
	t.Parallel()
	dir, err := apiserver.ModuleDir("github.com/kubeflow/trainer/v2", kubeflowTrainerVersion)
	require.NoError(t, err)
	ns := newNamespace(t)
	total := 0
	for _, file := range yamlFiles(t, filepath.Join(dir, "manifests", "base", "runtimes")) {
		n, err := dryRunKinds(context.Background(), t, ns, file, "ClusterTrainingRuntime", "TrainingRuntime")
		assert.NoError(t, err, file)
		total += n
	}
	assert.GreaterOrEqual(t, total, 6, "expected every runtime shipped by Kubeflow Trainer %s", kubeflowTrainerVersion)
}

// TestKubeflowChartRuntimesAreAccepted renders the runtimes Kubeflow Trainer's Helm chart installs
// (every built-in one enabled, with the chart's labels and image tags) with Helm's own engine
// (the kubeflow-chart tool) and has each accepted by the API server's schema and by grove-webhook's
// runtime rules.
func TestKubeflowChartRuntimesAreAccepted(t *testing.T) {
	t.Parallel()
	dir, err := apiserver.ModuleDir("github.com/kubeflow/trainer/v2", kubeflowTrainerVersion)
	require.NoError(t, err)
	bin, err := toolpath.Bin("kubeflow-chart")
	require.NoError(t, err)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, filepath.Join(dir, "charts", "kubeflow-trainer"))
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "kubeflow-chart: %s", stderr.String())
	objs, err := apiserver.DecodeManifests(out)
	require.NoError(t, err)
	var names []string
	for _, obj := range objs {
		require.Equal(t, trainerv1alpha1.ClusterTrainingRuntimeKind, obj.GetKind())
		names = append(names, obj.GetName())
		assert.NoError(t, dryRun(context.Background(), obj), "%s", obj.GetName())
		ctr := &trainerv1alpha1.ClusterTrainingRuntime{}
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(obj.Object, ctr, true), "%s decodes strictly", obj.GetName())
		errs, _ := trainjobadmission.ValidateRuntimeSpec(&ctr.Spec)
		assert.Empty(t, errs, "%s: grove-webhook's runtime rules", obj.GetName())
	}
	assert.ElementsMatch(t, []string{"torch-distributed", "deepspeed-distributed", "mlx-distributed", "jax-distributed", "xgboost-distributed",
		"torchtune-llama3.2-1b", "torchtune-llama3.2-3b", "torchtune-qwen2.5-1.5b", "torch-distributed-with-cache"}, names,
		"every runtime the chart ships")
}

func TestKubeflowExampleTrainJobsAreAcceptedUnchanged(t *testing.T) {
	t.Parallel()
	dir, err := apiserver.ModuleDir("github.com/kubeflow/trainer/v2", kubeflowTrainerVersion)
	require.NoError(t, err)
	ns := newNamespace(t)
	total := 0
	for _, file := range yamlFiles(t, filepath.Join(dir, "examples", "yaml")) {
		n, err := dryRunKinds(context.Background(), t, ns, file, "TrainJob", "TrainingRuntime", "ClusterTrainingRuntime")
		assert.NoError(t, err, file)
		total += n
	}
	assert.GreaterOrEqual(t, total, 5, "expected the TrainJobs of Kubeflow Trainer's examples")
}

// Upstream's e2e workloads as the project builds them (test/upstreamshapes) are accepted by the
// CRDs' schemas and rules with strict field validation, with the ResourceClaimTemplates they
// bring along.
func TestUpstreamShapedWorkloadsAreAccepted(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	for _, shape := range upstreamshapes.All() {
		for _, obj := range shape.Objects(ns) {
			assert.NoError(t, dryRun(context.Background(), obj), "%s: %s", shape.Upstream, obj.GetName())
		}
	}
}

// Upstream's e2e manifests themselves (the upstream corpus tier) are accepted unchanged.
func TestUpstreamGroveManifestsAreAcceptedUnchanged(t *testing.T) {
	t.Parallel()
	dir := upstreamcorpus.Path(t, "compat", "grove-e2e")
	ns := newNamespace(t)
	accepted := 0
	for _, file := range yamlFiles(t, dir) {
		base := filepath.Base(file)
		n, err := dryRunKinds(context.Background(), t, ns, file, "PodCliqueSet", "Queue", "ResourceClaimTemplate")
		assert.NoError(t, err, base)
		assert.Positive(t, n, "%s holds no PodCliqueSet or Queue", base)
		accepted++
	}
	assert.GreaterOrEqual(t, accepted, 40)
}
