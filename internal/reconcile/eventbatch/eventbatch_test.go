package eventbatch

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func podOf(owner string) *corev1.Pod {
	return builders.Pod("ns", owner+"-0").
		OwnerReference(metav1.OwnerReference{APIVersion: "grove.io/v1alpha1", Kind: "PodClique", Name: owner, Controller: ptr.To(true)}).Obj()
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
	// A second request for a would have been due by now; a sentinel due a period later comes out
	// first only if there is none.
	sentinel := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "sentinel"}}
	q.AddAfter(sentinel, period)
	next, _ := q.Get()
	assert.Equal(t, sentinel, next, "the six events of a were one request")
	q.Done(next)
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
	require.Eventually(t, func() bool { return q.Len() == 1 }, time.Second, time.Millisecond, "the status-only request comes due")
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
	live := builders.Pod("", "live").Obj()
	deleting := builders.Pod("", "deleting").DeletedAt(time.Now()).Finalizers("kueue.x-k8s.io/managed").Obj()
	assert.False(t, p.Create(event.CreateEvent{Object: live}), "a child's creation teaches its creator nothing")
	assert.True(t, p.Create(event.CreateEvent{Object: deleting}), "a child seen first while being deleted may have no parent left to bring it back")
	assert.True(t, p.Update(event.UpdateEvent{ObjectOld: live, ObjectNew: live}))
	assert.True(t, p.Delete(event.DeleteEvent{Object: live}))
}

func TestPromptRequestsTakeABurstThenArePaced(t *testing.T) {
	start := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "a"}}
	other := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "b"}}
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	type step struct {
		at    time.Duration
		req   reconcile.Request
		want  time.Duration
		burst bool
	}
	burst := func(at time.Duration, r reconcile.Request) step { return step{at, r, PromptWindow, true} }
	// Seven in a row, 60 ms apart: six in the burst and 0.18 of a request back each time (3 a
	// second), so the seventh finds one too.
	var sevenInARow []step
	for i := range 7 {
		sevenInARow = append(sevenInARow, burst(ms(float64(60*i)), req))
	}
	after := func(steps ...step) []step { return append(slices.Clone(sevenInARow), steps...) }
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"an idle parent waits only the window", []step{burst(0, req)}},
		{"events of the same burst join the request already due", []step{
			burst(0, req), {ms(10), req, PromptWindow - ms(10), true}}},
		{"a rolling step's waves of pods gone, then Ready, each wait only the window", sevenInARow},
		{"past the burst, a request waits until the parent has one again", after(
			// 0.08 left at 360 ms, 0.26 at 420: 0.74 of a request is missing, 247 ms.
			step{ms(420), req, ms(740.0 / 3), false})},
		{"under a stream, requests come a third of a period apart", after(
			step{ms(420), req, ms(740.0 / 3), false},
			// the one due at 667 ms used the refill up to then: the next is a third of a period later.
			step{ms(700), req, ms(666.6667) + Period/PromptRate - ms(700), false})},
		{"a period gives back PromptRate requests", after(
			burst(ms(360)+Period, req), burst(ms(420)+Period, req), burst(ms(480)+Period, req),
			// 3.08 back at 1360 ms, three spent, 0.62 at 1540: 0.38 missing, 127 ms.
			step{ms(540) + Period, req, ms(380.0 / 3), false})},
		{"each parent has its own burst", after(burst(ms(420), other))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(start)
			b := &promptBatch{period: Period, clk: clk}
			for i, s := range tc.steps {
				clk.SetTime(start.Add(s.at))
				wait, burst := b.delay(s.req, false)
				assert.InDelta(t, s.want, wait, float64(10*time.Microsecond), "step %d", i)
				assert.Equal(t, s.burst, burst, "step %d", i)
			}
		})
	}
}

