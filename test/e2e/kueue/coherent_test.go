package kueuee2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueuev1beta2 "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
)

// A Coherent update of a queued PodCliqueSet: each step's new gang is a PodGang of its own, so
// Kueue admits it as a unit (one Workload with every pod group of the step), within the quota the
// pods it replaced gave back; the update ends with every gang admitted and every pod running the
// new template.
func TestACoherentUpdatesStepGangsAreEachAdmittedByKueueAsAUnit(t *testing.T) {
	ctx := context.Background()
	ns := queueWithGPUs(t, "coherent", 6)
	pcs := gpuPCS(ns, "svc", "coherent", 2, 1) // frontend: 2 pods of 1 GPU
	pcs.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: grovev1alpha1.CoherentStrategy}
	pcs.Spec.Template.Cliques[0].Spec.MinAvailable = ptr.To[int32](1)
	prefill := &grovev1alpha1.PodCliqueTemplateSpec{Name: "prefill", Spec: *pcs.Spec.Template.Cliques[0].Spec.DeepCopy()}
	prefill.Spec.Replicas, prefill.Spec.MinAvailable = 1, ptr.To[int32](1)
	prefill.Spec.PodSpec.Containers[0].Resources.Limits[gpu] = *resourceGPUs(2)
	prefill.Spec.PodSpec.Containers[0].Resources.Requests[gpu] = *resourceGPUs(2)
	pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, prefill)
	pcs.Spec.Template.PodCliqueScalingGroupConfigs = []grovev1alpha1.PodCliqueScalingGroupConfig{
		{Name: "pf", CliqueNames: []string{"prefill"}, Replicas: ptr.To[int32](2), MinAvailable: ptr.To[int32](1)},
	}
	require.NoError(t, k8s().Create(ctx, pcs)) // 2 + 2×2 = 6 GPUs: the whole quota
	waitRunning(t, ns, "svc", 4, 2*time.Minute)
	frontend := map[string]types.UID{}
	for _, p := range pods(t, ns, "svc") {
		if !strings.Contains(p.Name, "-pf-") {
			frontend[p.Name] = p.UID
		}
	}
	require.Len(t, frontend, 2, "the frontend's pods")
	before := map[string]bool{}
	gangs := &schedulerv1alpha1.PodGangList{}
	require.NoError(t, k8s().List(ctx, gangs, client.InNamespace(ns)))
	for _, pg := range gangs.Items {
		before[pg.Name] = true
	}

	require.NoError(t, retryUpdate(ctx, ns, "svc", func(p *grovev1alpha1.PodCliqueSet) {
		p.Spec.Template.Cliques[1].Spec.PodSpec.Containers[0].Env = []corev1.EnvVar{{Name: "REVISION", Value: "2"}}
	}))
	eventually(t, 4*time.Minute, func() (bool, string) {
		got := getPCS(t, ns, "svc")
		up := got.Status.UpdateProgress
		if up == nil || up.UpdateEndedAt == nil {
			return false, fmt.Sprintf("waiting for the update to end: %+v", up)
		}
		for _, p := range pods(t, ns, "svc") {
			if strings.Contains(p.Name, "-pf-") && (len(p.Spec.Containers[0].Env) == 0 || p.Status.Phase != corev1.PodRunning) {
				return false, "waiting for prefill pod " + p.Name + " on the new template and running"
			}
		}
		return true, ""
	})
	waitQueueAdmitted(t, ns, "svc", metav1.ConditionTrue, grovev1alpha1.ReasonAllGangsAdmitted, time.Minute)
	// The frontend did not change: its pods run on although their gang (the replica's first
	// anchor) gave its prefill replica to the update — its Workload shrank in place, keeping its
	// admission (replacing it would make Kueue stop every pod of it).
	after := map[string]types.UID{}
	for _, p := range pods(t, ns, "svc") {
		if !strings.Contains(p.Name, "-pf-") {
			after[p.Name] = p.UID
		}
	}
	assert.Equal(t, frontend, after, "the frontend keeps its pods")

	require.NoError(t, k8s().List(ctx, gangs, client.InNamespace(ns)))
	made := 0
	for _, pg := range gangs.Items {
		if before[pg.Name] {
			continue
		}
		made++
		assert.NotEmpty(t, pg.Labels[grovev1alpha1.LabelEpoch], "gang %s is named by epoch", pg.Name)
		wl := &kueuev1beta2.Workload{}
		if assert.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: pg.Name}, wl), "gang %s has a Workload of its own", pg.Name) {
			assert.Len(t, wl.Spec.PodSets, len(pg.Spec.PodGroups), "Workload %s holds every pod group of its gang: admitted as a unit", wl.Name)
			assert.NotNil(t, wl.Status.Admission, "Workload %s is admitted", wl.Name)
		}
		c := podGangAdmission(t, ns, pg.Name)
		if assert.NotNil(t, c, "gang %s: QueueAdmitted", pg.Name) {
			assert.Equal(t, metav1.ConditionTrue, c.Status, "gang %s: QueueAdmitted", pg.Name)
		}
	}
	assert.Equal(t, 2, made, "the update made one gang per step: two prefill replicas, one each (anchor steps of minAvailable 1)")
}

// retryUpdate applies edit to the PodCliqueSet, retrying on a conflict (client-go's backoff).
func retryUpdate(ctx context.Context, ns, name string, edit func(*grovev1alpha1.PodCliqueSet)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got := &grovev1alpha1.PodCliqueSet{}
		if err := k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got); err != nil {
			return err
		}
		edit(got)
		return k8s().Update(ctx, got)
	})
}
