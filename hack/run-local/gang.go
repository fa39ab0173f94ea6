package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// burstPool is the node label the waiting gang selects (hack/run-local/waiting-gang.yaml).
const burstPool = "node-pool"

// burstNode is a kwok node of the burst pool: 8 GPUs, room for one of the gang's two pods.
func burstNode(i int) cluster.NodeSpec {
	n := cluster.DefaultNode(100 + i)
	n.Name = fmt.Sprintf("kwok-burst-%d", i)
	n.Labels[burstPool] = "burst"
	return n
}

// showWaitingGang shows a gang that cannot fit wait whole with the scheduler's reason, stay whole
// while a new node holds only half of it, and be placed whole once a second node comes.
func showWaitingGang(ctx context.Context, c *cluster.Cluster, ns, pcs string) error {
	begin := time.Now()
	gang := grovev1alpha1.BasePodGangName(pcs, 0)
	say := func(format string, args ...any) {
		fmt.Printf("[%5.1fs] "+format+"\n", append([]any{time.Since(begin).Seconds()}, args...)...)
	}
	unschedulable := func(pg *schedulerv1alpha1.PodGang) bool {
		c := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionScheduled)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
	}
	pg, err := waitGang(ctx, c, ns, gang, 2*time.Minute, unschedulable)
	if err != nil {
		return fmt.Errorf("PodGang %s/%s never said it is unschedulable: %w", ns, gang, err)
	}
	cond := meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionScheduled)
	say("PodGang %s/%s: phase %s, Scheduled=%s/%s: %s", ns, gang, pg.Status.Phase, cond.Status, cond.Reason, cond.Message)
	said, err := waitPodCliqueSetCondition(ctx, c, ns, pcs, grovev1alpha1.ConditionPodGangsSchedulable, grovev1alpha1.ReasonPodGangUnschedulable)
	if err != nil {
		return err
	}
	say("PodCliqueSet %s/%s: %s", ns, pcs, said)

	if err := c.AddNodes(ctx, burstNode(0)); err != nil {
		return err
	}
	say("added node %s (8 GPUs): room for one of the gang's two pods", burstNode(0).Name)
	// kube-scheduler looks again at once when a node is added; give it a few seconds to do so.
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(5 * time.Second):
	}
	if bound, err := boundPods(ctx, c, ns, pcs); err != nil {
		return err
	} else if bound != 0 {
		return fmt.Errorf("gang %s/%s was placed in part: %d of 2 pods bound with room for one", ns, pcs, bound)
	}
	say("still no pod of %s/%s placed: a gang is placed whole or not at all", ns, pcs)

	if err := c.AddNodes(ctx, burstNode(1)); err != nil {
		return err
	}
	say("added node %s: room for the whole gang", burstNode(1).Name)
	pg, err = waitGang(ctx, c, ns, gang, 2*time.Minute, func(pg *schedulerv1alpha1.PodGang) bool {
		return pg.Status.Phase == schedulerv1alpha1.PodGangPhaseRunning
	})
	if err != nil {
		return fmt.Errorf("PodGang %s/%s never ran once there was room: %w", ns, gang, err)
	}
	cond = meta.FindStatusCondition(pg.Status.Conditions, schedulerv1alpha1.ConditionScheduled)
	say("PodGang %s/%s: phase %s, Scheduled=%s/%s: %s", ns, gang, pg.Status.Phase, cond.Status, cond.Reason, cond.Message)
	return nil
}

// waitPodCliqueSetCondition polls a PodCliqueSet until its condition of type has reason, for
// two minutes at most, and returns it as "Type=Status/Reason: message".
func waitPodCliqueSetCondition(ctx context.Context, c *cluster.Cluster, ns, name, condType, reason string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	last := "no " + condType + " condition"
	for {
		pcs := &grovev1alpha1.PodCliqueSet{}
		if err := c.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pcs); err == nil {
			if cond := meta.FindStatusCondition(pcs.Status.Conditions, condType); cond != nil {
				last = fmt.Sprintf("%s=%s/%s: %s", cond.Type, cond.Status, cond.Reason, cond.Message)
				if cond.Reason == reason {
					return last, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("PodCliqueSet %s/%s never said %s: %w (%s)", ns, name, reason, ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitGang polls a PodGang until done says so, or timeout.
func waitGang(ctx context.Context, c *cluster.Cluster, ns, name string, timeout time.Duration, done func(*schedulerv1alpha1.PodGang) bool) (*schedulerv1alpha1.PodGang, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		pg := &schedulerv1alpha1.PodGang{}
		if err := c.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pg); err == nil && done(pg) {
			return pg, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// boundPods counts the PodCliqueSet's pods bound to a node.
func boundPods(ctx context.Context, c *cluster.Cluster, ns, pcs string) (int, error) {
	pods := &corev1.PodList{}
	if err := c.Client().List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: pcs}); err != nil {
		return 0, err
	}
	bound := 0
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			bound++
		}
	}
	return bound, nil
}
