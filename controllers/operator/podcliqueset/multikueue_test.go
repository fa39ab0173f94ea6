package podcliqueset

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/writelog"
)

// recordWrites makes the fixture's reconciler write through a client that notes every write it
// makes (verb, type and name).
func (f *fixture) recordWrites() *writelog.Log {
	c, log := writelog.Wrap(f.c.(client.WithWatch))
	f.r.Client = c
	return log
}

// children lists what the fake cluster holds of the PodCliqueSet's children.
func (f *fixture) children(t *testing.T) (gangs map[string]*schedulerv1alpha1.PodGang, cliques, groups, services int) {
	t.Helper()
	ctx := context.Background()
	pgs := &schedulerv1alpha1.PodGangList{}
	require.NoError(t, f.c.List(ctx, pgs, client.InNamespace("ns")))
	gangs = map[string]*schedulerv1alpha1.PodGang{}
	for i := range pgs.Items {
		gangs[pgs.Items[i].Name] = &pgs.Items[i]
	}
	pclqs := &grovev1alpha1.PodCliqueList{}
	require.NoError(t, f.c.List(ctx, pclqs, client.InNamespace("ns")))
	pcsgs := &grovev1alpha1.PodCliqueScalingGroupList{}
	require.NoError(t, f.c.List(ctx, pcsgs, client.InNamespace("ns")))
	svcs := &corev1.ServiceList{}
	require.NoError(t, f.c.List(ctx, svcs, client.InNamespace("ns")))
	return gangs, len(pclqs.Items), len(pcsgs.Items), len(svcs.Items)
}

func TestAPodCliqueSetMultiKueueDispatchesKeepsOnlyItsGangsHere(t *testing.T) {
	cases := []struct {
		name string
		pcs  *builders.PodCliqueSetBuilder
		// want maps each gang to the gang it is placed after.
		want map[string]string
	}{
		{"one gang", builders.PodCliqueSet("ns", "inf").Clique("worker", 2), map[string]string{"inf-0": ""}},
		{"two replicas and a scaling group scaled beyond its minimum",
			builders.PodCliqueSet("ns", "inf").Replicas(2).Clique("router", 1).Clique("leader", 1).Clique("worker", 2).ScalingGroup("prefill", 3, 2, "leader", "worker"),
			map[string]string{"inf-0": "", "inf-0-prefill-0": "inf-0", "inf-1": "inf-0", "inf-1-prefill-0": "inf-0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := tc.pcs.Training(0).Label(grovev1alpha1.LabelKueueQueueName, "team-a").ManagedBy(grovev1alpha1.ManagedByMultiKueue).Obj()
			f := newFixture(t, pcs)
			writes := f.recordWrites()

			f.reconcile(t, "inf")

			gangs, cliques, groups, services := f.children(t)
			assert.Zero(t, cliques, "no PodCliques: the PodCliqueSet runs on a worker")
			assert.Zero(t, groups, "no PodCliqueScalingGroups")
			assert.Zero(t, services, "no Services")
			assert.Zero(t, f.statusWrites, "no status: MultiKueue copies the worker's")
			got := map[string]string{}
			for name, pg := range gangs {
				require.NotNil(t, pg.Spec.MultiKueue, name)
				assert.Equal(t, schedulerv1alpha1.MultiKueueManager, pg.Spec.MultiKueue.Role, name)
				got[name] = pg.Spec.MultiKueue.PlacedAfter
				assert.Equal(t, "team-a", pg.Spec.QueueName, "%s: queued, for the backend-controller's Workload", name)
				owner := metav1.GetControllerOf(pg)
				require.NotNil(t, owner, name)
				assert.Equal(t, "PodCliqueSet", owner.Kind, name)
				assert.Equal(t, pcs.UID, owner.UID, name)
			}
			assert.Equal(t, tc.want, got, "the first gang is placed first, every other after it")
			assert.Len(t, writes.Writes(), len(tc.want), "one create per gang: %v", writes.Writes())

			writes.Reset()
			f.reconcile(t, "inf")
			assert.Empty(t, writes.Writes(), "a second pass writes nothing")
			stored := &grovev1alpha1.PodCliqueSet{}
			require.NoError(t, f.c.Get(context.Background(), client.ObjectKeyFromObject(pcs), stored))
			assert.Empty(t, stored.Status.Conditions, "the manager's copy has no status of its own")
		})
	}
}

