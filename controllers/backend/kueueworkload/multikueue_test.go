package kueueworkload

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/internal/contract/kueuegang"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/writelog"
)

// multiKueueWorld is the fake cluster of a MultiKueue manager or worker: the gangs, their
// Workloads and PodCliqueSets, every write the reconciler makes (by kind), and its events.
type multiKueueWorld struct {
	c   client.Client
	log *writelog.Log
	rec *regardingRecorder
}

// regardingRecorder is a fake events recorder that also notes the object each event regards.
type regardingRecorder struct {
	*events.FakeRecorder
	regarding []string
}

func (r *regardingRecorder) Eventf(regarding, related runtime.Object, eventtype, reason, action, note string, args ...any) {
	if o, ok := regarding.(client.Object); ok {
		r.regarding = append(r.regarding, fmt.Sprintf("%T %s/%s", o, o.GetNamespace(), o.GetName()))
	}
	r.FakeRecorder.Eventf(regarding, related, eventtype, reason, action, note, args...)
}

// drain empties the recorded events and returns them.
func (r *regardingRecorder) drain() []string {
	var out []string
	for len(r.Events) > 0 {
		out = append(out, <-r.Events)
	}
	return out
}

func newMultiKueueWorld(t *testing.T, objs ...client.Object) *multiKueueWorld {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, schedulerv1alpha1.AddToScheme(scheme))
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	require.NoError(t, kueuev1beta2.AddToScheme(scheme))
	require.NoError(t, corev1.AddToScheme(scheme))
	w := &multiKueueWorld{rec: &regardingRecorder{FakeRecorder: events.NewFakeRecorder(20)}}
	w.log = &writelog.Log{}
	w.c = fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithStatusSubresource(&schedulerv1alpha1.PodGang{}, &kueuev1beta2.Workload{}, &grovev1alpha1.PodCliqueSet{}).
		WithInterceptorFuncs(w.log.Funcs()).Build()
	return w
}

// pass reconciles the gang ns/name, its writes recorded from a clean slate.
func (w *multiKueueWorld) pass(t *testing.T, name string) error {
	t.Helper()
	w.log.Reset()
	r := &Reconciler{Client: w.c, Backend: "kube-scheduler", Recorder: w.rec}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: name}})
	return err
}

// workloadWrites are the recorded writes of Workloads.
func (w *multiKueueWorld) workloadWrites() []string {
	var out []string
	for _, s := range w.log.Writes() {
		if strings.Contains(s, "*v1beta2.Workload") {
			out = append(out, s)
		}
	}
	return out
}

func (w *multiKueueWorld) condition(t *testing.T, gang, typ string) *metav1.Condition {
	t.Helper()
	pg := &schedulerv1alpha1.PodGang{}
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: gang}, pg))
	return meta.FindStatusCondition(pg.Status.Conditions, typ)
}

func (w *multiKueueWorld) workload(t *testing.T, name string) *kueuev1beta2.Workload {
	t.Helper()
	wl := &kueuev1beta2.Workload{}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: name}, wl); err != nil {
		require.True(t, apierrors.IsNotFound(err), "%v", err)
		return nil
	}
	return wl
}

// kueueWrites records in wl's status what Kueue and MultiKueue write there.
func (w *multiKueueWorld) kueueWrites(t *testing.T, name string, write func(*kueuev1beta2.Workload)) {
	t.Helper()
	wl := w.workload(t, name)
	require.NotNil(t, wl, "Workload %s", name)
	write(wl)
	require.NoError(t, w.c.Status().Update(context.Background(), wl))
}

// dispatchedPCS is the PodCliqueSet ns/inf MultiKueue dispatches from the manager cluster.
func dispatchedPCS() *grovev1alpha1.PodCliqueSet {
	return builders.PodCliqueSet("ns", "inf").Label(grovev1alpha1.LabelKueueQueueName, "team-a").ManagedBy(grovev1alpha1.ManagedByMultiKueue).Obj()
}

