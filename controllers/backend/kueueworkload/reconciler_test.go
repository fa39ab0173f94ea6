package kueueworkload

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
	"github.com/kubegrove/grove/test/builders"
)

type world struct {
	c      client.Client
	writes int
}

func newWorld(t *testing.T, objs ...client.Object) *world {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, schedulerv1alpha1.AddToScheme(scheme))
	require.NoError(t, kueuev1beta2.AddToScheme(scheme))
	require.NoError(t, corev1.AddToScheme(scheme))
	w := &world{}
	count := func() { w.writes++ }
	w.c = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&schedulerv1alpha1.PodGang{}, &kueuev1beta2.Workload{}).
		WithInterceptorFuncs(interceptor.Funcs{
			Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
				count()
				return c.Create(ctx, obj, opts...)
			},
			Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
				count()
				return c.Update(ctx, obj, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				count()
				return c.Delete(ctx, obj, opts...)
			},
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				count()
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
			SubResourceApply: func(ctx context.Context, c client.Client, sub string, obj runtime.ApplyConfiguration, opts ...client.SubResourceApplyOption) error {
				count()
				return c.SubResource(sub).Apply(ctx, obj, opts...)
			},
		}).Build()
	return w
}

func (w *world) pass(t *testing.T) error {
	t.Helper()
	r := &Reconciler{Client: w.c, Backend: "kube-scheduler"}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "inf-0"}})
	return err
}

func (w *world) admission(t *testing.T) metav1.Condition {
	t.Helper()
	pg := &schedulerv1alpha1.PodGang{}
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-0"}, pg))
	c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionQueueAdmitted)
	require.NotNil(t, c)
	return *c
}

func (w *world) workload(t *testing.T) *kueuev1beta2.Workload {
	t.Helper()
	wl := &kueuev1beta2.Workload{}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-0"}, wl); err != nil {
		require.True(t, apierrors.IsNotFound(err))
		return nil
	}
	return wl
}

// admit records Kueue's admission of wl in the ClusterQueue gpus, as Kueue writes it.
func (w *world) admit(t *testing.T, wl *kueuev1beta2.Workload) {
	t.Helper()
	meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved"})
	meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Admitted"})
	wl.Status.Admission = &kueuev1beta2.Admission{ClusterQueue: "gpus"}
	require.NoError(t, w.c.Status().Update(context.Background(), wl))
}

func gang(pods ...string) *builders.PodGangBuilder {
	return builders.PodGang("ns", "inf-0").Backend("kube-scheduler").Queue("team-a").PodGroup("inf-0-worker", 1, pods...).
		Requests("inf-0-worker", corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")})
}

func localQueue() *kueuev1beta2.LocalQueue {
	return &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "team-a"}, Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: "gpus"}}
}

func TestAQueuedGangGetsItsWorkloadAndWaitsQuietly(t *testing.T) {
	w := newWorld(t, gang("inf-0-worker-0", "inf-0-worker-1").Obj(), localQueue())

	require.NoError(t, w.pass(t))
	wl := w.workload(t)
	require.NotNil(t, wl)
	assert.Equal(t, int32(2), wl.Spec.PodSets[0].Count)
	c := w.admission(t)
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, schedulerv1alpha1.ReasonQueuePending, c.Reason)
	assert.Equal(t, 2, w.writes, "the Workload and the condition")

	w.writes = 0
	require.NoError(t, w.pass(t))
	assert.Zero(t, w.writes, "nothing changed, nothing written")
}

func TestKueuesAdmissionIsReported(t *testing.T) {
	w := newWorld(t, gang("inf-0-worker-0").Obj(), localQueue())
	require.NoError(t, w.pass(t))
	wl := w.workload(t)
	w.admit(t, wl)

	require.NoError(t, w.pass(t))
	c := w.admission(t)
	assert.Equal(t, metav1.ConditionTrue, c.Status)
	assert.Contains(t, c.Message, "ClusterQueue gpus")
}

