// Package fieldindex is every cache index of the backend-controller, registered once at start
// (Setup), so a ClusterTopologyBinding, a topology object or a Kueue LocalQueue that changes
// finds what depends on it with one index read instead of a list and a filter.
package fieldindex

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/internal/reconcile/cacheindex"
)

const (
	// PodGangsOfTopology indexes PodGangs by the ClusterTopologyBinding their annotation names.
	PodGangsOfTopology = "scheduler.grove.io/podgang-topology"
	// PodGangsOfQueue indexes PodGangs by the Kueue LocalQueue they queue in.
	PodGangsOfQueue = "scheduler.grove.io/podgang-queue"
	// BindingsOfTopologyObject indexes ClusterTopologyBindings by each scheduler topology object
	// they name, as TopologyObjectKey(scheduler, name).
	BindingsOfTopologyObject = "grove.io/binding-topology-object"
)

// TopologyObjectKey is the BindingsOfTopologyObject value of a scheduler's topology object.
func TopologyObjectKey(scheduler, name string) string { return scheduler + "/" + name }

// PodGangs are the indexes of PodGangs, which every backend-controller watches.
var PodGangs = []cacheindex.Index{
	{Object: &schedulerv1alpha1.PodGang{}, Field: PodGangsOfTopology, Extract: func(o client.Object) []string {
		if name := o.GetAnnotations()[schedulerv1alpha1.AnnotationTopologyName]; name != "" {
			return []string{name}
		}
		return nil
	}},
	{Object: &schedulerv1alpha1.PodGang{}, Field: PodGangsOfQueue, Extract: func(o client.Object) []string {
		if pg, ok := o.(*schedulerv1alpha1.PodGang); ok && pg.Spec.QueueName != "" {
			return []string{pg.Spec.QueueName}
		}
		return nil
	}},
}

// Bindings are the indexes of ClusterTopologyBindings, which only a backend with a topology
// object of its own watches (backends.TopologySyncer): registering them starts a watch.
var Bindings = []cacheindex.Index{
	{Object: &grovev1alpha1.ClusterTopologyBinding{}, Field: BindingsOfTopologyObject, Extract: func(o client.Object) []string {
		ct, ok := o.(*grovev1alpha1.ClusterTopologyBinding)
		if !ok {
			return nil
		}
		var out []string
		for _, s := range ct.Spec.SchedulerTopologyBindings {
			out = append(out, TopologyObjectKey(s.SchedulerName, s.TopologyReference))
		}
		return out
	}},
}

// Setup registers the indexes with the manager's cache, those of bindings only for a backend
// that keeps a topology object; call it once, before the reconcilers.
func Setup(ctx context.Context, indexer client.FieldIndexer, topology bool) error {
	if err := cacheindex.Register(ctx, indexer, PodGangs); err != nil {
		return err
	}
	if !topology {
		return nil
	}
	return cacheindex.Register(ctx, indexer, Bindings)
}
