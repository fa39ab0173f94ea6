package gangtermination

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/metricstest"
)

var since = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func breach(status metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: status, Reason: "r", LastTransitionTime: metav1.NewTime(since)}
}

func TestRemainingCountsTheDelayFromTheBreachTransition(t *testing.T) {
	delay := 30 * time.Second
	cases := []struct {
		name          string
		conditions    []metav1.Condition
		now           time.Time
		wantBreached  bool
		wantRemaining time.Duration
	}{
		{name: "no condition is no breach", now: since},
		{name: "a False condition is no breach", conditions: []metav1.Condition{breach(metav1.ConditionFalse)}, now: since.Add(time.Hour)},
		{name: "a fresh breach waits the whole delay", conditions: []metav1.Condition{breach(metav1.ConditionTrue)}, now: since, wantBreached: true, wantRemaining: delay},
		{name: "the wait shrinks with the clock", conditions: []metav1.Condition{breach(metav1.ConditionTrue)}, now: since.Add(20 * time.Second), wantBreached: true, wantRemaining: 10 * time.Second},
		{name: "an expired delay is zero or less", conditions: []metav1.Condition{breach(metav1.ConditionTrue)}, now: since.Add(45 * time.Second), wantBreached: true, wantRemaining: -15 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			breached, remaining := Remaining(tc.conditions, delay, tc.now)
			assert.Equal(t, tc.wantBreached, breached)
			assert.Equal(t, tc.wantRemaining, remaining)
		})
	}
}

func TestSoonestKeepsTheSmallestPositiveWait(t *testing.T) {
	var s Soonest
	assert.Zero(t, s.After(), "nothing recorded: no requeue")
	s.Add(0)
	s.Add(-time.Second)
	assert.Zero(t, s.After(), "expired waits are acted on now, not requeued")
	s.Add(20 * time.Second)
	s.Add(5 * time.Second)
	s.Add(9 * time.Second)
	assert.Equal(t, 5*time.Second, s.After())
}

// apiServerDeletes is a fake client that, like the API server, refuses a delete whose UID
// precondition does not match the stored object (the fake client checks resourceVersion only).
func apiServerDeletes(t *testing.T, fail error, objs ...client.Object) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
		Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if fail != nil {
				return fail
			}
			do := (&client.DeleteOptions{}).ApplyOptions(opts)
			stored := obj.DeepCopyObject().(client.Object)
			if err := c.Get(ctx, client.ObjectKeyFromObject(obj), stored); err != nil {
				return err
			}
			if do.Preconditions != nil && do.Preconditions.UID != nil && *do.Preconditions.UID != stored.GetUID() {
				return apierrors.NewConflict(schema.GroupResource{Group: "grove.io", Resource: "podcliques"}, obj.GetName(), errors.New("UID precondition failed"))
			}
			return c.Delete(ctx, obj, opts...)
		},
	}).Build()
}

func exists(t *testing.T, c client.Client, p *grovev1alpha1.PodClique) bool {
	t.Helper()
	err := c.Get(context.Background(), client.ObjectKeyFromObject(p), &grovev1alpha1.PodClique{})
	if apierrors.IsNotFound(err) {
		return false
	}
	require.NoError(t, err)
	return true
}

func TestDeletePodCliquesDeletesExactlyTheObservedObjects(t *testing.T) {
	a := builders.PodClique("ns", "pcs-0-a").Obj()
	b := builders.PodClique("ns", "pcs-0-b").Obj()
	other := builders.PodClique("ns", "pcs-1-a").Obj()
	c := apiServerDeletes(t, nil, a, b, other)

	deleted, err := DeletePodCliques(context.Background(), c, []*grovev1alpha1.PodClique{a, b})
	require.NoError(t, err)
	assert.True(t, deleted, "this call terminated the gang")
	assert.False(t, exists(t, c, a))
	assert.False(t, exists(t, c, b))
	assert.True(t, exists(t, c, other), "a PodClique of another gang is untouched")
}

func TestDeletePodCliquesNeverDeletesAReplacementSeenThroughAStaleCache(t *testing.T) {
	replacement := builders.PodClique("ns", "pcs-0-a").Obj()
	replacement.UID = types.UID("recreated")
	stale := builders.PodClique("ns", "pcs-0-a").Obj() // the deleted one, as a lagging cache still shows it
	c := apiServerDeletes(t, nil, replacement)

	deleted, err := DeletePodCliques(context.Background(), c, []*grovev1alpha1.PodClique{stale})
	require.NoError(t, err, "a precondition conflict means the termination already happened")
	assert.False(t, deleted, "this call terminated nothing: one breach episode terminates once")
	assert.True(t, exists(t, c, replacement))
}

func TestDeletePodCliquesSkipsWhatIsGoneOrGoing(t *testing.T) {
	gone := builders.PodClique("ns", "pcs-0-a").Obj()
	going := builders.PodClique("ns", "pcs-0-b").Obj()
	going.DeletionTimestamp = &metav1.Time{Time: since}
	going.Finalizers = []string{"example.com/hold"} // still stored while it goes
	c := apiServerDeletes(t, nil, going)

	deleted, err := DeletePodCliques(context.Background(), c, []*grovev1alpha1.PodClique{gone, going})
	require.NoError(t, err)
	assert.False(t, deleted, "a PodClique already going is not deleted again, and one gone is no error")
}

func TestDeletePodCliquesReturnsOtherErrorsAndWhatItDeletedBefore(t *testing.T) {
	a := builders.PodClique("ns", "pcs-0-a").Obj()
	c := apiServerDeletes(t, apierrors.NewServiceUnavailable("etcd is down"), a)

	deleted, err := DeletePodCliques(context.Background(), c, []*grovev1alpha1.PodClique{a})
	require.Error(t, err)
	assert.True(t, apierrors.IsServiceUnavailable(err))
	assert.False(t, deleted)
	assert.True(t, exists(t, c, a), "retried on the next pass")
}

func TestTerminatedCountsByLevelWithTheBreachAsReason(t *testing.T) {
	series := func(level string) map[string]string {
		return map[string]string{"level": level, "reason": "MinAvailableBreached"}
	}
	pcs, pcsg := metricstest.Observations(t, "grove_gang_terminations_total", series(LevelPodCliqueSet)), metricstest.Observations(t, "grove_gang_terminations_total", series(LevelPodCliqueScalingGroup))

	Terminated(LevelPodCliqueScalingGroup)

	assert.Equal(t, pcs, metricstest.Observations(t, "grove_gang_terminations_total", series(LevelPodCliqueSet)), "each level is a series of its own")
	assert.Equal(t, pcsg+1, metricstest.Observations(t, "grove_gang_terminations_total", series(LevelPodCliqueScalingGroup)))
}