// clusterQueue is the ClusterQueue "gpus" of one flavor, bound to a Kueue Topology when topology
// is not "".
func clusterQueue(topology string) []client.Object {
	flavor := &kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: "a100"}}
	if topology != "" {
		flavor.Spec.TopologyName = ptr.To(kueuev1beta2.TopologyReference(topology))
	}
	cq := &kueuev1beta2.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: "gpus"}, Spec: kueuev1beta2.ClusterQueueSpec{
		ResourceGroups: []kueuev1beta2.ResourceGroup{{CoveredResources: []corev1.ResourceName{"nvidia.com/gpu"},
			Flavors: []kueuev1beta2.FlavorQuotas{{Name: "a100", Resources: []kueuev1beta2.ResourceQuota{{Name: "nvidia.com/gpu", NominalQuota: resource.MustParse("8")}}}}}},
	}}
	return []client.Object{flavor, cq}
}

func TestAPackConstraintBecomesATopologyRequestOnlyWhereTheClusterQueueHasATopology(t *testing.T) {
	const rack = "topology.kubernetes.io/rack"
	for _, tc := range []struct {
		name        string
		topology    string
		wantRequest bool
		wantMessage string
		wantReason  string
	}{
		{"a flavor with a topology: Kueue places the gang", "dc", true, "", schedulerv1alpha1.ReasonQueueAdmitted},
		{"no topology: no request Kueue could never admit, and the condition says so", "", false, "pack constraints are not honoured", schedulerv1alpha1.ReasonQueueAdmittedWithoutTopology},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, append(clusterQueue(tc.topology), gang("inf-0-worker-0").Pack(rack, "").Obj(), localQueue())...)
			require.NoError(t, w.pass(t))
			wl := w.workload(t)
			require.NotNil(t, wl)
			if tc.wantRequest {
				require.NotNil(t, wl.Spec.PodSets[0].TopologyRequest)
				assert.Equal(t, rack, ptr.Deref(wl.Spec.PodSets[0].TopologyRequest.Required, ""))
			} else {
				assert.Nil(t, wl.Spec.PodSets[0].TopologyRequest)
			}
			w.admit(t, wl)
			require.NoError(t, w.pass(t))

			c := w.admission(t)
			assert.Equal(t, metav1.ConditionTrue, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason, "the operator reads the reason into SchedulingConstraintsHonored")
			if tc.wantMessage == "" {
				assert.NotContains(t, c.Message, "not honoured")
			} else {
				assert.Contains(t, c.Message, tc.wantMessage)
			}
		})
	}
}

func TestAnAdmittedGangKeepsItsPlacementWhenItsQueueGainsATopology(t *testing.T) {
	const rack = "topology.kubernetes.io/rack"
	objs := append(clusterQueue(""), gang("inf-0-worker-0").Pack(rack, "").Obj(), localQueue())
	w := newWorld(t, objs...)
	require.NoError(t, w.pass(t))
	wl := w.workload(t)
	require.Nil(t, wl.Spec.PodSets[0].TopologyRequest)
	w.admit(t, wl)
	require.NoError(t, w.pass(t))

	flavor := &kueuev1beta2.ResourceFlavor{}
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Name: "a100"}, flavor))
	flavor.Spec.TopologyName = ptr.To(kueuev1beta2.TopologyReference("dc"))
	require.NoError(t, w.c.Update(context.Background(), flavor))
	w.writes = 0
	require.NoError(t, w.pass(t))

	kept := w.workload(t)
	require.NotNil(t, kept, "an admitted gang is not evicted for a topology it did not ask for")
	assert.Equal(t, wl.UID, kept.UID)
	assert.Nil(t, kept.Spec.PodSets[0].TopologyRequest, "Kueue refuses changes to a Workload holding quota")
	c := w.admission(t)
	assert.Equal(t, schedulerv1alpha1.ReasonQueueAdmittedWithoutTopology, c.Reason, "its placement still ignores the constraint")
	assert.Contains(t, c.Message, "before its queue had a topology")
	assert.Equal(t, 1, w.writes, "only the condition's new words")

	meta.RemoveStatusCondition(&kept.Status.Conditions, kueuev1beta2.WorkloadQuotaReserved)
	meta.RemoveStatusCondition(&kept.Status.Conditions, kueuev1beta2.WorkloadAdmitted)
	kept.Status.Admission = nil
	require.NoError(t, w.c.Status().Update(context.Background(), kept))
	require.NoError(t, w.pass(t))
	waiting := w.workload(t)
	assert.Equal(t, wl.UID, waiting.UID)
	require.NotNil(t, waiting.Spec.PodSets[0].TopologyRequest, "once the gang waits again, its Workload asks for the topology")
	assert.Equal(t, rack, ptr.Deref(waiting.Spec.PodSets[0].TopologyRequest.Required, ""))
}

