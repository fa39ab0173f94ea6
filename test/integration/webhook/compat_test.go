package webhook

import (
	"context"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/apiserver"
	"github.com/kubegrove/grove/test/toolpath"
)

// Upstream Grove's e2e manifests must pass this project's admission too, not only its CRDs
// (KAI is enabled here, as upstream's suite assumes). Manifests using features outside this
// project's scope are rejected by the CRD schema, naming the field.
var unsupported = map[string]string{
	"workload-resource-sharing.yaml": `unknown field "spec.template.resourceClaimTemplates"`,
}

func TestUpstreamGroveManifestsPassAdmissionUnchanged(t *testing.T) {
	t.Parallel()
	root, err := toolpath.RepoRoot()
	require.NoError(t, err)
	files, err := filepath.Glob(filepath.Join(root, "..", "shared", "compat", "grove-e2e", "*.yaml"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	sort.Strings(files)
	ns := newNamespace(t)
	admitted := 0
	for _, file := range files {
		objs, err := apiserver.ReadManifests(file)
		require.NoError(t, err)
		for _, obj := range objs {
			if obj.GetKind() != "PodCliqueSet" {
				continue
			}
			obj.SetNamespace(ns)
			err := env.Client.Create(context.Background(), obj, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
			if want, ok := unsupported[filepath.Base(file)]; ok {
				require.Error(t, err, file)
				assert.Contains(t, err.Error(), want)
				continue
			}
			if assert.NoError(t, err, filepath.Base(file)) {
				admitted++
			}
		}
	}
	t.Logf("%d upstream PodCliqueSets admitted", admitted)
}