func TestEnqueuePromptlyTakesDeletionsAndPromptChangesAtOnceAndBatchesTheRest(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	period := 300 * time.Millisecond
	ctx := context.Background()
	h := EnqueuePromptly(ControllerOf("grove.io/v1alpha1", "PodClique"), period, Low, PodReadyOrGone, nil, clock.RealClock{})
	notReady, ready := podOf("turned-ready"), podOf("turned-ready")
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	start := time.Now()
	h.Update(ctx, event.UpdateEvent{ObjectOld: podOf("batched"), ObjectNew: podOf("batched")}, q)
	h.Generic(ctx, event.GenericEvent{Object: podOf("generic")}, q)
	h.Delete(ctx, event.DeleteEvent{Object: podOf("gone")}, q)
	h.Update(ctx, event.UpdateEvent{ObjectOld: notReady, ObjectNew: ready}, q)

	got := map[string]time.Duration{}
	priorities := map[string]int{}
	for range 4 {
		req, priority, _ := q.GetWithPriority()
		got[req.Name], priorities[req.Name] = time.Since(start), priority
		q.Done(req)
	}
	for _, name := range []string{"gone", "turned-ready"} {
		assert.Less(t, got[name], period, "%s is taken before the batch period", name)
		assert.Equal(t, Normal, priorities[name], name)
	}
	for _, name := range []string{"batched", "generic"} {
		assert.GreaterOrEqual(t, got[name], period, "%s waits the batch period", name)
		assert.Equal(t, Low, priorities[name], name)
	}
}

