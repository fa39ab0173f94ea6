// Package fieldindex is every cache index of the grove-operator, registered once at start (Setup),
// so each lookup of a related object is one index read instead of a scan of the namespace or
// the cluster. With a scaling group of a hundred cliques, finding a clique's dependents by
// scanning took 13% of the operator's CPU in make bench.
package fieldindex

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/topologyconstraints"
	"github.com/kubegrove/grove/internal/reconcile/cacheindex"
)

const (
	// PodsOfClique indexes pods by the PodClique named in their label (earlier incarnations of a
	// clique's name included).
	PodsOfClique = "grove.io/pods-of-podclique"
	// PodsOfPodCliqueSet indexes the pods the operator manages by the PodCliqueSet named in their
	// label: a PodCliqueSet's pass reads its own pods, not every pod of its namespace.
	PodsOfPodCliqueSet = "grove.io/pods-of-podcliqueset"
	// HeldPods indexes the operator's pods that something may hold back (a scheduling gate, or
	// the startup-order hold) under "true": the state metrics explain those, and a scrape then
	// reads them instead of every pod in the cluster.
	HeldPods = "grove.io/held-pods"
	// StartsAfter indexes PodCliques by each clique they start after.
	StartsAfter = "grove.io/podclique-starts-after"
	// PodCliqueSetsOfTopology indexes PodCliqueSets by the ClusterTopologyBinding they name.
	PodCliqueSetsOfTopology = "grove.io/podcliqueset-topology"
	// CliquesOfPodGang indexes PodCliques by the PodGangs whose events concern them (PodGangKeys):
	// a Coherent replica's gang changes at each step of an update, and listing all of the
	// replica's 200 cliques for each of its events was a twentieth of the operator's CPU in
	// make bench's Coherent rollout.
	CliquesOfPodGang = "grove.io/podcliques-of-podgang"
)

// All are the grove-operator's indexes (unit tests give them to a fake client).
var All = []cacheindex.Index{
	{Object: &corev1.Pod{}, Field: PodsOfClique, Extract: func(o client.Object) []string {
		if name, ok := o.GetLabels()[grovev1alpha1.LabelPodClique]; ok {
			return []string{name}
		}
		return nil
	}},
	{Object: &corev1.Pod{}, Field: PodsOfPodCliqueSet, Extract: func(o client.Object) []string {
		l := o.GetLabels()
		if name, ok := l[grovev1alpha1.LabelPartOf]; ok && l[grovev1alpha1.LabelManagedBy] == grovev1alpha1.LabelManagedByValue {
			return []string{name}
		}
		return nil
	}},
	{Object: &corev1.Pod{}, Field: HeldPods, Extract: func(o client.Object) []string {
		if pod, ok := o.(*corev1.Pod); ok && MayBeHeld(pod) {
			return []string{"true"}
		}
		return nil
	}},
	{Object: &grovev1alpha1.PodClique{}, Field: StartsAfter, Extract: func(o client.Object) []string {
		if pclq, ok := o.(*grovev1alpha1.PodClique); ok {
			return pclq.Spec.StartsAfter
		}
		return nil
	}},
	{Object: &grovev1alpha1.PodClique{}, Field: CliquesOfPodGang, Extract: func(o client.Object) []string {
		if pclq, ok := o.(*grovev1alpha1.PodClique); ok {
			return PodGangKeys(pclq)
		}
		return nil
	}},
	{Object: &grovev1alpha1.PodCliqueSet{}, Field: PodCliqueSetsOfTopology, Extract: func(o client.Object) []string {
		if pcs, ok := o.(*grovev1alpha1.PodCliqueSet); ok {
			if name, _ := topologyconstraints.TopologyName(pcs); name != "" {
				return []string{name}
			}
		}
		return nil
	}},
}

// Setup registers every index with the manager's cache; call it once, before the reconcilers.
func Setup(ctx context.Context, indexer client.FieldIndexer) error {
	return cacheindex.Register(ctx, indexer, All)
}

// MayBeHeld reports whether something may hold back a pod of a PodClique: it has a scheduling
// gate, or waits for its parents at start.
func MayBeHeld(pod *corev1.Pod) bool {
	if _, ok := pod.Labels[grovev1alpha1.LabelPodClique]; !ok {
		return false
	}
	return len(pod.Spec.SchedulingGates) > 0 || pod.Annotations[grovev1alpha1.AnnotationStartupGate] == grovev1alpha1.StartupGateWaiting
}

// PodGangKeys are the keys a PodClique is indexed under in CliquesOfPodGang: the gang its pods
// join and the base gang they wait for, as its labels name them; and a standalone clique of a
// Coherent replica, whose pods join several gangs as the replica's PodGangMap shares them out,
// under its replica's CoherentStandaloneKey.
func PodGangKeys(pclq *grovev1alpha1.PodClique) []string {
	l := pclq.Labels
	var keys []string
	if pclq.Spec.UpdateStrategy == grovev1alpha1.CoherentStrategy && l[grovev1alpha1.LabelPodCliqueScalingGroup] == "" {
		keys = append(keys, CoherentStandaloneKey(l[grovev1alpha1.LabelPartOf], l[grovev1alpha1.LabelPodCliqueSetReplicaIndex]))
	}
	for _, label := range []string{grovev1alpha1.LabelPodGang, grovev1alpha1.LabelBasePodGang} {
		if gang := l[label]; gang != "" && !slices.Contains(keys, gang) {
			keys = append(keys, gang)
		}
	}
	return keys
}

// CoherentStandaloneKey is the CliquesOfPodGang key of a Coherent replica's standalone cliques
// (a colon is in no object's name: no gang's key is one).
func CoherentStandaloneKey(pcs, replica string) string {
	return "coherent-standalone:" + pcs + "/" + replica
}
