package main

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
)

// kueueConfig turns the Kueue integration on in the operator and the backend-controller.
const kueueConfig = `kueue:
  enabled: true
`

// benchQueue is the ClusterQueue (and each namespace's LocalQueue) of s6: quota for far more
// than the scenario asks, so Kueue's admission is measured, not waiting for quota.
const benchQueue = "bench"

// KueueVsPlain is s6: the same PodCliqueSets applied without Kueue and through it.
type KueueVsPlain struct {
	Sets         int     `json:"podCliqueSets"`
	PodsPerSet   int     `json:"podsPerSet"`
	PlainRunning float64 `json:"plainRunningSeconds"`
	KueueRunning float64 `json:"kueueRunningSeconds"`
	Ratio        float64 `json:"ratio"`
}

// s6 applies S6Sets PodCliqueSets of S6Pods pods without Kueue (against a plain client's
// baseline of the same pods), then the same labelled with a LocalQueue after restarting the
// operator and the backend-controller with the integration on; the second is measured against
// the first, so its ratios are Kueue's cost.
func (b *bench) s6(ctx context.Context) error {
	sets, per := b.sz.S6Sets, b.sz.S6Pods
	pods := sets * per
	objs := func(queue string) func(ns string) []client.Object {
		return func(ns string) []client.Object {
			out := make([]client.Object, 0, sets)
			for i := range sets {
				p := pcs(ns, fmt.Sprintf("queued-%d", i), clique("worker", int32(per)))
				if queue != "" {
					p.Labels = map[string]string{grovev1alpha1.LabelKueueQueueName: queue}
				}
				out = append(out, p)
			}
			return out
		}
	}
	var plain Scenario
	err := b.withBaseline(ctx, "baseline-s6", baselineShape{Pods: pods, PerService: per}, func(ctx context.Context, base phases) error {
		_, err := b.scenario(ctx, "s6", fmt.Sprintf("%d PCS × %d pods without Kueue", sets, per), pods, base, objs(""))
		plain = b.r.Scenarios[len(b.r.Scenarios)-1]
		return err
	})
	if err != nil {
		return err
	}

	// Kueue starts only now: the scenarios before are measured without its controller on the
	// machine (it watches every pod and node).
	kueueProc, err := b.c.StartKueue(ctx)
	if err != nil {
		return err
	}
	if err := b.schedulerMode(kueueConfig, "-kueue"); err != nil {
		return err
	}
	if err := b.clusterQueue(ctx); err != nil {
		return err
	}
	// A freshly started Kueue first goes through every pod and node the earlier scenarios left
	// (thousands): S6 measures what Kueue costs a workload, not its start.
	settled, err := settle(ctx, kueueProc.Pid(), 2*time.Minute)
	if err != nil {
		return err
	}
	fmt.Printf("s6: Kueue idle %.1fs after it started\n", settled.Seconds())
	ns, err := b.namespace(ctx, "s6-kueue")
	if err != nil {
		return err
	}
	lq := &kueuev1beta2.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: benchQueue},
		Spec: kueuev1beta2.LocalQueueSpec{ClusterQueue: benchQueue}}
	if err := b.k8s().Create(ctx, lq); err != nil {
		return err
	}
	base := phases{}
	base.Created, base.Ungated, base.Running = secondsToDuration(plain.Phases.Created), secondsToDuration(plain.Phases.Ungated), secondsToDuration(plain.Phases.Running)
	if err := b.scenarioIn(ctx, ns, "s6-kueue", fmt.Sprintf("%d PCS × %d pods through Kueue (one Workload per gang)", sets, per), pods, base, objs(benchQueue)); err != nil {
		return err
	}
	queued := b.r.Scenarios[len(b.r.Scenarios)-1]
	b.r.KueueVsPlain = &KueueVsPlain{Sets: sets, PodsPerSet: per, PlainRunning: plain.Phases.Running, KueueRunning: queued.Phases.Running, Ratio: queued.RunningRatio}
	b.r.target("s6 all Running through Kueue ≤ 1.5× without", queued.RunningRatio, 1.5)
	return b.schedulerMode("", "-plain")
}

// clusterQueue makes s6's ResourceFlavor and ClusterQueue, open to every namespace.
func (b *bench) clusterQueue(ctx context.Context) error {
	flavor := &kueuev1beta2.ResourceFlavor{ObjectMeta: metav1.ObjectMeta{Name: benchQueue}}
	cq := &kueuev1beta2.ClusterQueue{
		ObjectMeta: metav1.ObjectMeta{Name: benchQueue},
		Spec: kueuev1beta2.ClusterQueueSpec{
			NamespaceSelector: &metav1.LabelSelector{},
			ResourceGroups: []kueuev1beta2.ResourceGroup{{
				CoveredResources: []corev1.ResourceName{corev1.ResourceCPU},
				Flavors: []kueuev1beta2.FlavorQuotas{{Name: benchQueue, Resources: []kueuev1beta2.ResourceQuota{
					{Name: corev1.ResourceCPU, NominalQuota: resource.MustParse("10000")},
				}}},
			}},
		},
	}
	for _, obj := range []client.Object{flavor, cq} {
		if err := b.k8s().Create(ctx, obj); err != nil {
			return err
		}
	}
	return nil
}

// settle waits until the process is idle — under 5% of a core over each of two consecutive
// seconds — or timeout passed, and says how long it waited.
func settle(ctx context.Context, pid int, timeout time.Duration) (time.Duration, error) {
	begin := time.Now()
	last, err := procUsage(pid)
	if err != nil {
		return 0, err
	}
	quiet := 0
	for quiet < 2 && time.Since(begin) < timeout {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
		now, err := procUsage(pid)
		if err != nil {
			return 0, err
		}
		if now.CPUSeconds-last.CPUSeconds < 0.05 {
			quiet++
		} else {
			quiet = 0
		}
		last = now
	}
	return time.Since(begin), nil
}