// multiKueueGang is the PodCliqueSet inf's gang name on the given side of MultiKueue.
func multiKueueGang(name string, role schedulerv1alpha1.MultiKueueRole, placedAfter string, pcs *grovev1alpha1.PodCliqueSet) *builders.PodGangBuilder {
	return builders.PodGang("ns", name).Backend("kube-scheduler").Queue("team-a").OfReplica("inf", "0").
		PodGroup(name+"-worker", 1, name+"-worker-0", name+"-worker-1").
		Requests(name+"-worker", corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("4")}).
		ControlledBy(pcs, "PodCliqueSet").MultiKueue(role, placedAfter)
}

func placedOn(cluster string) func(*kueuev1beta2.Workload) {
	return func(wl *kueuev1beta2.Workload) { wl.Status.ClusterName = ptr.To(cluster) }
}

func TestAManagersGangWorkloadNamesItsPodCliqueSetForMultiKueue(t *testing.T) {
	pcs := dispatchedPCS()
	w := newMultiKueueWorld(t, pcs, multiKueueGang("inf-0", schedulerv1alpha1.MultiKueueManager, "", pcs).Obj(), localQueue())

	require.NoError(t, w.pass(t, "inf-0"))

	wl := w.workload(t, "inf-0")
	require.NotNil(t, wl, "the first gang's Workload is created at once")
	assert.Equal(t, "grove.io/v1alpha1, Kind=PodCliqueSet", wl.Annotations[kueuegang.AnnotationJobOwnerGVK])
	assert.Equal(t, "inf", wl.Annotations[kueuegang.AnnotationJobOwnerName])
	var owners []string
	for _, ref := range wl.OwnerReferences {
		owners = append(owners, fmt.Sprintf("%s %s %s %s", ref.APIVersion, ref.Kind, ref.Name, ref.UID))
	}
	assert.ElementsMatch(t, []string{"scheduler.grove.io/v1alpha1 PodGang inf-0 podgang-inf-0", "grove.io/v1alpha1 PodCliqueSet inf podcliqueset-inf"}, owners)
	assert.Equal(t, int32(2), wl.Spec.PodSets[0].Count)
	assert.Equal(t, kueuev1beta2.LocalQueueName("team-a"), wl.Spec.QueueName)
}

func TestALaterGangsWorkloadWaitsForTheFirstGangToBePlacedOnAWorker(t *testing.T) {
	pcs := dispatchedPCS()
	first := multiKueueGang("inf-0", schedulerv1alpha1.MultiKueueManager, "", pcs).Obj()
	later := multiKueueGang("inf-0-prefill-0", schedulerv1alpha1.MultiKueueManager, "inf-0", pcs).Obj()
	cases := []struct {
		name        string
		firstHas    func(*kueuev1beta2.Workload) // nil: the first gang has no Workload
		wantCreated bool
	}{
		{name: "the first gang has no Workload yet"},
		{name: "the first gang's Workload is on no worker", firstHas: func(*kueuev1beta2.Workload) {}},
		{name: "the first gang's Workload was placed on a worker", firstHas: placedOn("worker-1"), wantCreated: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newMultiKueueWorld(t, pcs, first.DeepCopy(), later.DeepCopy(), localQueue())
			if tc.firstHas != nil {
				require.NoError(t, w.pass(t, "inf-0"))
				w.kueueWrites(t, "inf-0", tc.firstHas)
			}

			require.NoError(t, w.pass(t, "inf-0-prefill-0"))

			dispatched := w.condition(t, "inf-0-prefill-0", schedulerv1alpha1.ConditionDispatched)
			require.NotNil(t, dispatched)
			if !tc.wantCreated {
				assert.Nil(t, w.workload(t, "inf-0-prefill-0"), "MultiKueue would send it anywhere: it waits")
				assert.Empty(t, w.workloadWrites())
				assert.Equal(t, metav1.ConditionFalse, dispatched.Status)
				assert.Equal(t, schedulerv1alpha1.ReasonAwaitingFirstGang, dispatched.Reason)
				assert.Contains(t, dispatched.Message, "once gang inf-0 is placed")
				admitted := w.condition(t, "inf-0-prefill-0", schedulerv1alpha1.ConditionQueueAdmitted)
				require.NotNil(t, admitted)
				assert.Equal(t, metav1.ConditionFalse, admitted.Status)
				assert.Contains(t, admitted.Message, "waiting for gang inf-0 to be placed on a worker cluster")
				return
			}
			wl := w.workload(t, "inf-0-prefill-0")
			require.NotNil(t, wl, "once the first gang is placed, MultiKueue sends this one to the same worker")
			assert.Equal(t, "inf", wl.Annotations[kueuegang.AnnotationJobOwnerName])
			assert.Equal(t, schedulerv1alpha1.ReasonAwaitingWorker, dispatched.Reason)
		})
	}
}

