package compatintegration

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/apiserver"
)

// The trainer cases are written as YAML, the way users write them.
func trainJobYAML(ns, name, extraSpec string) string {
	return fmt.Sprintf(`apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainJob
metadata:
  name: %s
  namespace: %s
spec:
  runtimeRef:
    name: torch-distributed
%s`, name, ns, extraSpec)
}

func runtimeYAML(ns, extraSpec string) string {
	return fmt.Sprintf(`apiVersion: trainer.kubeflow.org/v1alpha1
kind: TrainingRuntime
metadata:
  name: rt
  namespace: %s
spec:
%s
  template:
    spec:
      replicatedJobs:
        - name: node
          template:
            spec:
              template:
                spec:
                  containers:
                    - name: node
                      image: busybox:1.36
`, ns, extraSpec)
}

func decodeOne(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	objs, err := apiserver.DecodeManifests([]byte(doc))
	require.NoError(t, err)
	require.Len(t, objs, 1)
	return objs[0]
}

func TestInvalidTrainerObjectsAreRejectedWithFieldPath(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	cases := []struct {
		name     string
		doc      string
		wantPath string
		wantRule string
	}{
		{
			name:     "activeDeadlineSeconds below 1",
			doc:      trainJobYAML(ns, "tj", "  activeDeadlineSeconds: 0\n"),
			wantPath: "spec.activeDeadlineSeconds",
			wantRule: "greater than or equal to 1",
		},
		{
			name:     "negative ttlSecondsAfterFinished",
			doc:      runtimeYAML(ns, "  ttlSecondsAfterFinished: -1"),
			wantPath: "spec.ttlSecondsAfterFinished",
			wantRule: "greater than or equal to 0",
		},
		{
			name:     "unknown workload kind",
			doc:      runtimeYAML(ns, "  workloadKind: Deployment"),
			wantPath: "spec.workloadKind",
			wantRule: "Unsupported value",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := dryRun(context.Background(), decodeOne(t, tc.doc))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantPath)
			assert.Contains(t, err.Error(), tc.wantRule)
		})
	}
}

func TestTrainJobDeadlineAndRuntimeRefAreImmutable(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ctx := context.Background()
	cases := []struct {
		name     string
		original string
		path     []string
		value    any
		wantPath string
	}{
		{"activeDeadlineSeconds changed", "  activeDeadlineSeconds: 600\n", []string{"spec", "activeDeadlineSeconds"}, int64(1200), "spec.activeDeadlineSeconds"},
		{"runtimeRef renamed", "", []string{"spec", "runtimeRef", "name"}, "other-runtime", "spec.runtimeRef"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			obj := decodeOne(t, trainJobYAML(ns, fmt.Sprintf("tj-%d", i), tc.original))
			require.NoError(t, env.Client.Create(ctx, obj))
			before := obj.DeepCopy()
			require.NoError(t, unstructured.SetNestedField(obj.Object, tc.value, tc.path...))
			err := env.Client.Update(ctx, obj)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.wantPath)
			assert.Contains(t, err.Error(), "immutable")

			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(obj.GroupVersionKind())
			require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(obj), stored))
			assert.Equal(t, before.Object["spec"], stored.Object["spec"], "the stored TrainJob is untouched")
		})
	}
}
