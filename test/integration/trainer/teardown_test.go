package trainerintegration

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/controllers/trainer/trainjob"
	"github.com/kubegrove/grove/test/builders"
)

// A TrainJob past its deadline deletes its JobSet in the foreground; with no garbage collector
// that deletion never finishes, as when the collector stopped looking at the JobSet. Once it has
// waited its bound the reconciler deletes it again in the background and the API server lets it
// go: the JobSet is gone, not left for ever marked for deletion.
func TestAJobSetWhoseForegroundDeletionNeverEndsIsReleased(t *testing.T) {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "stalled-teardown"}}
	require.NoError(t, env.Client.Create(ctx, ns))
	rt := builders.RuntimeSpec("img:v1", 1).WorkloadKind(trainerv1alpha1.WorkloadKindJobSet).TrainingRuntime(ns.Name, "rt")
	require.NoError(t, env.Client.Create(ctx, rt))
	tj := builders.TrainJob(ns.Name, "late", "rt").Deadline(1).Obj()
	tj.UID = ""
	require.NoError(t, env.Client.Create(ctx, tj))

	clk := clocktesting.NewFakePassiveClock(time.Now())
	r := &trainjob.Reconciler{Client: env.Client, Recorder: events.NewFakeRecorder(100), Clock: clk}
	pass := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(tj)})
		require.NoError(t, err)
		return res
	}
	jobSet := func() (*jobsetv1alpha2.JobSet, error) {
		js := &jobsetv1alpha2.JobSet{}
		return js, env.Client.Get(ctx, client.ObjectKeyFromObject(tj), js)
	}

	pass()
	_, err := jobSet()
	require.NoError(t, err, "the first pass creates the JobSet")

	clk.SetTime(clk.Now().Add(2 * time.Second))
	pass()
	js, err := jobSet()
	require.NoError(t, err, "deleted in the foreground, the JobSet stays while it has dependents to wait for")
	require.NotNil(t, js.DeletionTimestamp)
	require.Contains(t, js.Finalizers, metav1.FinalizerDeleteDependents)
	markedAt := js.DeletionTimestamp.Time

	clk.SetTime(markedAt.Add(5 * time.Second))
	assert.Equal(t, 10*time.Second, pass().RequeueAfter, "within the bound the pass only asks to be woken when it ends")
	_, err = jobSet()
	require.NoError(t, err, "within the bound the JobSet is left to the collector")

	clk.SetTime(markedAt.Add(15 * time.Second))
	pass()
	_, err = jobSet()
	assert.True(t, apierrors.IsNotFound(err), "deleted again in the background, the JobSet is gone: %v", err)
}