func TestAManagersGangWorkloadIsNeverUpdatedOrReplaced(t *testing.T) {
	quotaReserved := func(wl *kueuev1beta2.Workload) {
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved"})
		wl.Status.ClusterName = ptr.To("worker-1")
	}
	finished := func(wl *kueuev1beta2.Workload) {
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadFinished, Status: metav1.ConditionTrue,
			Reason: kueuev1beta2.WorkloadFinishedReasonSucceeded})
	}
	cases := []struct {
		name string
		has  func(*kueuev1beta2.Workload)
	}{
		{"waiting for a worker", func(*kueuev1beta2.Workload) {}},
		{"admitted on a worker", quotaReserved},
		{"finished", finished},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pcs := dispatchedPCS()
			w := newMultiKueueWorld(t, pcs, multiKueueGang("inf-0", schedulerv1alpha1.MultiKueueManager, "", pcs).Obj(), localQueue())
			require.NoError(t, w.pass(t, "inf-0"))
			w.kueueWrites(t, "inf-0", tc.has)
			created := w.workload(t, "inf-0")
			// The gang grows and moves to another queue: a single cluster's Workload would follow.
			stored := &schedulerv1alpha1.PodGang{}
			require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf-0"}, stored))
			stored.Spec.PodGroups[0].PodReferences = append(stored.Spec.PodGroups[0].PodReferences, schedulerv1alpha1.NamespacedName{Namespace: "ns", Name: "inf-0-worker-2"})
			stored.Spec.QueueName = "team-b"
			require.NoError(t, w.c.Update(context.Background(), stored))

			for range 2 {
				require.NoError(t, w.pass(t, "inf-0"))
				assert.Empty(t, w.workloadWrites(), "MultiKueue compares the worker's copy with it: never changed")
			}
			kept := w.workload(t, "inf-0")
			require.NotNil(t, kept)
			assert.Equal(t, created.UID, kept.UID, "never replaced")
			assert.Equal(t, created.Spec, kept.Spec)
			assert.Equal(t, created.Status.Conditions, kept.Status.Conditions)
		})
	}
}

