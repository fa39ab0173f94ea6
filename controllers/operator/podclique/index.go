package podclique

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// Cache indexes. Every pass reads its clique's pods, and every update of a clique looks up the
// cliques that start after it; found by scanning the namespace, both cost a pass time in
// proportion to everything else there: with a scaling group of a hundred cliques, finding
// dependents alone took 13% of the operator's CPU in make bench.
const (
	// indexPodsOfClique indexes pods by the PodClique named in their label (earlier incarnations
	// of a clique's name included).
	indexPodsOfClique = "grove.io/pods-of-podclique"
	// indexStartsAfter indexes PodCliques by each clique they start after.
	indexStartsAfter = "grove.io/podclique-starts-after"
)

type index struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

var indexes = []index{
	{&corev1.Pod{}, indexPodsOfClique, func(o client.Object) []string {
		if name, ok := o.GetLabels()[grovev1alpha1.LabelPodClique]; ok {
			return []string{name}
		}
		return nil
	}},
	{&grovev1alpha1.PodClique{}, indexStartsAfter, func(o client.Object) []string {
		pclq, ok := o.(*grovev1alpha1.PodClique)
		if !ok {
			return nil
		}
		return pclq.Spec.StartsAfter
	}},
}

func registerIndexes(ctx context.Context, indexer client.FieldIndexer) error {
	for _, i := range indexes {
		if err := indexer.IndexField(ctx, i.obj, i.field, i.extract); err != nil {
			return err
		}
	}
	return nil
}
