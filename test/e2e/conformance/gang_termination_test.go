package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// Test_GT6_ScaledPodGangPodDeletion: deleting a pod of a scaled PodGang (one carrying
// grove.io/base-podgang) recreates that pod and terminates nothing else. Adapted: upstream
// cordons the pod's node so the replacement waits; here it is recreated at once, which makes the
// "no termination" assertion the stricter one (the gang was whole again within the delay).
func Test_GT6_ScaledPodGangPodDeletion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	pcs := workload(ns, "workload2-gt", min1)
	pcs.Spec.Template.TerminationDelay = &metav1.Duration{Duration: 10 * time.Second}
	deploy(t, pcs)
	pcA := uids(t, ns, map[string]string{grovev1alpha1.LabelPodClique: "workload2-gt-0-pc-a"})
	require.Len(t, pcA, 2)

	var victim string
	for _, p := range pods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: pcs.Name}) {
		if p.Labels[grovev1alpha1.LabelBasePodGang] != "" && p.Labels[grovev1alpha1.LabelPodCliqueScalingGroup] != "" && ready(&p) {
			victim = p.Name
			require.NoError(t, k8s().Delete(ctx, &p))
			break
		}
	}
	require.NotEmpty(t, victim, "a pod of a scaled PodGang carries grove.io/base-podgang")

	assert.Never(t, func() bool {
		now := uids(t, ns, map[string]string{grovev1alpha1.LabelPodClique: "workload2-gt-0-pc-a"})
		return now["workload2-gt-0-pc-a-0"] != pcA["workload2-gt-0-pc-a-0"] || now["workload2-gt-0-pc-a-1"] != pcA["workload2-gt-0-pc-a-1"]
	}, 15*time.Second, 500*time.Millisecond, "pc-a keeps its pods: no PodCliqueSet-level termination")
	waitReady(t, ns, pcs.Name, 10, time.Minute)
}
