package eventbatch

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func podOf(owner string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: owner + "-0", Namespace: "ns", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "grove.io/v1alpha1", Kind: "PodClique", Name: owner, Controller: ptr.To(true)},
	}}}
}

func TestABurstOfChildEventsBecomesOneDelayedRequest(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	period := 200 * time.Millisecond
	h := EnqueueAfter(ControllerOf("grove.io/v1alpha1", "PodClique"), period, Low)
	ctx := context.Background()
	start := time.Now()
	h.Create(ctx, event.CreateEvent{Object: podOf("a")}, q)
	for range 5 {
		h.Update(ctx, event.UpdateEvent{ObjectOld: podOf("a"), ObjectNew: podOf("a")}, q)
	}
	h.Delete(ctx, event.DeleteEvent{Object: podOf("b")}, q)
	assert.Equal(t, 0, q.Len(), "nothing before the period ends")

	got := map[reconcile.Request]time.Duration{}
	for range 2 {
		req, _ := q.Get()
		got[req] = time.Since(start)
		q.Done(req)
	}
	require.Len(t, got, 2)
	for req, after := range got {
		assert.GreaterOrEqual(t, after, period, req.Name)
	}
	assert.Contains(t, got, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "a"}})
	assert.Contains(t, got, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "b"}})
	time.Sleep(period)
	assert.Equal(t, 0, q.Len(), "the six events of a were one request")
}

func TestControllerOfIgnoresOtherOwners(t *testing.T) {
	p := podOf("a")
	p.OwnerReferences[0].Controller = ptr.To(false)
	assert.Empty(t, ControllerOf("grove.io/v1alpha1", "PodClique")(context.Background(), p), "an owner that is not the controller")
	p = podOf("a")
	assert.Empty(t, ControllerOf("grove.io/v1alpha1", "PodCliqueSet")(context.Background(), p), "another kind")
	assert.Equal(t, []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "a"}}},
		ControllerOf("grove.io/v1alpha1", "PodClique")(context.Background(), p))
}

func TestChildEventsWaitBehindCreationWorkInThePriorityQueue(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	period := 100 * time.Millisecond
	ctx := context.Background()
	EnqueueAfter(ControllerOf("grove.io/v1alpha1", "PodClique"), period, Low).
		Update(ctx, event.UpdateEvent{ObjectOld: podOf("status-only"), ObjectNew: podOf("status-only")}, q)
	time.Sleep(2 * period)
	q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "creates"}}) // added later, at Normal

	first, priority, _ := q.GetWithPriority()
	assert.Equal(t, "creates", first.Name, "a later request at Normal priority is taken first")
	assert.Equal(t, Normal, priority)
	q.Done(first)
	second, priority, _ := q.GetWithPriority()
	assert.Equal(t, "status-only", second.Name)
	assert.Equal(t, Low, priority)
	q.Done(second)

	assert.Equal(t, ptr.To(Low), StatusPass().Priority, "a pass that created children looks again at Low priority")
	assert.Equal(t, Period, StatusPass().RequeueAfter)
}

func TestSpecChangedPassesEverythingButAStatusOnlyUpdate(t *testing.T) {
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 1, Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"b": "1"}}}
	cases := []struct {
		name   string
		change func(p *corev1.Pod)
		want   bool
	}{
		{"status only", func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning; p.ResourceVersion = "2" }, false},
		{"spec (generation)", func(p *corev1.Pod) { p.Generation = 2 }, true},
		{"a label", func(p *corev1.Pod) { p.Labels["a"] = "2" }, true},
		{"an annotation", func(p *corev1.Pod) { p.Annotations["c"] = "3" }, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			updated := old.DeepCopy()
			tc.change(updated)
			assert.Equal(t, tc.want, SpecChanged().Update(event.UpdateEvent{ObjectOld: old, ObjectNew: updated}))
		})
	}
	assert.True(t, SpecChanged().Create(event.CreateEvent{Object: old}))
	assert.True(t, SpecChanged().Delete(event.DeleteEvent{Object: old}))
}

func TestSkipCreatePassesOnlyChildrenAlreadyBeingDeleted(t *testing.T) {
	p := SkipCreate()
	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "live"}}
	deleting := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "deleting", DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"kueue.x-k8s.io/managed"}}}
	assert.False(t, p.Create(event.CreateEvent{Object: live}), "a child's creation teaches its creator nothing")
	assert.True(t, p.Create(event.CreateEvent{Object: deleting}), "a child seen first while being deleted may have no parent left to bring it back")
	assert.True(t, p.Update(event.UpdateEvent{ObjectOld: live, ObjectNew: live}))
	assert.True(t, p.Delete(event.DeleteEvent{Object: live}))
}
