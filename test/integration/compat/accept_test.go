package compatintegration

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/toolpath"
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

func TestUpstreamGroveManifestsAreAcceptedUnchanged(t *testing.T) {
	t.Parallel()
	root, err := toolpath.RepoRoot()
	require.NoError(t, err)
	dir := filepath.Join(root, "..", "shared", "compat", "grove-e2e")
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("the upstream Grove corpus is expected beside the clone at %s: %v", dir, err)
	}
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
