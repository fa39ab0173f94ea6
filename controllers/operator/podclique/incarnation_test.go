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
// would be refused (a 1000-pod restart in make bench sent 600-700 such creates). The clique here is
// not Training: it creates each pod as its name frees (a Training one waits for the old pods, below).
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

// A Training restart recreates the whole gang: the new clique creates none of its pods while more
// pods of the one it replaces remain than it may go without (replicas less minAvailable), as JobSet
// recreates a restarted gang once the old one is gone — it could not run sooner — and says so in a
// condition, an event and a log line, once, however many old pods go meanwhile. Below that count
// the pods whose names are free are created, so a pod stuck terminating on a lost node does not
// hold back a gang that can run without it. An inference clique recreates each pod as its name frees.
func TestARestartedTrainingCliqueCreatesItsPodsOnceItCouldRunWithoutTheReplacedOnes(t *testing.T) {
	cases := []struct {
		name          string
		training      bool
		replicas, min int32
		// created[k] are the indices of the clique's pods once old pods 0..k are gone.
		created [][]int
		waits   bool
	}{
		{name: "training: nothing created while one replaced pod remains", training: true, replicas: 2, min: 2,
			created: [][]int{nil}, waits: true},
		{name: "training with minAvailable below replicas: the free names once it can run without the rest", training: true,
			replicas: 3, min: 2, created: [][]int{nil, {0, 1}}, waits: true},
		{name: "inference: each pod created as its name frees", replicas: 2, min: 2, created: [][]int{{0}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			b := builders.PodClique("ns", "job-0-trainer").UID("new").InGang("g").Replicas(tc.replicas, tc.min).PodSpec(corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "t"}},
			})
			if tc.training {
				b.Training()
			}
			pclq := b.Obj()
			objs := []client.Object{pclq}
			var old []*corev1.Pod
			var names []string
			for i := range int(tc.replicas) {
				p := podOf(pclq.Name, i, "old")
				p.Finalizers = []string{"example.com/kubelet"} // the kubelet's confirmation, as the pod's grace period
				old, names, objs = append(old, p), append(names, p.Name), append(objs, p)
			}
			statusWrites := 0
			c := fakeClient(t).WithObjects(append(objs, podGangOf(time.Now(), 2, names...))...).
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
			created := func() []int {
				t.Helper()
				var out []int
				for i, name := range names {
					got := &corev1.Pod{}
					err := c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, got)
					if !apierrors.IsNotFound(err) {
						require.NoError(t, err)
						if metav1.IsControlledBy(got, pclq) {
							out = append(out, i)
						}
					}
				}
				return out
			}
			scheduled := func() string {
				t.Helper()
				got := &grovev1alpha1.PodClique{}
				require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(pclq), got))
				cond := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionPodCliqueScheduled)
				require.NotNil(t, cond)
				assert.Equal(t, metav1.ConditionFalse, cond.Status)
				return cond.Reason
			}

			pass() // deletes the replaced pods
			pass() // they terminate
			writes := statusWrites
			if tc.waits {
				assert.Equal(t, grovev1alpha1.ReasonReplacedPodsTerminating, scheduled(), "the wait is in the status")
				require.Len(t, recorder.Events, 1, "one event for the wait")
				assert.Contains(t, <-recorder.Events, grovev1alpha1.ReasonReplacedPodsTerminating)
			}
			for k, want := range tc.created {
				gone(old[k])
				pass()
				assert.Equal(t, want, created(), "once %d of %d old pods are gone", k+1, len(old))
				if tc.waits && len(want) == 0 {
					assert.Equal(t, writes, statusWrites, "quiet while old pods go")
					assert.Empty(t, recorder.Events, "no second event")
				}
			}

			for _, p := range old[len(tc.created):] {
				gone(p)
			}
			pass()
			assert.Len(t, created(), int(tc.replicas), "every pod once the old ones are gone")
			pass()
			if tc.waits {
				assert.Equal(t, grovev1alpha1.ReasonInsufficientScheduledPods, scheduled(), "the wait is over")
			}
			for len(recorder.Events) > 0 {
				assert.NotContains(t, <-recorder.Events, grovev1alpha1.ReasonReplacedPodsTerminating)
			}
		})
	}
}
