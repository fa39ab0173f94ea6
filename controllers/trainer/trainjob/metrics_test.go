package trainjob

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

func condition(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason}
}

func TestPhaseOfATrainJob(t *testing.T) {
	cases := []struct {
		name  string
		conds []metav1.Condition
		want  string
	}{
		{"not seen yet", nil, phasePending},
		{"waiting for its runtime", []metav1.Condition{condition(trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, trainerv1alpha1.TrainJobRuntimeNotFoundReason)}, phasePending},
		{"running", []metav1.Condition{condition(trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, "PodCliqueSetCreated")}, phaseRunning},
		{"resumed", []metav1.Condition{
			condition(trainerv1alpha1.TrainJobSuspended, metav1.ConditionFalse, trainerv1alpha1.TrainJobResumedReason),
			condition(trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, "PodCliqueSetCreated")}, phaseRunning},
		{"suspended", []metav1.Condition{
			condition(trainerv1alpha1.TrainJobSuspended, metav1.ConditionTrue, trainerv1alpha1.TrainJobSuspendedReason),
			condition(trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, trainerv1alpha1.TrainJobSuspendedReason)}, phaseSuspended},
		{"complete", []metav1.Condition{
			condition(trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, "JobSetCompleted"),
			condition(trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, trainerv1alpha1.TrainJobComplete)}, phaseComplete},
		{"failed", []metav1.Condition{condition(trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, trainerv1alpha1.TrainJobDeadlineExceededReason)}, phaseFailed},
		{"finished while suspended: finished wins", []metav1.Condition{
			condition(trainerv1alpha1.TrainJobSuspended, metav1.ConditionTrue, trainerv1alpha1.TrainJobSuspendedReason),
			condition(trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, trainerv1alpha1.TrainJobDeadlineExceededReason)}, phaseFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, phaseOf(tc.conds))
		})
	}
}

func TestSeriesOfAPass(t *testing.T) {
	running := []metav1.Condition{condition(trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, "PodCliqueSetCreated")}
	waiting := []metav1.Condition{condition(trainerv1alpha1.TrainJobRunning, metav1.ConditionFalse, trainerv1alpha1.TrainJobRuntimeNotFoundReason)}
	suspended := []metav1.Condition{condition(trainerv1alpha1.TrainJobSuspended, metav1.ConditionTrue, trainerv1alpha1.TrainJobSuspendedReason)}
	failed := condition(trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, trainerv1alpha1.TrainJobDeadlineExceededReason)
	complete := condition(trainerv1alpha1.TrainJobComplete, metav1.ConditionTrue, ReasonPodCliqueSetSucceeded)
	cases := []struct {
		name          string
		before, after []metav1.Condition
		finish        *metav1.Condition
		now           time.Time
		want          passSeries
	}{
		{name: "a pass that changes nothing", before: running, after: running, now: created.Add(time.Minute)},
		{name: "started", after: running, now: created.Add(time.Second), want: passSeries{phase: phaseRunning}},
		{name: "waiting for a runtime is still Pending", after: waiting, now: created.Add(time.Second)},
		{name: "suspended", before: running, after: suspended, now: created.Add(time.Hour), want: passSeries{phase: phaseSuspended}},
		{name: "completed an hour after creation", before: running, after: []metav1.Condition{complete}, finish: &complete, now: created.Add(time.Hour),
			want: passSeries{phase: phaseComplete, finished: phaseComplete, toFinish: time.Hour}},
		{name: "failed before it started", after: []metav1.Condition{failed}, finish: &failed, now: created.Add(15 * time.Second),
			want: passSeries{phase: phaseFailed, finished: phaseFailed, toFinish: 15 * time.Second}},
		{name: "a clock behind the API server's never gives a negative time", before: running, after: []metav1.Condition{failed}, finish: &failed, now: created.Add(-time.Second),
			want: passSeries{phase: phaseFailed, finished: phaseFailed}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tj := testJob(func(tj *trainerv1alpha1.TrainJob) { tj.Status.Conditions = tc.before })
			d := decision{now: tc.now, status: trainerv1alpha1.TrainJobStatus{Conditions: tc.after}, finish: tc.finish}
			assert.Equal(t, tc.want, seriesOf(tj, d))
		})
	}
}