func TestTheDispatchedConditionFollowsTheGangFromWorkerToWorker(t *testing.T) {
	pcs := dispatchedPCS()
	w := newMultiKueueWorld(t, pcs, multiKueueGang("inf-0", schedulerv1alpha1.MultiKueueManager, "", pcs).Obj(), localQueue())
	evicted := func(wl *kueuev1beta2.Workload) {
		wl.Status.ClusterName = nil
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadEvicted, Status: metav1.ConditionTrue,
			Reason: kueuev1beta2.WorkloadEvictedByPreemption, Message: "Preempted to accommodate a higher priority Workload"})
	}
	requeued := func(wl *kueuev1beta2.Workload) {
		meta.RemoveStatusCondition(&wl.Status.Conditions, kueuev1beta2.WorkloadEvicted)
		wl.Status.AdmissionChecks = []kueuev1beta2.AdmissionCheckState{{Name: "multikueue", State: kueuev1beta2.CheckStatePending, Message: "no worker has room"}}
	}
	steps := []struct {
		name        string
		kueue       func(*kueuev1beta2.Workload) // nil: the Workload is not there yet
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage []string
		wantEvent   string // "" for none
	}{
		{name: "created, on no worker yet", wantStatus: metav1.ConditionFalse, wantReason: schedulerv1alpha1.ReasonAwaitingWorker,
			wantMessage: []string{"waiting for MultiKueue to place the gang on a worker cluster"}},
		{name: "placed on worker-1", kueue: placedOn("worker-1"), wantStatus: metav1.ConditionTrue, wantReason: schedulerv1alpha1.ReasonRunsOnWorker,
			wantMessage: []string{"MultiKueue placed the gang on cluster worker-1"}, wantEvent: "Normal RunsOnWorker gang inf-0: MultiKueue placed the gang on cluster worker-1"},
		{name: "evicted from worker-1", kueue: evicted, wantStatus: metav1.ConditionFalse, wantReason: schedulerv1alpha1.ReasonLeftWorker,
			wantMessage: []string{"left cluster worker-1", "Kueue evicted it (Preempted: Preempted to accommodate a higher priority Workload)"},
			wantEvent:   "Warning LeftWorker gang inf-0: left cluster worker-1"},
		{name: "requeued: still says where it ran", kueue: requeued, wantStatus: metav1.ConditionFalse, wantReason: schedulerv1alpha1.ReasonLeftWorker,
			wantMessage: []string{"left cluster worker-1", "Kueue evicted it (Preempted"}},
		{name: "placed on worker-2", kueue: placedOn("worker-2"), wantStatus: metav1.ConditionTrue, wantReason: schedulerv1alpha1.ReasonRunsOnWorker,
			wantMessage: []string{"on cluster worker-2"}, wantEvent: "Normal RunsOnWorker gang inf-0: MultiKueue placed the gang on cluster worker-2"},
	}
	for i, step := range steps {
		if i > 0 {
			w.kueueWrites(t, "inf-0", step.kueue)
		}
		require.NoError(t, w.pass(t, "inf-0"), step.name)
		c := w.condition(t, "inf-0", schedulerv1alpha1.ConditionDispatched)
		require.NotNil(t, c, step.name)
		assert.Equal(t, step.wantStatus, c.Status, step.name)
		assert.Equal(t, step.wantReason, c.Reason, step.name)
		for _, m := range step.wantMessage {
			assert.Contains(t, c.Message, m, step.name)
		}
		got := w.rec.drain()
		if step.wantEvent == "" {
			assert.Empty(t, got, step.name)
		} else if assert.Len(t, got, 1, step.name) {
			assert.Contains(t, got[0], step.wantEvent, step.name)
			assert.Equal(t, []string{"*v1alpha1.PodCliqueSet ns/inf"}, w.rec.regarding, "%s: the event is on the PodCliqueSet", step.name)
		}
		w.rec.regarding = nil

		require.NoError(t, w.pass(t, "inf-0"), step.name)
		assert.Empty(t, w.log.Writes(), "%s: nothing changed, nothing written", step.name)
		assert.Empty(t, w.rec.drain(), "%s: nothing changed, nothing told", step.name)
	}
}

