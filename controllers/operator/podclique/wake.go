package podclique

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/controllers/operator/coherent"
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
// versions of its PodGangMap.
func (r *Reconciler) cliquesWhoseSharesMoved(ctx context.Context, old, now *grovev1alpha1.PodGangMap) []reconcile.Request {
	pcs, replica, ok := replicaOf(now)
	if !ok {
		return nil
	}
	before, after := coherent.Gangs(pcs, replica, old.Spec.Entries), coherent.Gangs(pcs, replica, now.Spec.Entries)
	return r.replicaCliquesWhere(ctx, now, func(pclq *grovev1alpha1.PodClique) bool {
		return pclq.Spec.UpdateStrategy == grovev1alpha1.CoherentStrategy &&
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
	return r.replicaCliquesWhere(ctx, gang, func(pclq *grovev1alpha1.PodClique) bool {
		if pclq.Spec.UpdateStrategy != grovev1alpha1.CoherentStrategy {
			return pclq.Labels[grovev1alpha1.LabelPodGang] == name || pclq.Labels[grovev1alpha1.LabelBasePodGang] == name
		}
		for _, s := range coherentShares(pclq, gangs) {
			if s.PodGang == name {
				return true
			}
			for _, a := range s.After {
				if a == name {
					return true
				}
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

// replicaCliquesWhere are the requests of the cached PodCliques of obj's replica that match.
func (r *Reconciler) replicaCliquesWhere(ctx context.Context, obj client.Object, match func(*grovev1alpha1.PodClique) bool) []reconcile.Request {
	list := &grovev1alpha1.PodCliqueList{}
	if err := r.Client.List(ctx, list, client.InNamespace(obj.GetNamespace()), client.MatchingLabels{
		grovev1alpha1.LabelPartOf:                   obj.GetLabels()[grovev1alpha1.LabelPartOf],
		grovev1alpha1.LabelPodCliqueSetReplicaIndex: obj.GetLabels()[grovev1alpha1.LabelPodCliqueSetReplicaIndex]},
		client.UnsafeDisableDeepCopy); err != nil { // read only
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if match(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}})
		}
	}
	return reqs
}
