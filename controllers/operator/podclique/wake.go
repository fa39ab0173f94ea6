package podclique

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/coherent"
	"github.com/kubegrove/grove/controllers/operator/fieldindex"
)

// Under Coherent a replica's PodGangMap and its PodGangs change at every step of an update, and
// a replica may hold hundreds of PodCliques (100 scaling-group replicas of two cliques in make
// bench's rollout). A step concerns the few cliques whose shares it moves and those joining, or
// waiting for, the gangs it touches: waking every clique of the replica at each of a step's half
// dozen map and gang events was most of the operator's work during a Coherent rollout.

// mapChanges wakes, on a PodGangMap update, the cliques whose shares it moved (all that a pass
// reads of the map, see coherentShares); on its creation or deletion, every clique of the replica.
func (r *Reconciler) mapChanges() handler.EventHandler {
	all := func(ctx context.Context, obj client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		for _, req := range r.cliquesOfReplica(ctx, obj) {
			q.Add(req)
		}
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, oldOK := e.ObjectOld.(*grovev1alpha1.PodGangMap)
			now, nowOK := e.ObjectNew.(*grovev1alpha1.PodGangMap)
			if !oldOK || !nowOK {
				all(ctx, e.ObjectNew, q)
				return
			}
			for _, req := range r.cliquesWhoseSharesMoved(ctx, old, now) {
				q.Add(req)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			all(ctx, e.Object, q)
		},
	}
}

// cliquesWhoseSharesMoved are the replica's Coherent cliques whose shares differ between two
// versions of its PodGangMap. A scaling-group member's share is its own gang and what that gang
// waits for: only members of gangs whose dependencies changed (or that came or went) are read,
// with the replica's standalone cliques.
func (r *Reconciler) cliquesWhoseSharesMoved(ctx context.Context, old, now *grovev1alpha1.PodGangMap) []reconcile.Request {
	pcs, replica, ok := replicaOf(now)
	if !ok {
		return nil
	}
	before, after := coherent.Gangs(pcs, replica, old.Spec.Entries), coherent.Gangs(pcs, replica, now.Spec.Entries)
	keys := []string{fieldindex.CoherentStandaloneKey(pcs, now.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex])}
	afterOf := func(gangs []coherent.Gang) map[string][]string {
		m := make(map[string][]string, len(gangs))
		for _, g := range gangs {
			m[g.Name] = g.After
		}
		return m
	}
	was, is := afterOf(before), afterOf(after)
	for name, deps := range is {
		if prev, ok := was[name]; !ok || !slices.Equal(prev, deps) {
			keys = append(keys, name)
		}
	}
	for name := range was {
		if _, ok := is[name]; !ok {
			keys = append(keys, name)
		}
	}
	return r.cliquesUnder(ctx, now.Namespace, keys, func(pclq *grovev1alpha1.PodClique) bool {
		return pclq.Spec.UpdateStrategy == grovev1alpha1.CoherentStrategy && inReplica(pclq, now) &&
			!equality.Semantic.DeepEqual(coherentShares(pclq, before), coherentShares(pclq, after))
	})
}

// cliquesOfCoherentGang are the cliques of a Coherent PodGang's replica that join it or wait for
// it, by the replica's PodGangMap as cached (every clique while it is not); a clique of another
// strategy by its labels. A map the cache shows older than the gang is no loss: the map's own
// update wakes the cliques it moves, and they read the gang then.
func (r *Reconciler) cliquesOfCoherentGang(ctx context.Context, gang client.Object) []reconcile.Request {
	pcs, replica, ok := replicaOf(gang)
	if !ok {
		return nil
	}
	pgm := &grovev1alpha1.PodGangMap{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: gang.GetNamespace(), Name: grovev1alpha1.PodGangMapName(pcs, replica)}, pgm); err != nil {
		return r.cliquesOfReplica(ctx, gang)
	}
	gangs := coherent.Gangs(pcs, replica, pgm.Spec.Entries)
	name := gang.GetName()
	// Its own cliques, those of the gangs waiting for it, and the replica's standalone cliques
	// (their shares say which gangs their pods join).
	keys := []string{name, fieldindex.CoherentStandaloneKey(pcs, gang.GetLabels()[grovev1alpha1.LabelPodCliqueSetReplicaIndex])}
	for _, g := range gangs {
		if slices.Contains(g.After, name) {
			keys = append(keys, g.Name)
		}
	}
	return r.cliquesUnder(ctx, gang.GetNamespace(), keys, func(pclq *grovev1alpha1.PodClique) bool {
		if !inReplica(pclq, gang) {
			return false
		}
		if pclq.Spec.UpdateStrategy != grovev1alpha1.CoherentStrategy {
			return pclq.Labels[grovev1alpha1.LabelPodGang] == name || pclq.Labels[grovev1alpha1.LabelBasePodGang] == name
		}
		for _, s := range coherentShares(pclq, gangs) {
			if s.PodGang == name || slices.Contains(s.After, name) {
				return true
			}
		}
		return false
	})
}

// replicaOf is the PodCliqueSet and replica index an object of a replica is labelled with.
func replicaOf(obj client.Object) (string, int, bool) {
	pcs := obj.GetLabels()[grovev1alpha1.LabelPartOf]
	replica, ok := grovev1alpha1.ReplicaIndexOf(obj)
	return pcs, replica, pcs != "" && ok
}

// inReplica reports whether a PodClique belongs to the PodCliqueSet replica obj is labelled with.
func inReplica(pclq *grovev1alpha1.PodClique, obj client.Object) bool {
	l := obj.GetLabels()
	return pclq.Labels[grovev1alpha1.LabelPartOf] == l[grovev1alpha1.LabelPartOf] &&
		pclq.Labels[grovev1alpha1.LabelPodCliqueSetReplicaIndex] == l[grovev1alpha1.LabelPodCliqueSetReplicaIndex]
}

// cliquesUnder are the requests of the cached PodCliques of a namespace indexed under any of keys
// (fieldindex.CliquesOfPodGang) that match, each once. A key the cache cannot list is logged and
// skipped: the others' cliques are still woken.
func (r *Reconciler) cliquesUnder(ctx context.Context, namespace string, keys []string, match func(*grovev1alpha1.PodClique) bool) []reconcile.Request {
	listed, seen := map[string]bool{}, map[string]bool{}
	var reqs []reconcile.Request
	for _, key := range keys {
		if listed[key] {
			continue
		}
		listed[key] = true
		list := &grovev1alpha1.PodCliqueList{}
		if err := r.Client.List(ctx, list, client.InNamespace(namespace), client.MatchingFields{fieldindex.CliquesOfPodGang: key},
			client.UnsafeDisableDeepCopy); err != nil { // read only
			log.FromContext(ctx).Error(err, "listing the PodCliques a PodGang event concerns", "key", key)
			continue
		}
		for i := range list.Items {
			pclq := &list.Items[i]
			if seen[pclq.Name] || !match(pclq) {
				continue
			}
			seen[pclq.Name] = true
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pclq.Namespace, Name: pclq.Name}})
		}
	}
	return reqs
}
