// Package compat proves against a real kube-apiserver that the project's CRDs accept what users
// bring (upstream Grove and Kubeflow Trainer manifests, the shipped samples) and reject bad
// input with the field path and the rule.
package compatintegration

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubegrove/grove/test/apiserver"
)

var env *apiserver.Env

func TestMain(m *testing.M) {
	var err error
	env, err = apiserver.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "stopping envtest:", err)
	}
	os.Exit(code)
}

var nsCounter atomic.Int32

// newNamespace creates a namespace for one test so parallel tests never see each other's objects.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("compat-%d", nsCounter.Add(1))}}
	require.NoError(t, env.Client.Create(context.Background(), ns))
	return ns.Name
}

// dryRun creates obj with dryRun=All and strict field validation, so an unknown or misspelt field
// is an error instead of being pruned silently.
func dryRun(ctx context.Context, obj client.Object) error {
	return env.Client.Create(ctx, obj, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
}