func TestCountTrainJobsByNamespaceAndPhase(t *testing.T) {
	job := func(ns, name string, conds ...metav1.Condition) trainerv1alpha1.TrainJob {
		return trainerv1alpha1.TrainJob{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Status: trainerv1alpha1.TrainJobStatus{Conditions: conds}}
	}
	elsewhere := job("c", "remote", condition(trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, "r"))
	elsewhere.Spec.ManagedBy = ptr.To(trainerv1alpha1.MultiKueueManagedBy)
	items := []trainerv1alpha1.TrainJob{
		job("b", "new"),
		job("a", "one", condition(trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, "r")),
		job("a", "two", condition(trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, "r")),
		job("a", "done", condition(trainerv1alpha1.TrainJobFailed, metav1.ConditionTrue, "r")),
		elsewhere,
	}

	got := countTrainJobs(items)

	assert.Equal(t, []jobCount{
		{"a", phaseComplete, 0}, {"a", phaseFailed, 1}, {"a", phaseSuspended, 0}, {"a", phaseRunning, 2}, {"a", phasePending, 0},
		{"b", phaseComplete, 0}, {"b", phaseFailed, 0}, {"b", phaseSuspended, 0}, {"b", phaseRunning, 0}, {"b", phasePending, 1},
	}, got, "every phase of a namespace with a TrainJob, none for a namespace whose only one is managed elsewhere")
}

// collect is what c reports now, as "<namespace>/<phase>" → value.
func collect(t *testing.T, c prometheus.Collector) map[string]float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	out := map[string]float64{}
	for m := range ch {
		assert.Equal(t, trainJobsDesc, m.Desc())
		labels := map[string]string{}
		d := &dto.Metric{}
		require.NoError(t, m.Write(d))
		for _, l := range d.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		out[labels["namespace"]+"/"+labels["phase"]] = d.GetGauge().GetValue()
	}
	return out
}

func TestTrainJobsAreCountedFromTheCacheAtScrapeTimeByTheLeader(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, trainerv1alpha1.AddToScheme(scheme))
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		testJob(func(tj *trainerv1alpha1.TrainJob) {
			tj.Status.Conditions = []metav1.Condition{condition(trainerv1alpha1.TrainJobRunning, metav1.ConditionTrue, "r")}
		})).Build()
	c := &trainJobCounter{}
	assert.Empty(t, collect(t, c), "no series before the controller is set up")
	elected := make(chan struct{})
	c.set(reader, elected)
	assert.Empty(t, collect(t, c), "a replica that does not lead reports nothing")
	close(elected)

	assert.Equal(t, map[string]float64{"ns/Complete": 0, "ns/Failed": 0, "ns/Pending": 0, "ns/Running": 1, "ns/Suspended": 0}, collect(t, c))
}

func transitions(phase string) float64 {
	m := &dto.Metric{}
	if err := phaseTransitions.WithLabelValues(phase).Write(m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// finishes is how many times were observed for condition and their sum.
func finishes(t *testing.T, condition string) (uint64, float64) {
	t.Helper()
	m := &dto.Metric{}
	require.NoError(t, timeToFinish.WithLabelValues(condition).(prometheus.Metric).Write(m))
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func TestAPassRecordsThePhaseItWroteAndTheTimeToFinish(t *testing.T) {
	h := newHarness(t, testRuntime(nil), testJob())
	started, completed := transitions(phaseRunning), transitions(phaseComplete)
	n, sum := finishes(t, phaseComplete)

	h.reconcile(t)
	assert.Equal(t, started+1, transitions(phaseRunning), "Pending → Running")
	h.reconcile(t)
	assert.Equal(t, started+1, transitions(phaseRunning), "a pass that writes nothing records nothing")

	pcs, _ := h.pcs(t)
	pcs.Status.Phase = grovev1alpha1.PodCliqueSetPhaseSucceeded
	require.NoError(t, h.c.Status().Update(context.Background(), pcs))
	h.clock.SetTime(created.Add(90 * time.Second))
	h.reconcile(t)

	assert.Equal(t, completed+1, transitions(phaseComplete), "Running → Complete")
	gotN, gotSum := finishes(t, phaseComplete)
	assert.Equal(t, n+1, gotN)
	assert.InDelta(t, sum+90, gotSum, 1e-9, "from creation to the Complete condition")
}

func TestAPassWhoseStatusWriteFailedRecordsNothing(t *testing.T) {
	h := newHarness(t, testRuntime(nil), testJob(func(tj *trainerv1alpha1.TrainJob) { tj.Spec.ActiveDeadlineSeconds = ptr.To[int64](10) }))
	h.reconcile(t)
	h.clock.SetTime(created.Add(20 * time.Second))
	h.failStatus = apierrors.NewConflict(schema.GroupResource{Group: "trainer.kubeflow.org", Resource: "trainjobs"}, "job", errors.New("the object has been modified"))
	failed := transitions(phaseFailed)
	n, _ := finishes(t, phaseFailed)

	_, err := h.r.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "job"}})

	require.Error(t, err)
	assert.Equal(t, failed, transitions(phaseFailed))
	gotN, _ := finishes(t, phaseFailed)
	assert.Equal(t, n, gotN)

	h.failStatus = nil
	h.reconcile(t)
	assert.Equal(t, failed+1, transitions(phaseFailed), "recorded once the retried write stood")
	gotN, _ = finishes(t, phaseFailed)
	assert.Equal(t, n+1, gotN)
}