func TestPromptEventsAreTheOnesARollingStepWaitsFor(t *testing.T) {
	pod := func(ready bool, phase corev1.PodPhase, deleting bool) *corev1.Pod {
		b := builders.Pod("", "").Phase(phase).Condition(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}).Ready(ready)
		if deleting {
			b.DeletedAt(time.Now())
		}
		return b.Obj()
	}
	// clique wants 4 pods.
	clique := func(gen int64, ready, updated int32) *grovev1alpha1.PodClique {
		return &grovev1alpha1.PodClique{Spec: grovev1alpha1.PodCliqueObjectSpec{PodCliqueSpec: grovev1alpha1.PodCliqueSpec{Replicas: 4}},
			Status: grovev1alpha1.PodCliqueStatus{ObservedGeneration: ptr.To(gen), ReadyReplicas: ready, UpdatedReplicas: updated}}
	}
	finished := func(c *grovev1alpha1.PodClique, failed, succeeded int32) *grovev1alpha1.PodClique {
		c.Status.FailedReplicas, c.Status.SucceededReplicas = failed, succeeded
		return c
	}
	updatedReady := func(c *grovev1alpha1.PodClique, n int32) *grovev1alpha1.PodClique {
		c.Status.UpdateProgress = &grovev1alpha1.PodCliqueUpdateProgress{UpdatedReadyReplicas: n}
		return c
	}
	breach := func(c *grovev1alpha1.PodClique, s metav1.ConditionStatus) *grovev1alpha1.PodClique {
		c.Status.Conditions = []metav1.Condition{{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: s, Reason: "Counted"}}
		return c
	}
	made := func(c *grovev1alpha1.PodClique, n int32) *grovev1alpha1.PodClique {
		c.Status.Replicas = n
		return c
	}
	was := func(c *grovev1alpha1.PodClique) *grovev1alpha1.PodClique {
		c.Status.WasAvailable = true
		return c
	}
	atGeneration1 := func(c *grovev1alpha1.PodClique) *grovev1alpha1.PodClique {
		c.Generation = 1
		return c
	}
	minAvailable := func(c *grovev1alpha1.PodClique, n int32) *grovev1alpha1.PodClique {
		c.Spec.MinAvailable = ptr.To(n)
		return c
	}
	reason := func(c *grovev1alpha1.PodClique, r string) *grovev1alpha1.PodClique {
		c.Status.Conditions[0].Reason = r
		return c
	}
	for _, tc := range []struct {
		name     string
		prompt   Prompt
		old, new client.Object
		want     bool
	}{
		{"a pod turned Ready", PodReadyOrGone, pod(false, corev1.PodRunning, false), pod(true, corev1.PodRunning, false), true},
		{"a pod turned not Ready: batched", PodReadyOrGone, pod(true, corev1.PodRunning, false), pod(false, corev1.PodRunning, false), false},
		{"a pod failed", PodReadyOrGone, pod(false, corev1.PodRunning, false), pod(false, corev1.PodFailed, false), true},
		{"a pod began to be deleted: batched (its deletion event, once gone, is prompt)", PodReadyOrGone, pod(true, corev1.PodRunning, false), pod(true, corev1.PodRunning, true), false},
		{"a pod scheduled or started: batched", PodReadyOrGone, pod(false, corev1.PodPending, false), pod(false, corev1.PodRunning, false), false},
		{"a pod's creation: batched", PodReadyOrGone, nil, pod(false, corev1.PodPending, false), false},
		{"a clique counts more Ready pods", CliqueProgressed, clique(1, 3, 4), clique(1, 4, 4), true},
		{"a clique counts fewer Ready pods: batched", CliqueProgressed, clique(1, 4, 4), clique(1, 3, 4), false},
		{"a clique has all its pods at its template", CliqueProgressed, clique(1, 4, 3), clique(1, 4, 4), true},
		{"a clique has more, not all, pods at its template: batched", CliqueProgressed, clique(1, 4, 2), clique(1, 4, 3), false},
		{"a clique has fewer pods at its template: batched", CliqueProgressed, clique(1, 4, 4), clique(1, 4, 0), false},
		{"a clique's status describes a new generation", CliqueProgressed, clique(1, 4, 4), clique(2, 4, 4), true},
		{"a clique counts a failed pod", CliqueProgressed, clique(1, 4, 4), finished(clique(1, 3, 4), 1, 0), true},
		{"a clique counts a succeeded pod", CliqueProgressed, clique(1, 4, 4), finished(clique(1, 3, 4), 0, 1), true},
		{"a clique counts more Ready pods at the new template", CliqueProgressed, updatedReady(clique(1, 4, 4), 2), updatedReady(clique(1, 4, 4), 3), true},
		{"a clique counts fewer Ready pods at the new template: batched", CliqueProgressed, updatedReady(clique(1, 4, 4), 3), updatedReady(clique(1, 4, 4), 2), false},
		{"a clique's update begins counting Ready pods at the new template", CliqueProgressed, clique(1, 4, 4), updatedReady(clique(1, 4, 4), 1), true},
		{"a clique's minimum is breached", CliqueProgressed, breach(clique(1, 4, 4), metav1.ConditionFalse), breach(clique(1, 2, 4), metav1.ConditionTrue), true},
		{"a clique's breach ends", CliqueProgressed, breach(clique(1, 4, 4), metav1.ConditionTrue), breach(clique(1, 4, 4), metav1.ConditionFalse), true},
		{"a clique's breach condition first written", CliqueProgressed, clique(1, 4, 4), breach(clique(1, 4, 4), metav1.ConditionFalse), true},
		{"a clique's breach condition rewritten with another reason: batched", CliqueProgressed,
			breach(clique(1, 4, 4), metav1.ConditionTrue), reason(breach(clique(1, 4, 4), metav1.ConditionTrue), "Other"), false},
		{"a clique's other status: batched", CliqueProgressed, clique(1, 4, 4), clique(1, 4, 4), false},
		{"to a parent that takes no step: the clique reaches its minimum of Ready pods", CliqueAvailable, clique(1, 3, 4), clique(1, 4, 4), true},
		{"to a parent that takes no step: the minimum reached with a lower minAvailable", CliqueAvailable, minAvailable(clique(1, 1, 4), 2), minAvailable(clique(1, 2, 4), 2), true},
		{"to a parent that takes no step: more Ready pods beyond the minimum: batched", CliqueAvailable, minAvailable(clique(1, 2, 4), 2), minAvailable(clique(1, 3, 4), 2), false},
		{"to a parent that takes no step: more Ready pods still below it: batched", CliqueAvailable, clique(1, 2, 4), clique(1, 3, 4), false},
		{"to a parent that takes no step: fewer Ready pods: batched", CliqueAvailable, clique(1, 4, 4), clique(1, 3, 4), false},
		{"to a parent that takes no step: a new generation: batched", CliqueAvailable, clique(1, 4, 4), clique(2, 4, 4), false},
		{"to a parent that takes no step: all pods at the template: batched", CliqueAvailable, clique(1, 4, 3), clique(1, 4, 4), false},
		{"to a parent that takes no step: more Ready pods at the new template: batched", CliqueAvailable, updatedReady(clique(1, 4, 4), 2), updatedReady(clique(1, 4, 4), 3), false},
		{"to a parent that takes no step: a failed pod", CliqueAvailable, clique(1, 4, 4), finished(clique(1, 3, 4), 1, 0), true},
		{"to a parent that takes no step: a succeeded pod", CliqueAvailable, clique(1, 4, 4), finished(clique(1, 3, 4), 0, 1), true},
		{"to a parent that takes no step: the minimum breached", CliqueAvailable, breach(clique(1, 4, 4), metav1.ConditionFalse), breach(clique(1, 2, 4), metav1.ConditionTrue), true},
		{"awaited by a step: an available clique's minimum of Ready pods reached again", CliqueAwaited, was(minAvailable(clique(1, 1, 4), 2)), was(minAvailable(clique(1, 2, 4), 2)), true},
		{"awaited by a step: an available clique whole again", CliqueAwaited, was(atGeneration1(minAvailable(clique(1, 2, 3), 2))), was(atGeneration1(minAvailable(clique(1, 2, 4), 2))), true},
		{"not awaited: a clique starting for the first time reaches its minimum", CliqueAwaited, minAvailable(clique(1, 1, 4), 2), minAvailable(clique(1, 2, 4), 2), false},
		{"not awaited: more Ready pods beyond the minimum, the clique already whole", CliqueAwaited, was(atGeneration1(minAvailable(clique(1, 2, 4), 2))), was(atGeneration1(minAvailable(clique(1, 3, 4), 2))), false},
		{"not awaited: fewer Ready pods", CliqueAwaited, was(clique(1, 4, 4)), was(clique(1, 3, 4)), false},
		{"not awaited: a count below the minimum", CliqueAwaited, was(clique(1, 1, 2)), was(clique(1, 2, 3)), false},
		{"to a parent that takes no step: a new clique's pods all made", CliqueAvailable, made(clique(1, 0, 0), 3), made(clique(1, 0, 0), 4), true},
		{"to a parent that takes no step: an available clique's pods all made again: batched", CliqueAvailable, was(made(clique(1, 3, 3), 3)), was(made(clique(1, 3, 4), 4)), false},
		{"to a parent that takes no step: the breach ends", CliqueAvailable, breach(clique(1, 4, 4), metav1.ConditionTrue), breach(clique(1, 4, 4), metav1.ConditionFalse), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.prompt(tc.old, tc.new))
		})
	}
}