func TestAMissingLocalQueueIsNamed(t *testing.T) {
	w := newWorld(t, gang("inf-0-worker-0").Obj())
	require.NoError(t, w.pass(t))
	assert.Equal(t, schedulerv1alpha1.ReasonLocalQueueNotFound, w.admission(t).Reason)
	assert.NotNil(t, w.workload(t), "the Workload waits, so the gang is admitted as soon as the queue exists")
}

func TestAGangThatChangedSizeGetsAWorkloadOfItsNewSize(t *testing.T) {
	t.Run("while waiting, in place", func(t *testing.T) {
		w := newWorld(t, gang("inf-0-worker-0").Obj(), localQueue())
		require.NoError(t, w.pass(t))
		uid := w.workload(t).UID
		pg := gang("inf-0-worker-0", "inf-0-worker-1").Obj()
		stored := &schedulerv1alpha1.PodGang{}
		require.NoError(t, w.c.Get(context.Background(), client.ObjectKeyFromObject(pg), stored))
		stored.Spec = pg.Spec
		require.NoError(t, w.c.Update(context.Background(), stored))

		require.NoError(t, w.pass(t))
		wl := w.workload(t)
		assert.Equal(t, uid, wl.UID)
		assert.Equal(t, int32(2), wl.Spec.PodSets[0].Count)
	})
	t.Run("while admitted, grown: replaced", func(t *testing.T) {
		w := newWorld(t, gang("inf-0-worker-0").Obj(), localQueue())
		require.NoError(t, w.pass(t))
		wl := w.workload(t)
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved"})
		require.NoError(t, w.c.Status().Update(context.Background(), wl))
		stored := &schedulerv1alpha1.PodGang{}
		require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-0"}, stored))
		stored.Spec = gang("inf-0-worker-0", "inf-0-worker-1").Obj().Spec
		require.NoError(t, w.c.Update(context.Background(), stored))

		require.NoError(t, w.pass(t))
		assert.Nil(t, w.workload(t), "Kueue refuses to resize a Workload holding quota: it is deleted")
		require.NoError(t, w.pass(t))
		assert.Equal(t, int32(2), w.workload(t).Spec.PodSets[0].Count, "and created anew at the new size")
	})
}

func TestAnAdmittedGangThatLostPodsShrinksItsWorkloadInPlaceAsThePodsEnd(t *testing.T) {
	member := func(name string, deleting bool) *corev1.Pod {
		b := builders.Pod("ns", name).Label(kueuegang.LabelPodGroupName, "inf-0").Annotation(kueuegang.AnnotationRoleHash, "inf-0-worker").
			NodeName("n").Phase(corev1.PodRunning)
		if deleting {
			b.Finalizers("example.com/hold")
		}
		return b.Obj()
	}
	leaving := member("inf-0-worker-2", true)
	w := newWorld(t, gang("inf-0-worker-0", "inf-0-worker-1", "inf-0-worker-2").Obj(), localQueue(),
		member("inf-0-worker-0", false), member("inf-0-worker-1", false), leaving)
	require.NoError(t, w.pass(t))
	admitted := w.workload(t)
	w.admit(t, admitted)
	require.NoError(t, w.c.Delete(context.Background(), leaving), "the pod that leaves terminates (its finalizer holds it)")
	stored := &schedulerv1alpha1.PodGang{}
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-0"}, stored))
	stored.Spec = gang("inf-0-worker-0", "inf-0-worker-1").Obj().Spec
	require.NoError(t, w.c.Update(context.Background(), stored))

	r := &Reconciler{Client: w.c, Backend: "kube-scheduler"}
	res, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "inf-0"}})
	require.NoError(t, err)
	wl := w.workload(t)
	assert.Equal(t, admitted.UID, wl.UID, "the admitted Workload is kept: its pods run on")
	assert.Equal(t, int32(3), wl.Spec.PodSets[0].Count, "Kueue still counts the terminating pod")
	assert.Equal(t, shrinkWaitMin, res.RequeueAfter, "it looks again for the pod to end")

	got := &corev1.Pod{}
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKeyFromObject(leaving), got))
	got.Finalizers = nil
	require.NoError(t, w.c.Update(context.Background(), got))
	res, err = r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "inf-0"}})
	require.NoError(t, err)
	wl = w.workload(t)
	assert.Equal(t, admitted.UID, wl.UID)
	assert.Equal(t, int32(2), wl.Spec.PodSets[0].Count, "shrunk once the pod ended: Kueue releases its quota")
	assert.Zero(t, res.RequeueAfter)
	assert.Equal(t, metav1.ConditionTrue, w.admission(t).Status, "the gang stays admitted")

	w.writes = 0
	require.NoError(t, w.pass(t))
	assert.Zero(t, w.writes, "quiet once shrunk")
}

