package podclique

import (
	"context"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// labelledMap is midUpdate with the labels its PodCliqueSet gives it.
func labelledMap() *grovev1alpha1.PodGangMap {
	return midUpdate().OfReplica("inf", "0").Obj()
}

// replicaCliques are replica 0's cliques under midUpdate: a standalone router, prefill replica 0
// moved to the new anchor, prefill replica 1 in its old tail, and a clique of another strategy.
func replicaCliques() []client.Object {
	legacy := builders.PodClique("ns", "inf-0-legacy").OfReplica("inf", "0").InGang("inf-0").Obj()
	return []client.Object{
		coherentClique("inf-0-router", 5).Obj(),
		coherentClique("inf-0-prefill-0-leader", 1).OfGroupReplica("inf-0-prefill", "0").InGang("inf-0-200").Obj(),
		coherentClique("inf-0-prefill-1-leader", 1).OfGroupReplica("inf-0-prefill", "1").InGang("inf-0-101-prefill-1").Obj(),
		legacy,
	}
}

func requestNames(reqs []reconcile.Request) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.Name)
	}
	sort.Strings(out)
	return out
}

func TestAPodGangMapUpdateWakesOnlyTheCliquesWhoseSharesItMoves(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*grovev1alpha1.PodGangMap)
		want []string
	}{
		{name: "a step moving a router pod to a new anchor wakes the router alone",
			edit: func(m *grovev1alpha1.PodGangMap) {
				m.Spec.Entries[0].PodCliques["inf-0-router"] = 2
				m.Spec.Entries = append(m.Spec.Entries, grovev1alpha1.PodGangEntry{Epoch: "300", PodCliqueSetGenerationHash: "v2",
					Role: grovev1alpha1.PodGangRoleAnchor, PodCliques: map[string]int32{"inf-0-router": 1}})
			},
			want: []string{"inf-0-router"}},
		{name: "a gang's dependencies changed wake the members in it",
			edit: func(m *grovev1alpha1.PodGangMap) { m.Spec.Entries[1].DependsOn = []string{"100", "200"} },
			want: []string{"inf-0-prefill-1-leader"}},
		{name: "a tail replica moved to the new anchor wakes its members: the gang they are in, which waited for the old anchor, left the map",
			edit: func(m *grovev1alpha1.PodGangMap) {
				m.Spec.Entries[1].PCSGReplicaIndices = nil
				m.Spec.Entries[2].PCSGReplicaIndices["prefill"] = []int32{0, 1}
			},
			want: []string{"inf-0-prefill-1-leader"}},
		{name: "the new anchor's replica moved on wakes none: its gang waited for nothing, and its members follow when their group relabels them",
			edit: func(m *grovev1alpha1.PodGangMap) {
				m.Spec.Entries[2].PCSGReplicaIndices = nil
				m.Spec.Entries = append(m.Spec.Entries, grovev1alpha1.PodGangEntry{Epoch: "300", PodCliqueSetGenerationHash: "v2",
					Role: grovev1alpha1.PodGangRoleAnchor, PCSGReplicaIndices: map[string][]int32{"prefill": {0}}})
			}},
		{name: "entries written in another order move nothing",
			edit: func(m *grovev1alpha1.PodGangMap) {
				m.Spec.Entries[0], m.Spec.Entries[2] = m.Spec.Entries[2], m.Spec.Entries[0]
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := labelledMap()
			now := old.DeepCopy()
			tc.edit(now)
			r := reconcilerFor(t, fakeClient(t).WithObjects(replicaCliques()...).Build())

			got := r.cliquesWhoseSharesMoved(context.Background(), old, now)

			assert.Equal(t, tc.want, requestNames(got))
		})
	}
}