func TestMultiKueuesCopyOnAWorkerRunsUnderTheCopiedWorkloadsAndSaysWhere(t *testing.T) {
	const origin = "manager-7f3c"
	cases := []struct {
		name        string
		clusterName string
		labels      map[string]string
		wantRole    schedulerv1alpha1.MultiKueueRole // "" for gangs MultiKueue takes no part in
		wantMessage string                           // "" for no Dispatched condition
	}{
		{"MultiKueue's copy on the worker named worker-1", "worker-1",
			map[string]string{grovev1alpha1.LabelKueueQueueName: "team-a", grovev1alpha1.LabelMultiKueueOrigin: origin},
			schedulerv1alpha1.MultiKueueWorker, `runs on cluster worker-1, dispatched by Kueue's MultiKueue (origin "manager-7f3c")`},
		{"MultiKueue's copy on a worker that does not know its name", "",
			map[string]string{grovev1alpha1.LabelKueueQueueName: "team-a", grovev1alpha1.LabelMultiKueueOrigin: origin},
			schedulerv1alpha1.MultiKueueWorker, `runs on a worker cluster of MultiKueue (kueue.multiKueue.clusterName is not configured here), dispatched by Kueue's MultiKueue (origin "manager-7f3c")`},
		{"a PodCliqueSet queued here", "worker-1", map[string]string{grovev1alpha1.LabelKueueQueueName: "team-a"}, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := builders.PodCliqueSet("ns", "inf").Replicas(2).Training(0).Clique("worker", 2)
			for k, v := range tc.labels {
				b.Label(k, v)
			}
			pcs := b.Obj()
			f := newFixture(t, pcs)
			f.r.ClusterName = tc.clusterName

			for pass := 0; pass < 5 && f.statusWrites == 0; pass++ {
				f.reconcile(t, "inf")
			}

			require.NotZero(t, f.statusWrites, "the copy runs here: its status is written")
			gangs, cliques, _, _ := f.children(t)
			assert.NotZero(t, cliques, "its PodCliques run here")
			require.Len(t, gangs, 2)
			for name, pg := range gangs {
				if tc.wantRole == "" {
					assert.Nil(t, pg.Spec.MultiKueue, name)
					continue
				}
				require.NotNil(t, pg.Spec.MultiKueue, name)
				assert.Equal(t, tc.wantRole, pg.Spec.MultiKueue.Role, "%s: admitted under MultiKueue's copy of its Workload", name)
				assert.Empty(t, pg.Spec.MultiKueue.PlacedAfter, name)
			}
			stored := &grovev1alpha1.PodCliqueSet{}
			require.NoError(t, f.c.Get(context.Background(), client.ObjectKeyFromObject(pcs), stored))
			c := meta.FindStatusCondition(stored.Status.Conditions, grovev1alpha1.ConditionDispatched)
			if tc.wantMessage == "" {
				assert.Nil(t, c)
				return
			}
			require.NotNil(t, c)
			assert.Equal(t, metav1.ConditionTrue, c.Status)
			assert.Equal(t, grovev1alpha1.ReasonRunsOnWorker, c.Reason)
			assert.Equal(t, tc.wantMessage, c.Message)
		})
	}
}

func TestAWorkersEndedCopyIsHeldUntilMultiKueueRemovedEveryGangsWorkload(t *testing.T) {
	const (
		admitted = schedulerv1alpha1.ReasonQueueAdmitted
		gone     = schedulerv1alpha1.ReasonAwaitingMultiKueueWorkload
	)
	cases := []struct {
		name      string
		deleting  bool
		phase     grovev1alpha1.PodCliqueSetPhase
		gangs     []string // each gang's QueueAdmitted reason
		finalizer bool     // the copy carries the finalizer before the pass
		want      bool     // ... and after it
		held      bool     // the pass ends there
	}{
		{name: "a running copy gets the finalizer", phase: grovev1alpha1.PodCliqueSetPhaseRunning, gangs: []string{admitted}, want: true},
		{name: "a copy deleted while it runs goes at once", deleting: true, phase: grovev1alpha1.PodCliqueSetPhaseRunning, gangs: []string{admitted}, finalizer: true, held: true},
		{name: "an ended copy waits while a gang's Workload is left", deleting: true, phase: grovev1alpha1.PodCliqueSetPhaseSucceeded, gangs: []string{gone, admitted},
			finalizer: true, want: true, held: true},
		{name: "an ended copy goes once every gang's Workload is gone", deleting: true, phase: grovev1alpha1.PodCliqueSetPhaseFailed, gangs: []string{gone, gone},
			finalizer: true, held: true},
		{name: "an ended copy without gangs goes", deleting: true, phase: grovev1alpha1.PodCliqueSetPhaseSucceeded, finalizer: true, held: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := builders.PodCliqueSet("ns", "train").Training(0).Clique("worker", 1).
				Label(grovev1alpha1.LabelKueueQueueName, "team-a").Label(grovev1alpha1.LabelMultiKueueOrigin, "multikueue").Obj()
			pcs.Status.Phase = tc.phase
			if tc.finalizer {
				pcs.Finalizers = []string{FinalizerMultiKueueCopy, "example.com/other"}
			}
			if tc.deleting {
				pcs.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
			}
			objs := []client.Object{pcs}
			for i, reason := range tc.gangs {
				objs = append(objs, builders.PodGang("ns", fmt.Sprintf("train-%d", i)).OfReplica("train", "0").ControlledBy(pcs, "PodCliqueSet").
					MultiKueue(schedulerv1alpha1.MultiKueueWorker, "").Condition(schedulerv1alpha1.ConditionQueueAdmitted, metav1.ConditionFalse, reason).Obj())
			}
			f := newFixture(t, objs...)

			held, err := f.r.holdCopy(context.Background(), pcs)
			require.NoError(t, err)
			assert.Equal(t, tc.held, held)
			got := &grovev1alpha1.PodCliqueSet{}
			require.NoError(t, f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "train"}, got))
			assert.Equal(t, tc.want, slices.Contains(got.Finalizers, FinalizerMultiKueueCopy), "finalizers %v", got.Finalizers)
			if tc.finalizer {
				assert.Contains(t, got.Finalizers, "example.com/other", "another finalizer is kept")
			}
		})
	}
}

func TestAPodCliqueSetQueuedHereOrATrainJobsGetsNoCopyFinalizer(t *testing.T) {
	for name, pcs := range map[string]*grovev1alpha1.PodCliqueSet{
		"queued here": builders.PodCliqueSet("ns", "train").Training(0).Clique("worker", 1).Label(grovev1alpha1.LabelKueueQueueName, "team-a").Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, pcs)
			held, err := f.r.holdCopy(context.Background(), pcs)
			require.NoError(t, err)
			assert.False(t, held)
			got := &grovev1alpha1.PodCliqueSet{}
			require.NoError(t, f.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "train"}, got))
			assert.Empty(t, got.Finalizers)
		})
	}
}
