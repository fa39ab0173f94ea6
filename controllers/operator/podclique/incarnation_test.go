package podclique

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// podOf is pod index i of a clique named name, controlled by the clique incarnation uid.
func podOf(name string, i int, uid types.UID) *corev1.Pod {
	owner := builders.PodClique("ns", name).UID(string(uid)).Obj()
	return podBuilder("ns", name, i, "h", true).Label(grovev1alpha1.LabelPodClique, name).ControlledBy(owner, "PodClique").Obj()
}

func TestPodsOfAnEarlierPodCliqueOfTheSameNameAreStale(t *testing.T) {
	pclq := builders.PodClique("ns", "job-0-trainer").UID("new").Obj()
	assert.True(t, ofEarlierIncarnation(podOf("job-0-trainer", 0, "old"), pclq), "the clique was deleted and created again")
	assert.False(t, ofEarlierIncarnation(podOf("job-0-trainer", 0, "new"), pclq), "its own pod")
	assert.False(t, ofEarlierIncarnation(podOf("job-0-other", 0, "old"), pclq), "another clique's pod")
	orphan := podOf("job-0-trainer", 1, "old")
	orphan.OwnerReferences = nil
	assert.False(t, ofEarlierIncarnation(orphan, pclq), "a pod nobody controls is not ours to delete")
	foreign := podOf("job-0-trainer", 2, "old")
	foreign.OwnerReferences[0].APIVersion = "example.com/v1"
	assert.False(t, ofEarlierIncarnation(foreign, pclq), "a PodClique kind of another group")
}