func TestAWorkersGangIsAdmittedOnlyUnderMultiKueuesCopyOfItsWorkload(t *testing.T) {
	copied := func(labels map[string]string) *kueuev1beta2.Workload {
		wl := kueuegang.Workload(multiKueueGang("inf-0", schedulerv1alpha1.MultiKueueManager, "", dispatchedPCS()).Obj(), nil, false)
		wl.Labels = labels
		wl.OwnerReferences = nil // MultiKueue's copy has none
		return wl
	}
	cases := []struct {
		name       string
		workload   *kueuev1beta2.Workload
		wantErr    bool
		wantReason string
		wantText   string
	}{
		{name: "no copy yet: none is created", wantReason: schedulerv1alpha1.ReasonAwaitingMultiKueueWorkload, wantText: "waiting for the Workload inf-0 MultiKueue copies"},
		{name: "MultiKueue's copy is adopted", workload: copied(map[string]string{kueuev1beta2.MultiKueueOriginLabel: "manager", grovev1alpha1.LabelPodGang: "inf-0"}),
			wantReason: schedulerv1alpha1.ReasonQueuePending},
		{name: "a Workload MultiKueue did not copy is refused", workload: copied(map[string]string{grovev1alpha1.LabelPodGang: "inf-0"}), wantErr: true,
			wantReason: schedulerv1alpha1.ReasonWorkloadSyncFailed, wantText: "was not copied here by MultiKueue"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			worker := builders.PodCliqueSet("ns", "inf").Label(grovev1alpha1.LabelKueueQueueName, "team-a").Label(grovev1alpha1.LabelMultiKueueOrigin, "manager").Obj()
			objs := []client.Object{worker, multiKueueGang("inf-0", schedulerv1alpha1.MultiKueueWorker, "", worker).Obj(), localQueue()}
			if tc.workload != nil {
				objs = append(objs, tc.workload)
			}
			w := newMultiKueueWorld(t, objs...)

			err := w.pass(t, "inf-0")

			if tc.wantErr {
				require.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			assert.Empty(t, w.workloadWrites(), "a worker never creates, changes or deletes a gang's Workload while its PodCliqueSet runs")
			if tc.workload == nil {
				assert.Nil(t, w.workload(t, "inf-0"))
			} else {
				kept := w.workload(t, "inf-0")
				require.NotNil(t, kept)
				assert.Equal(t, tc.workload.Labels, kept.Labels)
				assert.Empty(t, kept.OwnerReferences)
			}
			c := w.condition(t, "inf-0", schedulerv1alpha1.ConditionQueueAdmitted)
			require.NotNil(t, c)
			assert.Equal(t, metav1.ConditionFalse, c.Status)
			assert.Equal(t, tc.wantReason, c.Reason)
			assert.Contains(t, c.Message, tc.wantText)
		})
	}
}

func TestAWorkersCopiedWorkloadIsFinishedOnceItsPodCliqueSetEnded(t *testing.T) {
	finished := func(reason string) *metav1.Condition {
		return &metav1.Condition{Type: kueuev1beta2.WorkloadFinished, Status: metav1.ConditionTrue, Reason: reason, Message: "finished before"}
	}
	cases := []struct {
		name        string
		phase       grovev1alpha1.PodCliqueSetPhase
		already     *metav1.Condition
		wantWrites  int
		wantReason  string // "" for no Finished condition
		wantMessage string
	}{
		{name: "pending", phase: grovev1alpha1.PodCliqueSetPhasePending},
		{name: "running", phase: grovev1alpha1.PodCliqueSetPhaseRunning},
		{name: "succeeded", phase: grovev1alpha1.PodCliqueSetPhaseSucceeded, wantWrites: 1,
			wantReason: kueuev1beta2.WorkloadFinishedReasonSucceeded, wantMessage: "PodCliqueSet inf is Succeeded"},
		{name: "failed", phase: grovev1alpha1.PodCliqueSetPhaseFailed, wantWrites: 1,
			wantReason: kueuev1beta2.WorkloadFinishedReasonFailed, wantMessage: "PodCliqueSet inf is Failed"},
		{name: "already finished: not written again", phase: grovev1alpha1.PodCliqueSetPhaseSucceeded, already: finished(kueuev1beta2.WorkloadFinishedReasonFailed),
			wantReason: kueuev1beta2.WorkloadFinishedReasonFailed, wantMessage: "finished before"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			worker := builders.PodCliqueSet("ns", "inf").Label(grovev1alpha1.LabelKueueQueueName, "team-a").Label(grovev1alpha1.LabelMultiKueueOrigin, "manager").Obj()
			worker.Status.Phase = tc.phase
			wl := kueuegang.Workload(multiKueueGang("inf-0", schedulerv1alpha1.MultiKueueWorker, "", worker).Obj(), nil, false)
			wl.Labels[kueuev1beta2.MultiKueueOriginLabel] = "manager"
			wl.OwnerReferences = nil
			if tc.already != nil {
				wl.Status.Conditions = []metav1.Condition{*tc.already}
			}
			w := newMultiKueueWorld(t, worker, multiKueueGang("inf-0", schedulerv1alpha1.MultiKueueWorker, "", worker).Obj(), localQueue(), wl)

			require.NoError(t, w.pass(t, "inf-0"))

			assert.Len(t, w.workloadWrites(), tc.wantWrites, "%v", w.log.Writes())
			got := meta.FindStatusCondition(w.workload(t, "inf-0").Status.Conditions, kueuev1beta2.WorkloadFinished)
			if tc.wantReason == "" {
				assert.Nil(t, got, "a PodCliqueSet still running keeps its Workload open")
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, metav1.ConditionTrue, got.Status)
			assert.Equal(t, tc.wantReason, got.Reason)
			assert.Equal(t, tc.wantMessage, got.Message)

			require.NoError(t, w.pass(t, "inf-0"))
			assert.Empty(t, w.workloadWrites(), "finished once")
		})
	}
}