func TestAnAdmittedGangThatShrankIsAdmittedAnewWhenKueueRefusesASmallerCount(t *testing.T) {
	w := newWorld(t, gang("inf-0-worker-0", "inf-0-worker-1").Obj(), localQueue())
	require.NoError(t, w.pass(t))
	admitted := w.workload(t)
	w.admit(t, admitted)
	stored := &schedulerv1alpha1.PodGang{}
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-0"}, stored))
	stored.Spec = gang("inf-0-worker-0").Obj().Spec
	require.NoError(t, w.c.Update(context.Background(), stored))
	// Kueue without its ElasticJobsViaWorkloadSlices gate: its webhook denies the smaller count.
	refusing := interceptor.NewClient(w.c.(client.WithWatch), interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if _, ok := obj.(*kueuev1beta2.Workload); ok {
			return apierrors.NewForbidden(kueuev1beta2.SchemeGroupVersion.WithResource("workloads").GroupResource(), obj.GetName(),
				errors.New(`admission webhook "vworkload.kb.io" denied the request: spec.podSets.0: Invalid value: {}: field is immutable`))
		}
		return c.Update(ctx, obj, opts...)
	}})

	r := &Reconciler{Client: refusing, Backend: "kube-scheduler"}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "inf-0"}})
	require.NoError(t, err)
	assert.Nil(t, w.workload(t), "the Workload is replaced: Kueue admits the smaller gang anew")
	require.NoError(t, w.pass(t))
	assert.Equal(t, int32(1), w.workload(t).Spec.PodSets[0].Count)
}

func TestAShrinkWaitingForPodsLearnsAtOnceThatKueueRefusesASmallerCount(t *testing.T) {
	leaving := builders.Pod("ns", "inf-0-worker-1").Finalizers("example.com/hold").
		Label(kueuegang.LabelPodGroupName, "inf-0").Annotation(kueuegang.AnnotationRoleHash, "inf-0-worker").
		NodeName("n").Phase(corev1.PodRunning).Obj()
	w := newWorld(t, gang("inf-0-worker-0", "inf-0-worker-1").Obj(), localQueue(), leaving)
	require.NoError(t, w.pass(t))
	w.admit(t, w.workload(t))
	require.NoError(t, w.c.Delete(context.Background(), leaving), "stuck terminating")
	stored := &schedulerv1alpha1.PodGang{}
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-0"}, stored))
	stored.Spec = gang("inf-0-worker-0").Obj().Spec
	require.NoError(t, w.c.Update(context.Background(), stored))
	dryRuns := 0
	refusing := interceptor.NewClient(w.c.(client.WithWatch), interceptor.Funcs{Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
		if _, ok := obj.(*kueuev1beta2.Workload); ok {
			dryRuns++
			return apierrors.NewForbidden(kueuev1beta2.SchemeGroupVersion.WithResource("workloads").GroupResource(), obj.GetName(),
				errors.New(`admission webhook "vworkload.kb.io" denied the request: spec.podSets.0: Invalid value: {}: field is immutable`))
		}
		return c.Update(ctx, obj, opts...)
	}})

	r := &Reconciler{Client: refusing, Backend: "kube-scheduler"}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "inf-0"}})
	require.NoError(t, err)
	assert.Equal(t, 1, dryRuns, "one dry run asks Kueue before the pod has ended")
	assert.Nil(t, w.workload(t), "replaced at once, not after the pod ends")
}