// A training restart deletes and recreates the PodClique; when the garbage collector has not yet
// removed the old incarnation's pods, the new clique removes them itself instead of waiting on
// their names forever (found by the chaos suite: a restart stalled while the kube-controller-
// manager, restarted during API server restarts, missed the deletion for minutes). While an old
// pod holds a name (its kubelet has not confirmed the deletion) no create is sent under it: it
// would be refused (a 1000-pod restart in make bench sent 600-700 such creates).
func TestRecreatedPodCliqueReplacesThePodsOfItsEarlierIncarnation(t *testing.T) {
	ctx := context.Background()
	pclq := builders.PodClique("ns", "job-0-trainer").UID("new").InGang("g").Replicas(2, 2).PodSpec(corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "t"}},
	}).Obj()
	stale0, stale1 := podOf(pclq.Name, 0, "old"), podOf(pclq.Name, 1, "old")
	stale1.Status.Phase = corev1.PodFailed
	for _, p := range []*corev1.Pod{stale0, stale1} {
		p.Finalizers = []string{"example.com/kubelet"} // the kubelet's confirmation, as the pod's grace period
	}
	acked := podGangOf(time.Now(), 2, stale0.Name, stale1.Name)
	c := fakeClient(t).WithObjects(pclq, stale0, stale1, acked).WithStatusSubresource(pclq).Build()
	r := reconcilerFor(t, c)
	pass := func() {
		t.Helper()
		_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pclq)})
		require.NoError(t, err)
	}
	held := func(why string) {
		t.Helper()
		for _, name := range []string{stale0.Name, stale1.Name} {
			got := &corev1.Pod{}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, got))
			assert.False(t, got.DeletionTimestamp.IsZero(), "%s of the earlier incarnation is deleted", name)
			assert.False(t, metav1.IsControlledBy(got, pclq), "%s: %s", name, why)
		}
	}

	pass()
	held("nothing is created under a name an old pod holds")
	pass()
	held("still held while the old pod terminates")
	for _, name := range []string{stale0.Name, stale1.Name} {
		require.NoError(t, c.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}},
			client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`))))
	}
	pass()
	for _, name := range []string{stale0.Name, stale1.Name} {
		got := &corev1.Pod{}
		require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, got))
		assert.True(t, metav1.IsControlledBy(got, pclq), "%s belongs to the new incarnation once the old pod is gone", name)
	}

	// A pod the clique does not control and that no earlier incarnation left is not touched.
	unowned := podOf(pclq.Name, 5, "old")
	unowned.OwnerReferences = nil
	require.NoError(t, c.Create(context.Background(), unowned))
	pass()
	err := c.Get(context.Background(), client.ObjectKeyFromObject(unowned), &corev1.Pod{})
	assert.False(t, apierrors.IsNotFound(err), "left alone")
}

// A Training restart recreates the whole gang: the new clique creates none of its pods until every
// pod of the one it replaces is gone, as JobSet recreates a restarted gang (the gang cannot run
// before its last pod exists, whose name the last old pod frees), and says so in a condition, an
// event and a log line — once, however many old pods go meanwhile. An inference clique recreates
// each pod as its name frees.
func TestARestartedTrainingCliqueCreatesItsGangOnceEveryReplacedPodIsGone(t *testing.T) {
	cases := []struct {
		name         string
		training     bool
		wantFirstPod bool
	}{
		{name: "training: nothing created while one replaced pod remains", training: true},
		{name: "inference: each pod created as its name frees", wantFirstPod: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := builders.PodClique("ns", "job-0-trainer").UID("new").InGang("g").Replicas(2, 2).PodSpec(corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "t"}},
			})
			if tc.training {
				b.Training()
			}
			pclq := b.Obj()
			old0, old1 := podOf(pclq.Name, 0, "old"), podOf(pclq.Name, 1, "old")
			for _, p := range []*corev1.Pod{old0, old1} {
				p.Finalizers = []string{"example.com/kubelet"} // the kubelet's confirmation, as the pod's grace period
			}
			statusWrites := 0
			c := fakeClient(t).WithObjects(pclq, old0, old1, podGangOf(time.Now(), 2, old0.Name, old1.Name)).
				WithStatusSubresource(pclq).WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: countStatusWrites(&statusWrites)}).Build()
			r := reconcilerFor(t, c)
			recorder := r.Recorder.(*events.FakeRecorder)
			pass := func() {
				t.Helper()
				_, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: client.ObjectKeyFromObject(pclq)})
				require.NoError(t, err)
			}
			gone := func(p *corev1.Pod) {
				t.Helper()
				require.NoError(t, c.Patch(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: p.Name}},
					client.RawPatch(types.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers"}]`))))
			}
			ownedBy := func(name string) bool {
				got := &corev1.Pod{}
				err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, got)
				if apierrors.IsNotFound(err) {
					return false
				}
				require.NoError(t, err)
				return metav1.IsControlledBy(got, pclq)
			}

			pass() // deletes the replaced pods
			pass() // they terminate
			gone(old0)
			pass()
			assert.Equal(t, tc.wantFirstPod, ownedBy(old0.Name), "pod 0 once its name is free")
			if !tc.wantFirstPod {
				got := &grovev1alpha1.PodClique{}
				require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pclq), got))
				cond := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionPodCliqueScheduled)
				require.NotNil(t, cond, "the wait is in the status")
				assert.Equal(t, grovev1alpha1.ReasonReplacedPodsTerminating, cond.Reason)
				assert.Equal(t, metav1.ConditionFalse, cond.Status)
				require.Len(t, recorder.Events, 1, "one event for the wait")
				assert.Contains(t, <-recorder.Events, grovev1alpha1.ReasonReplacedPodsTerminating)

				writes := statusWrites
				pass()
				assert.Equal(t, writes, statusWrites, "quiet while the wait goes on")
				assert.Empty(t, recorder.Events, "no second event")
			}

			gone(old1)
			pass()
			assert.True(t, ownedBy(old0.Name), "pod 0 created")
			assert.True(t, ownedBy(old1.Name), "pod 1 created")
			for len(recorder.Events) > 0 {
				assert.NotContains(t, <-recorder.Events, grovev1alpha1.ReasonReplacedPodsTerminating)
			}
		})
	}
}