func TestALaterGangsWorkloadIsDeletedWhileTheFirstGangIsOnNoWorker(t *testing.T) {
	pcs := dispatchedPCS()
	first := multiKueueGang("inf-0", schedulerv1alpha1.MultiKueueManager, "", pcs).Obj()
	later := multiKueueGang("inf-1", schedulerv1alpha1.MultiKueueManager, "inf-0", pcs).Obj()
	w := newMultiKueueWorld(t, pcs, first, later, localQueue())
	require.NoError(t, w.pass(t, "inf-0"))
	w.kueueWrites(t, "inf-0", placedOn("worker-1"))
	require.NoError(t, w.pass(t, "inf-1"))
	w.kueueWrites(t, "inf-1", placedOn("worker-1"))
	require.NoError(t, w.pass(t, "inf-1"))
	require.NotNil(t, w.workload(t, "inf-1"), "placed with the first gang, it stays")

	// The first gang left its worker: MultiKueue would queue the later one on its own.
	w.kueueWrites(t, "inf-0", func(wl *kueuev1beta2.Workload) { wl.Status.ClusterName = nil })
	require.NoError(t, w.pass(t, "inf-1"))
	assert.Nil(t, w.workload(t, "inf-1"), "deleted, to be queued again once the first gang is placed")
	assert.Equal(t, schedulerv1alpha1.ReasonAwaitingFirstGang, w.condition(t, "inf-1", schedulerv1alpha1.ConditionDispatched).Reason)

	// Placed again, the first gang brings the later one with it.
	w.kueueWrites(t, "inf-0", placedOn("worker-2"))
	require.NoError(t, w.pass(t, "inf-1"))
	assert.NotNil(t, w.workload(t, "inf-1"))
}

func TestAnEvictedManagersWorkloadReleasesItsQuotaToBeDispatchedAgain(t *testing.T) {
	pcs := dispatchedPCS()
	w := newMultiKueueWorld(t, pcs, multiKueueGang("inf-0", schedulerv1alpha1.MultiKueueManager, "", pcs).Obj(), localQueue())
	require.NoError(t, w.pass(t, "inf-0"))
	admitted := func(wl *kueuev1beta2.Workload) {
		wl.Status.ClusterName = ptr.To("worker-1")
		wl.Status.Admission = &kueuev1beta2.Admission{ClusterQueue: "gpus"}
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadQuotaReserved, Status: metav1.ConditionTrue, Reason: "QuotaReserved"})
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadAdmitted, Status: metav1.ConditionTrue, Reason: "Admitted"})
	}
	w.kueueWrites(t, "inf-0", admitted)
	require.NoError(t, w.pass(t, "inf-0"))
	assert.Empty(t, w.workloadWrites(), "an admitted Workload is left alone")

	w.kueueWrites(t, "inf-0", func(wl *kueuev1beta2.Workload) {
		wl.Status.ClusterName = nil
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadEvicted, Status: metav1.ConditionTrue,
			Reason: "AdmissionCheck", Message: "Admitting remote no longer exists"})
	})
	require.NoError(t, w.pass(t, "inf-0"))

	wl := w.workload(t, "inf-0")
	require.NotNil(t, wl, "the same Workload is queued again")
	assert.False(t, meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadQuotaReserved), "its quota released")
	assert.False(t, meta.IsStatusConditionTrue(wl.Status.Conditions, kueuev1beta2.WorkloadAdmitted))
	assert.Nil(t, wl.Status.Admission)
	left := w.condition(t, "inf-0", schedulerv1alpha1.ConditionDispatched)
	assert.Equal(t, schedulerv1alpha1.ReasonLeftWorker, left.Reason)
	assert.Contains(t, left.Message, "left cluster worker-1")

	require.NoError(t, w.pass(t, "inf-0"))
	assert.Empty(t, w.workloadWrites(), "released once")
}