func TestACoherentPodGangWakesTheCliquesJoiningOrWaitingForIt(t *testing.T) {
	all := []string{"inf-0-legacy", "inf-0-prefill-0-leader", "inf-0-prefill-1-leader", "inf-0-router"}
	for _, tc := range []struct {
		name   string
		gang   string
		noMap  bool
		wanted []string
	}{
		{name: "the new anchor: the router pods it holds and the group replica moved into it",
			gang: "inf-0-200", wanted: []string{"inf-0-prefill-0-leader", "inf-0-router"}},
		{name: "the old anchor: the router pods it still holds and the tail waiting for it",
			gang: "inf-0-100", wanted: []string{"inf-0-prefill-1-leader", "inf-0-router"}},
		{name: "a tail's gang: its group replica's members",
			gang: "inf-0-101-prefill-1", wanted: []string{"inf-0-prefill-1-leader"}},
		{name: "a gang of no entry wakes none", gang: "inf-0-999"},
		{name: "without the map cached, every clique of the replica", gang: "inf-0-200", noMap: true, wanted: all},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := replicaCliques()
			if !tc.noMap {
				objs = append(objs, labelledMap())
			}
			r := reconcilerFor(t, fakeClient(t).WithObjects(objs...).Build())
			gang := builders.PodGang("ns", tc.gang).OfReplica("inf", "0").Label(grovev1alpha1.LabelEpoch, "1").Obj()

			got := r.cliquesOfPodGang(context.Background(), gang)

			assert.Equal(t, tc.wanted, requestNames(got))
		})
	}
}

func TestAClassicPodGangWakesItsOwnCliquesAlone(t *testing.T) {
	r := reconcilerFor(t, fakeClient(t).WithObjects(append(replicaCliques(), labelledMap())...).Build())
	gang := builders.PodGang("ns", "inf-0").OfReplica("inf", "0").Obj()

	assert.Equal(t, []string{"inf-0-legacy"}, requestNames(r.cliquesOfPodGang(context.Background(), gang)))
}

func TestAPodGangMapCreatedOrDeletedWakesTheWholeReplicaAndAnUnchangedUpdateNone(t *testing.T) {
	r := reconcilerFor(t, fakeClient(t).WithObjects(replicaCliques()...).Build())
	h := r.mapChanges()
	pgm := labelledMap()
	all := []string{"inf-0-legacy", "inf-0-prefill-0-leader", "inf-0-prefill-1-leader", "inf-0-router"}
	for _, tc := range []struct {
		name string
		send func(context.Context, workqueue.TypedRateLimitingInterface[reconcile.Request])
		want []string
	}{
		{"created", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Create(ctx, event.CreateEvent{Object: pgm}, q)
		}, all},
		{"deleted", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			h.Delete(ctx, event.DeleteEvent{Object: pgm}, q)
		}, all},
		{"updated without a change of its entries", func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			now := pgm.DeepCopy()
			now.ResourceVersion = "2"
			h.Update(ctx, event.UpdateEvent{ObjectOld: pgm, ObjectNew: now}, q)
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
			defer q.ShutDown()

			tc.send(context.Background(), q)

			var got []reconcile.Request
			for q.Len() > 0 {
				req, _ := q.Get()
				got = append(got, req)
				q.Done(req)
			}
			assert.Equal(t, tc.want, requestNames(got))
		})
	}
}

func TestAReplicasGangAndMapWakeNoCliqueOfAnotherReplica(t *testing.T) {
	otherRouter := builders.PodClique("ns", "inf-1-router").OfReplica("inf", "1").Replicas(5, 1).
		UpdateStrategy(grovev1alpha1.CoherentStrategy).GenerationHash("v2").Obj()
	r := reconcilerFor(t, fakeClient(t).WithObjects(append(replicaCliques(), labelledMap(), otherRouter)...).Build())

	gang := builders.PodGang("ns", "inf-0-100").OfReplica("inf", "0").Label(grovev1alpha1.LabelEpoch, "1").Obj()
	assert.Equal(t, []string{"inf-0-prefill-1-leader", "inf-0-router"}, requestNames(r.cliquesOfPodGang(context.Background(), gang)))

	old := labelledMap()
	now := old.DeepCopy()
	now.Spec.Entries[0].PodCliques["inf-0-router"] = 2
	now.Spec.Entries = append(now.Spec.Entries, grovev1alpha1.PodGangEntry{Epoch: "300", PodCliqueSetGenerationHash: "v2",
		Role: grovev1alpha1.PodGangRoleAnchor, PodCliques: map[string]int32{"inf-0-router": 1}})
	assert.Equal(t, []string{"inf-0-router"}, requestNames(r.cliquesWhoseSharesMoved(context.Background(), old, now)))
}
