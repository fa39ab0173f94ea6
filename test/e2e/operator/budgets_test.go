package operatore2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// budgetSampler follows every pod of a namespace and, after every event, records the fewest
// Ready pods of the standalone clique and the fewest available replicas of the scaling group
// seen since it was armed.
type budgetSampler struct {
	mu    sync.Mutex
	pods  map[string]*corev1.Pod
	armed bool
	// minRouterReady and minGroupAvailable are the lowest counts seen; samples counts events.
	minRouterReady, minGroupAvailable, samples int
}

func (s *budgetSampler) observe(ev watch.Event) {
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ev.Type == watch.Deleted {
		delete(s.pods, pod.Name)
	} else {
		s.pods[pod.Name] = pod
	}
	if !s.armed {
		return
	}
	routerReady := 0
	groupReady := map[string]int{} // PodClique of the group → Ready pods
	for _, p := range s.pods {
		ready := p.DeletionTimestamp.IsZero() && podReady(p)
		switch {
		case !ready:
		case p.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] == "":
			routerReady++
		default:
			groupReady[p.Labels[grovev1alpha1.LabelPodClique]]++
		}
	}
	available := 0
	for j := 0; j < 3; j++ {
		leader := groupReady[grovev1alpha1.ScalingGroupPodCliqueName("budget-0-sg", j, "leader")]
		workers := groupReady[grovev1alpha1.ScalingGroupPodCliqueName("budget-0-sg", j, "worker")]
		if leader >= 1 && workers >= 2 {
			available++
		}
	}
	s.samples++
	s.minRouterReady = min(s.minRouterReady, routerReady)
	s.minGroupAvailable = min(s.minGroupAvailable, available)
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TestARollingUpdateKeepsEachComponentWithinItsOwnBudget rolls a standalone clique of 4 pods
// with maxUnavailable 2 and a scaling group of 3 replicas with the default maxUnavailable 1,
// sampling every pod event: the clique never has fewer than 2 Ready pods and uses its budget
// (two pods replaced at once); the group never has fewer than 2 available replicas.
func TestARollingUpdateKeepsEachComponentWithinItsOwnBudget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := builders.PodCliqueSet(ns, "budget").Clique("router", 4).Clique("leader", 1).Clique("worker", 2).
		ScalingGroup("sg", 3, 1, "leader", "worker").Obj()
	pcs.Spec.Template.Cliques[0].RollingUpdate = &grovev1alpha1.RollingUpdateConfiguration{MaxUnavailable: ptr.To[int32](2)}
	// No grove-webhook runs here: the group's budget is unset, which the operator takes as
	// upstream's default, maxUnavailable 1.
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "budget", 4+3*3, 2*time.Minute)
	require.Eventually(t, func() bool {
		got := &grovev1alpha1.PodCliqueSet{}
		return k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) == nil && got.Status.AvailableReplicas == 1
	}, time.Minute, 200*time.Millisecond)

	s := &budgetSampler{pods: map[string]*corev1.Pod{}, minRouterReady: 4, minGroupAvailable: 3}
	watcher, err := client.NewWithWatch(cluster.Current.RESTConfig(), client.Options{Scheme: k8s().Scheme()})
	require.NoError(t, err)
	list := &corev1.PodList{}
	w, err := cluster.ListAndWatch(ctx, watcher, list, ns)
	require.NoError(t, err)
	defer w.Stop()
	for i := range list.Items {
		s.observe(watch.Event{Type: watch.Added, Object: &list.Items[i]})
	}
	s.mu.Lock()
	s.armed = true
	s.mu.Unlock()
	go func() {
		for ev := range w.ResultChan() {
			s.observe(ev)
		}
	}()

	update(t, pcs, func() {
		for _, c := range pcs.Spec.Template.Cliques {
			c.Spec.PodSpec.Containers[0].Image = "busybox:1.37"
		}
	})
	require.Eventually(t, func() bool {
		pods := listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "budget"})
		if len(pods) != 13 {
			return false
		}
		for _, p := range pods {
			if p.Spec.Containers[0].Image != "busybox:1.37" || !podReady(&p) || !p.DeletionTimestamp.IsZero() {
				return false
			}
		}
		got := &grovev1alpha1.PodCliqueSet{}
		return k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) == nil &&
			meta.IsStatusConditionFalse(got.Status.Conditions, grovev1alpha1.ConditionUpdateInProgress)
	}, 3*time.Minute, 200*time.Millisecond, "every pod runs the new image and the update ended")

	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("%d pod events sampled", s.samples)
	assert.Equal(t, 2, s.minRouterReady, "the standalone clique (4 pods, maxUnavailable 2) uses its budget and never exceeds it")
	assert.GreaterOrEqual(t, s.minGroupAvailable, 2, "the scaling group (3 replicas, maxUnavailable 1) never has fewer than 2 available")

	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got))
	c := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionUpdateInProgress)
	require.NotNil(t, c)
	assert.Equal(t, grovev1alpha1.ReasonNoActiveUpdate, c.Reason)
	require.NotNil(t, got.Status.UpdateProgress)
	assert.NotNil(t, got.Status.UpdateProgress.UpdateEndedAt)
	assert.Nil(t, got.Status.UpdateProgress.LastProgressedAt, "cleared when the update ends")
}