func TestAShrinkLooksAgainLessOftenTheLongerAPodTakesToEnd(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(now)}
	deleted := func(ago time.Duration) corev1.Pod {
		return *builders.Pod("", "").DeletedAt(now.Add(-ago)).Obj()
	}
	for _, tc := range []struct {
		name string
		pods []corev1.Pod
		want time.Duration
	}{
		{"none deleted yet", []corev1.Pod{{}}, shrinkWaitMin},
		{"deleted a second ago", []corev1.Pod{deleted(time.Second)}, shrinkWaitMin},
		{"deleted 10 s ago", []corev1.Pod{deleted(time.Second), deleted(10 * time.Second)}, 10 * time.Second},
		{"stuck for an hour", []corev1.Pod{deleted(time.Hour)}, shrinkWaitMax},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, r.shrinkWait(tc.pods))
		})
	}
}

func TestAShrunkWorkloadStillFollowsTheGangsQueue(t *testing.T) {
	withLeader := gang("inf-0-worker-0").PodGroup("inf-0-leader", 1, "inf-0-leader-0").
		Requests("inf-0-leader", corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")})
	w := newWorld(t, withLeader.Obj(), localQueue())
	require.NoError(t, w.pass(t))
	w.admit(t, w.workload(t))
	stored := &schedulerv1alpha1.PodGang{}
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-0"}, stored))
	stored.Spec = gang("inf-0-worker-0").Obj().Spec // the leader's pod group left the gang
	require.NoError(t, w.c.Update(context.Background(), stored))
	require.NoError(t, w.pass(t))
	shrunk := w.workload(t)
	require.Len(t, shrunk.Spec.PodSets, 2, "the admitted podSets stay")
	require.Equal(t, int32(0), shrunk.Spec.PodSets[0].Count, "the leader's podSet (sorted first) counts none")

	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-0"}, stored))
	stored.Spec.QueueName = "team-b"
	require.NoError(t, w.c.Update(context.Background(), stored))
	require.NoError(t, w.pass(t))
	assert.Equal(t, kueuev1beta2.LocalQueueName("team-b"), w.workload(t).Spec.QueueName)
}

func TestAWorkloadOfAnotherOwnerIsNeverAdopted(t *testing.T) {
	foreign := &kueuev1beta2.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "inf-0",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "inf-0", UID: "job", Controller: ptr.To(true)}}},
		Spec: kueuev1beta2.WorkloadSpec{QueueName: "other"}}
	w := newWorld(t, gang("inf-0-worker-0").Obj(), localQueue(), foreign)
	require.Error(t, w.pass(t))
	c := w.admission(t)
	assert.Equal(t, schedulerv1alpha1.ReasonWorkloadSyncFailed, c.Reason)
	assert.Contains(t, c.Message, "does not belong to this PodGang")
	assert.Equal(t, kueuev1beta2.LocalQueueName("other"), w.workload(t).Spec.QueueName, "left as it was")
}

func TestAGangOfAnotherBackendNotQueuedOrAdmittedByItsOwnerIsLeftAlone(t *testing.T) {
	for name, pg := range map[string]*schedulerv1alpha1.PodGang{
		"not queued":      builders.PodGang("ns", "inf-0").Backend("kube-scheduler").PodGroup("inf-0-worker", 1, "inf-0-worker-0").Obj(),
		"another backend": gang("inf-0-worker-0").Backend("kai-scheduler").Obj(),
		"admitted through the PodCliqueSet's owner": gang("inf-0-worker-0").AdmittedByOwner().Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, pg, localQueue())
			require.NoError(t, w.pass(t))
			assert.Nil(t, w.workload(t))
			assert.Zero(t, w.writes)
		})
	}
}