func TestAFinishedRunsWorkloadIsNotCreatedAgain(t *testing.T) {
	pcs := dispatchedPCS()
	pcs.Status.Phase = grovev1alpha1.PodCliqueSetPhaseSucceeded // copied back from the worker
	w := newMultiKueueWorld(t, pcs, multiKueueGang("inf-0", schedulerv1alpha1.MultiKueueManager, "", pcs).Obj(), localQueue())
	require.NoError(t, w.pass(t, "inf-0"))
	assert.Nil(t, w.workload(t, "inf-0"), "a new Workload would run the ended workload again")
}

func TestTheManagersPodCliqueSetSaysWhyItRunsOnNoWorker(t *testing.T) {
	pcs := dispatchedPCS()
	w := newMultiKueueWorld(t, pcs, multiKueueGang("inf-0", schedulerv1alpha1.MultiKueueManager, "", pcs).Obj(), localQueue())
	pcsCondition := func() *metav1.Condition {
		got := &grovev1alpha1.PodCliqueSet{}
		require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf"}, got))
		return meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionDispatched)
	}
	pcsWrites := func() (n int) {
		for _, s := range w.log.Writes() {
			if strings.Contains(s, "PodCliqueSet") {
				n++
			}
		}
		return n
	}

	require.NoError(t, w.pass(t, "inf-0"))
	c := pcsCondition()
	require.NotNil(t, c, "not placed yet: the manager says so")
	assert.Equal(t, metav1.ConditionFalse, c.Status)
	assert.Equal(t, schedulerv1alpha1.ReasonAwaitingWorker, c.Reason)
	require.NoError(t, w.pass(t, "inf-0"))
	assert.Zero(t, pcsWrites(), "quiet while nothing changed")

	w.kueueWrites(t, "inf-0", placedOn("worker-1"))
	require.NoError(t, w.pass(t, "inf-0"))
	assert.Zero(t, pcsWrites(), "a worker runs it: its status is the worker's, copied back by MultiKueue")

	w.kueueWrites(t, "inf-0", func(wl *kueuev1beta2.Workload) {
		wl.Status.ClusterName = nil
		meta.SetStatusCondition(&wl.Status.Conditions, metav1.Condition{Type: kueuev1beta2.WorkloadEvicted, Status: metav1.ConditionTrue, Reason: "AdmissionCheck", Message: "worker lost"})
	})
	require.NoError(t, w.pass(t, "inf-0"))
	c = pcsCondition()
	require.NotNil(t, c)
	assert.Equal(t, schedulerv1alpha1.ReasonLeftWorker, c.Reason)
	assert.Contains(t, c.Message, "gang inf-0 left cluster worker-1: Kueue evicted it (AdmissionCheck: worker lost)")

	ended := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, w.c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "inf"}, ended))
	ended.Status.Phase = grovev1alpha1.PodCliqueSetPhaseFailed
	ended.Status.Conditions = nil
	require.NoError(t, w.c.Status().Update(context.Background(), ended))
	require.NoError(t, w.pass(t, "inf-0"))
	assert.Zero(t, pcsWrites(), "an ended PodCliqueSet keeps its final status")
}
