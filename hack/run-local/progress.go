package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// showProgress prints how the sample PodCliqueSet's pods move from created to ungated to Running
// until every pod it wants runs on a kwok node.
func showProgress(ctx context.Context, c *cluster.Cluster, ns, name string) error {
	begin := time.Now()
	last := ""
	for {
		want, created, ungated, held, running, err := counts(ctx, c.Client(), ns, name)
		if err != nil {
			return err
		}
		line := fmt.Sprintf("PodCliqueSet %s/%s: %d pods wanted, %d created, %d ungated, %d held at start, %d Running", ns, name, want, created, ungated, held, running)
		if line != last {
			fmt.Printf("[%5.1fs] %s\n", time.Since(begin).Seconds(), line)
			last = line
		}
		if want > 0 && running == want && created == want {
			fmt.Printf("every pod of %s is Running on kwok nodes after %s\n", name, time.Since(begin).Round(time.Millisecond))
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// counts counts a PodCliqueSet's pods: wanted, created, ungated, held at start for startup
// ordering (docs/startup-ordering.md) and Running.
func counts(ctx context.Context, k8s client.Client, ns, name string) (want, created, ungated, held, running int, err error) {
	sel := client.MatchingLabels{grovev1alpha1.LabelPartOf: name}
	cliques := &grovev1alpha1.PodCliqueList{}
	if err = k8s.List(ctx, cliques, client.InNamespace(ns), sel); err != nil {
		return
	}
	for _, p := range cliques.Items {
		want += int(p.Spec.Replicas)
	}
	pods := &corev1.PodList{}
	if err = k8s.List(ctx, pods, client.InNamespace(ns), sel); err != nil {
		return
	}
	for _, p := range pods.Items {
		if !p.DeletionTimestamp.IsZero() {
			continue
		}
		created++
		if len(p.Spec.SchedulingGates) == 0 {
			ungated++
		}
		if p.Annotations[grovev1alpha1.AnnotationStartupGate] == grovev1alpha1.StartupGateWaiting {
			held++
		}
		if p.Status.Phase == corev1.PodRunning {
			running++
		}
	}
	return
}

// showHonoured waits until the PodCliqueSet's SchedulingConstraintsHonored is True for its
// generation and prints it; while it is not, the error names what the condition says.
func showHonoured(ctx context.Context, c *cluster.Cluster, ns, name string) error {
	last := "no SchedulingConstraintsHonored condition yet"
	for {
		pcs := &grovev1alpha1.PodCliqueSet{}
		if err := c.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pcs); err == nil {
			if cond := meta.FindStatusCondition(pcs.Status.Conditions, grovev1alpha1.ConditionSchedulingConstraintsHonored); cond != nil {
				last = fmt.Sprintf("SchedulingConstraintsHonored=%s (%s): %s", cond.Status, cond.Reason, cond.Message)
				if cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == pcs.Generation {
					fmt.Printf("PodCliqueSet %s/%s: %s\n", ns, name, last)
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s", ctx.Err(), last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// showPhase prints a PodCliqueSet's phase changes until it reaches want.
func showPhase(ctx context.Context, c *cluster.Cluster, ns, name string, want grovev1alpha1.PodCliqueSetPhase) error {
	begin := time.Now()
	last := grovev1alpha1.PodCliqueSetPhase("?")
	for {
		pcs := &grovev1alpha1.PodCliqueSet{}
		if err := c.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pcs); err == nil && pcs.Status.Phase != last {
			last = pcs.Status.Phase
			fmt.Printf("[%5.1fs] PodCliqueSet %s/%s (Training): phase %q, restarts %d\n", time.Since(begin).Seconds(), ns, name, last, pcs.Status.RestartCount)
			if last == want {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitAvailable waits until the PodCliqueSet's status, for its generation, counts every replica
// available.
func waitAvailable(ctx context.Context, c *cluster.Cluster, ns, name string) error {
	pcs := &grovev1alpha1.PodCliqueSet{}
	for {
		if err := c.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pcs); err == nil &&
			pcs.Status.ObservedGeneration != nil && *pcs.Status.ObservedGeneration == pcs.Generation && pcs.Status.AvailableReplicas == pcs.Spec.Replicas {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("PodCliqueSet %s/%s: %d of %d replicas available: %w", ns, name, pcs.Status.AvailableReplicas, pcs.Spec.Replicas, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// showTrainJob prints a TrainJob's conditions as they change until the want condition is True.
func showTrainJob(ctx context.Context, c *cluster.Cluster, ns, name, want string) error {
	begin := time.Now()
	last := ""
	for {
		tj := &trainerv1alpha1.TrainJob{}
		if err := c.Client().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, tj); err == nil {
			var state []string
			for _, cond := range tj.Status.Conditions {
				if cond.Status == metav1.ConditionTrue {
					state = append(state, cond.Type+"("+cond.Reason+")")
				}
			}
			if now := strings.Join(state, ","); now != last {
				last = now
				fmt.Printf("[%5.1fs] TrainJob %s/%s: %s, nodes %d\n", time.Since(begin).Seconds(), ns, name, now, tj.Status.NumNodes)
			}
			if meta.IsStatusConditionTrue(tj.Status.Conditions, want) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