func TestAnUrgentRequestWaitsForNothingAndSpendsNoPromptRequest(t *testing.T) {
	start := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	req := reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "a"}}
	ms := func(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }
	type step struct {
		at     time.Duration
		urgent bool
		want   time.Duration
		burst  bool
	}
	// Seven prompt requests 60 ms apart spend the burst (see TestPromptRequestsTakeABurstThenArePaced).
	var spent []step
	for i := range 7 {
		spent = append(spent, step{ms(float64(60 * i)), false, PromptWindow, true})
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"with the burst spent, an urgent request waits for nothing", append(spent,
			step{ms(420), true, 0, true})},
		{"an urgent request spends nothing: the next prompt one waits as if it had not come", append(spent,
			step{ms(420), true, 0, true},
			// 0.08 left at 360 ms, 0.32 at 440: 0.68 missing, 227 ms.
			step{ms(440), false, ms(680.0 / 3), false})},
		{"an urgent request does not wait for the request already due", []step{
			{0, false, PromptWindow, true}, {ms(20), true, 0, true}}},
		{"an urgent request does not wait for a paced one due later", append(spent,
			step{ms(420), false, ms(740.0 / 3), false},
			step{ms(430), true, 0, true})},
		{"a group's cliques whole a moment apart are each taken at once", []step{
			{0, true, 0, true}, {ms(5), true, 0, true}}},
		{"past the urgent burst, urgent requests come one a window: sooner ones join the next", []step{
			{0, true, 0, true}, {0, true, 0, true}, {0, true, 0, true}, {0, true, 0, true},
			{ms(10), true, ms(40), true}, {ms(30), true, ms(20), true},
			// one back by 50 ms, spent by the request due then: the next is a window later
			{ms(60), true, ms(40), true}, {ms(300), true, 0, true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(start)
			b := &promptBatch{period: Period, clk: clk}
			for i, s := range tc.steps {
				clk.SetTime(start.Add(s.at))
				wait, burst := b.delay(req, s.urgent)
				assert.InDelta(t, s.want, wait, float64(10*time.Microsecond), "step %d", i)
				assert.Equal(t, s.burst, burst, "step %d", i)
			}
		})
	}
}

