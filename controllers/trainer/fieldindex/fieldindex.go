// Package fieldindex is every cache index of the trainer-controller, registered once at start
// (Setup): a runtime that appears wakes exactly the TrainJobs waiting for it.
package fieldindex

import (
	"context"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/internal/reconcile/cacheindex"
)

// RuntimeRef indexes TrainJobs by RuntimeKey of the runtime they name.
const RuntimeRef = "spec.runtimeRef"

// RuntimeKey is the RuntimeRef value of a runtime: "<kind>/<name>".
func RuntimeKey(kind, name string) string { return kind + "/" + name }

// All are the trainer-controller's indexes (unit tests give them to a fake client).
var All = []cacheindex.Index{
	{Object: &trainerv1alpha1.TrainJob{}, Field: RuntimeRef, Extract: func(o client.Object) []string {
		tj, ok := o.(*trainerv1alpha1.TrainJob)
		if !ok {
			return nil
		}
		return []string{RuntimeKey(ptr.Deref(tj.Spec.RuntimeRef.Kind, trainerv1alpha1.ClusterTrainingRuntimeKind), tj.Spec.RuntimeRef.Name)}
	}},
}

// Setup registers every index with the manager's cache; call it once, before the reconcilers.
func Setup(ctx context.Context, indexer client.FieldIndexer) error {
	return cacheindex.Register(ctx, indexer, All)
}
