package compositegangse2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

func podCondition(p corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == t {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func isReady(p corev1.Pod) bool {
	c := podCondition(p, corev1.PodReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// A router (whose pod takes 15 s to start) and workers that start after it, placed as one gang:
// the gang is placed whole at once, and the workers are held at start, initializing in
// grove-initc, until the router is Ready; then they start.
func TestAGangIsPlacedWholeAndItsDependentsStartOnlyAfterTheirParentIsReady(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pool(t, ns, "node", 1)
	slowRouter := func(c *grovev1alpha1.PodCliqueTemplateSpec) {
		c.Annotations = map[string]string{cluster.AnnotationReadyAfter: "15s"}
	}
	pcs := builders.PodCliqueSet(ns, "ordered").
		Clique("router", 1, onNodes(ns, "node", 1), slowRouter).
		Clique("worker", 2, onNodes(ns, "node", 1), builders.StartsAfter("router")).Obj()
	pcs.Spec.Template.StartupType = ptr.To(grovev1alpha1.CliqueStartupTypeExplicit)
	require.NoError(t, k8s().Create(ctx, pcs))

	byClique := func() (router corev1.Pod, workers []corev1.Pod) {
		for _, p := range podsOf(t, ns, "ordered") {
			if p.Labels[grovev1alpha1.LabelPodClique] == "ordered-0-router" {
				router = p
			} else {
				workers = append(workers, p)
			}
		}
		return router, workers
	}
	require.Eventually(t, func() bool { return len(bound(podsOf(t, ns, "ordered"))) == 3 }, 60*time.Second, 200*time.Millisecond,
		"the gang, workers included, is placed whole")
	router, workers := byClique()
	require.False(t, isReady(router), "the router has not started yet (15 s)")
	require.Eventually(t, func() bool {
		_, workers = byClique()
		for _, w := range workers {
			if podCondition(w, corev1.PodInitialized) == nil {
				return false
			}
		}
		return true
	}, 30*time.Second, 200*time.Millisecond, "kwok shows the workers initializing")
	router, _ = byClique()
	require.False(t, isReady(router), "still within the router's 15 s: the workers' wait is observable")
	for _, w := range workers {
		assert.Equal(t, grovev1alpha1.StartupGateWaiting, w.Annotations[grovev1alpha1.AnnotationStartupGate], w.Name)
		assert.Equal(t, corev1.ConditionFalse, podCondition(w, corev1.PodInitialized).Status, "%s waits in grove-initc", w.Name)
		assert.False(t, isReady(w), "%s does not start before the router", w.Name)
	}

	require.Eventually(t, func() bool {
		router, workers = byClique()
		return isReady(router) && len(workers) == 2 && isReady(workers[0]) && isReady(workers[1])
	}, 90*time.Second, 200*time.Millisecond, "the router starts, then the workers")
	routerReady := podCondition(router, corev1.PodReady).LastTransitionTime
	for _, w := range workers {
		assert.Equal(t, grovev1alpha1.StartupGateReleased, w.Annotations[grovev1alpha1.AnnotationStartupGate], w.Name)
		assert.False(t, podCondition(w, corev1.PodReady).LastTransitionTime.Before(&routerReady), "%s became Ready no earlier than the router", w.Name)
		var initc *corev1.ContainerStatus
		for i := range w.Status.InitContainerStatuses {
			if w.Status.InitContainerStatuses[i].Name == grovev1alpha1.StartupWaitContainer {
				initc = &w.Status.InitContainerStatuses[i]
			}
		}
		if assert.NotNil(t, initc, w.Name) && assert.NotNil(t, initc.State.Terminated, w.Name) {
			assert.Equal(t, int32(0), initc.State.Terminated.ExitCode)
		}
	}

	require.Eventually(t, func() bool {
		if k8s().Get(ctx, client.ObjectKeyFromObject(pcs), pcs) != nil {
			return false
		}
		c := meta.FindStatusCondition(pcs.Status.Conditions, grovev1alpha1.ConditionSchedulingConstraintsHonored)
		return c != nil && c.Status == "True"
	}, 30*time.Second, 200*time.Millisecond, "gang mode honours the startup order: %v", pcs.Status.Conditions)
}