func TestEnqueuePromptlyTakesAnUrgentEventAtOnceWhenThePromptRequestsAreSpent(t *testing.T) {
	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	// Three seconds a period: a prompt request refills in one second.
	period := 3 * time.Second
	start := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(start)
	ctx := context.Background()
	urgent := func(_, new client.Object) bool { return new.GetLabels()["urgent"] == "true" }
	h := EnqueuePromptly(ControllerOf("grove.io/v1alpha1", "PodClique"), period, Low, PodReadyOrGone, urgent, clk)
	notReady, ready := podOf("parent"), podOf("parent")
	ready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	get := func() (reconcile.Request, int) {
		t.Helper()
		type got struct {
			req      reconcile.Request
			priority int
		}
		c := make(chan got, 1)
		go func() {
			req, priority, _ := q.GetWithPriority()
			c <- got{req, priority}
		}()
		select {
		case g := <-c:
			q.Done(g.req)
			return g.req, g.priority
		case <-time.After(5 * time.Second):
			require.FailNow(t, "nothing was enqueued")
			return reconcile.Request{}, 0
		}
	}
	for i := range PromptBurst {
		clk.SetTime(start.Add(time.Duration(i) * 60 * time.Millisecond))
		h.Update(ctx, event.UpdateEvent{ObjectOld: notReady, ObjectNew: ready}, q)
	}
	get()

	// The burst is spent (0.36 of a request back by 360 ms): the next prompt event waits 640 ms
	// for the refill...
	clk.SetTime(start.Add(360 * time.Millisecond))
	h.Update(ctx, event.UpdateEvent{ObjectOld: notReady, ObjectNew: ready}, q)
	// ...and an urgent one, a moment later, takes it with it at once.
	clk.SetTime(start.Add(370 * time.Millisecond))
	whole := ready.DeepCopy()
	whole.Labels = map[string]string{"urgent": "true"}
	began := time.Now()
	h.Update(ctx, event.UpdateEvent{ObjectOld: notReady, ObjectNew: whole}, q)
	req, priority := get()
	assert.Equal(t, "parent", req.Name)
	assert.Equal(t, Normal, priority)
	assert.Less(t, time.Since(began), 400*time.Millisecond, "an urgent event waits for no refill")
	assert.Zero(t, q.Len(), "the paced request went with the urgent one")
}

func TestACliqueWholeAgainIsUrgent(t *testing.T) {
	// a clique of 4 pods, minAvailable 3, at generation 2.
	clique := func(observed int64, ready, updated int32) *grovev1alpha1.PodClique {
		return builders.PodClique("ns", "c").Replicas(4, 3).Generation(2).
			Status(grovev1alpha1.PodCliqueStatus{ObservedGeneration: ptr.To(observed), ReadyReplicas: ready, UpdatedReplicas: updated}).Obj()
	}
	coherent := func(c *grovev1alpha1.PodClique) *grovev1alpha1.PodClique {
		c.Spec.UpdateStrategy = grovev1alpha1.CoherentStrategy
		return c
	}
	for _, tc := range []struct {
		name     string
		old, new *grovev1alpha1.PodClique
		want     bool
	}{
		{"minAvailable Ready with every pod at the template", clique(2, 2, 4), clique(2, 3, 4), true},
		{"the last pod at the template, enough of them Ready", clique(2, 3, 3), clique(2, 3, 4), true},
		{"the status catches up with a spec it already met", clique(1, 4, 4), clique(2, 4, 4), true},
		{"already whole: more Ready pods are not urgent", clique(2, 3, 4), clique(2, 4, 4), false},
		{"every pod Ready, the last one now at the template", clique(2, 4, 3), clique(2, 4, 4), true},
		{"already whole under Coherent: more pods at the template are not urgent", coherent(clique(2, 4, 3)), coherent(clique(2, 4, 4)), false},
		{"Ready pods short of minAvailable", clique(2, 1, 4), clique(2, 2, 4), false},
		{"every pod Ready again, not all at the template, under Coherent (a step's end)", coherent(clique(2, 3, 2)), coherent(clique(2, 4, 2)), true},
		{"every pod Ready again, not all at the template, under RollingRecreate (one pod of a standalone clique's own roll)", clique(2, 3, 2), clique(2, 4, 2), false},
		{"minAvailable Ready, not all at the template", clique(2, 2, 3), clique(2, 3, 3), false},
		{"a status of an older generation", clique(0, 2, 4), clique(1, 4, 4), false},
		{"no longer whole", clique(2, 4, 4), clique(2, 2, 4), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, CliqueWhole(tc.old, tc.new))
		})
	}
	assert.False(t, CliqueWhole(podOf("p"), podOf("p")), "only cliques are urgent")
}
