package webhookintegration

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/apiserver"
)

func TestTrainJobForARuntimeNotYetCreatedIsAdmittedWithAWarning(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	out, err := kubectlApply(t, ns, `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata: {name: early}
spec:
  runtimeRef: {name: later, kind: TrainingRuntime}
`)
	require.NoError(t, err, out)
	assert.Contains(t, out, `Warning: spec.runtimeRef: TrainingRuntime "later" does not exist yet`)
}

func TestRuntimeTemplatesCannotCarryTheirOwnDeadlineOrTTL(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	out, err := kubectlApply(t, ns, `apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata: {name: bad}
spec:
  ttlSecondsAfterFinished: 30
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            spec:
              activeDeadlineSeconds: 600
              template:
                spec:
                  containers: [{name: node, image: busybox}]
`)
	require.Error(t, err, out)
	assert.Contains(t, out, "spec.template.spec.replicatedJobs[0].template.spec.activeDeadlineSeconds")
	assert.Contains(t, out, "use the TrainJob's spec.activeDeadlineSeconds")
	assert.Contains(t, out, "Warning: spec.ttlSecondsAfterFinished is 30s")
}

func TestKubeflowShippedRuntimesAndExamplesPassAdmission(t *testing.T) {
	t.Parallel()
	dir, err := apiserver.ModuleDir("github.com/kubeflow/trainer/v2", "v2.3.0")
	require.NoError(t, err)
	ns := newNamespace(t)
	files, err := filepath.Glob(filepath.Join(dir, "manifests", "base", "runtimes", "*.yaml"))
	require.NoError(t, err)
	examples, err := filepath.Glob(filepath.Join(dir, "examples", "yaml", "*.yaml"))
	require.NoError(t, err)
	admitted := 0
	for _, file := range append(files, examples...) {
		objs, err := apiserver.ReadManifests(file)
		require.NoError(t, err)
		for _, obj := range objs {
			switch obj.GetKind() {
			case "ClusterTrainingRuntime":
			case "TrainingRuntime", "TrainJob":
				obj.SetNamespace(ns)
			default:
				continue
			}
			if assert.NoError(t, env.Client.Create(context.Background(), obj, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict)), filepath.Base(file)) {
				admitted++
			}
		}
	}
	assert.GreaterOrEqual(t, admitted, 10)
}