// TestAnUpdateThatStopsProgressingIsReportedAfterItsDeadline rolls a clique onto a template whose
// pods never become Ready: after its progressDeadline the clique's and the PodCliqueSet's
// UpdateInProgress turn Unknown (ProgressDeadlineExceeded), and the clique keeps its budget's
// worth of Ready pods — the deadline reports, it does not force.
func TestAnUpdateThatStopsProgressingIsReportedAfterItsDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := builders.PodCliqueSet(ns, "stuck").Clique("router", 3).Obj()
	pcs.Spec.Template.Cliques[0].RollingUpdate = &grovev1alpha1.RollingUpdateConfiguration{
		MaxUnavailable: ptr.To[int32](1), ProgressDeadline: &metav1.Duration{Duration: 5 * time.Second}}
	require.NoError(t, k8s().Create(ctx, pcs))
	waitRunning(t, ns, "stuck", 3, 2*time.Minute)

	update(t, pcs, func() {
		c := pcs.Spec.Template.Cliques[0]
		c.Spec.PodSpec.Containers[0].Image = "busybox:1.37"
		c.Annotations = map[string]string{cluster.AnnotationReadyAfter: "1h"} // the new pods never start
	})
	var cond *metav1.Condition
	require.Eventually(t, func() bool {
		got := &grovev1alpha1.PodCliqueSet{}
		if k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) != nil {
			return false
		}
		cond = meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionUpdateInProgress)
		return cond != nil && cond.Status == metav1.ConditionUnknown
	}, time.Minute, 200*time.Millisecond, "the PodCliqueSet reports the stalled update")
	assert.Equal(t, grovev1alpha1.ReasonProgressDeadlineExceeded, cond.Reason)
	assert.Equal(t, "1/1 PodCliques stuck", cond.Message)

	pclq := &grovev1alpha1.PodClique{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: grovev1alpha1.PodCliqueName("stuck", 0, "router")}, pclq))
	pc := meta.FindStatusCondition(pclq.Status.Conditions, grovev1alpha1.ConditionUpdateInProgress)
	require.NotNil(t, pc)
	assert.Equal(t, grovev1alpha1.ReasonProgressDeadlineExceeded, pc.Reason, pc.Message)
	ready := 0
	for _, p := range listPods(t, ns, map[string]string{grovev1alpha1.LabelPodClique: pclq.Name}) {
		if podReady(&p) && p.DeletionTimestamp.IsZero() {
			ready++
		}
	}
	assert.Equal(t, 2, ready, fmt.Sprintf("the update waits within its budget (3 pods, maxUnavailable 1): %+v", pclq.Status))
}
