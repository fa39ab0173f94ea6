package coherent

import (
	"context"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// TestARollingRecreatePodCliqueSetSwitchedToCoherentKeepsEveryPod deploys the disaggregated
// workload under RollingRecreate (one base gang and scaled gangs), switches it to Coherent at rest
// and checks that its gangs are adopted — a PodGangMap per replica, PodGangs named by epoch, every
// pod in one of them — without a single pod replaced (by UID), and that a template change then
// rolls coherently with every budget kept.
func TestARollingRecreatePodCliqueSetSwitchedToCoherentKeepsEveryPod(t *testing.T) {
	ns := cluster.Current.NewNamespace(t)
	withPool(t, ns, 1)
	pcs := disaggregated(ns, "adopt", 1)
	pcs.Spec.UpdateStrategy = nil // RollingRecreate, the default
	pcs = deploy(t, pcs, 3*time.Minute)
	before := uidsOf(podsOf(t, ns, pcs.Name))
	require.Contains(t, podsOf(t, ns, pcs.Name)[0].Labels[grovev1alpha1.LabelPodGang], "adopt-0", "the pods start in RollingRecreate's gangs")

	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got := &grovev1alpha1.PodCliqueSet{}
		if !assert.NoError(c, k8s().Get(context.Background(), client.ObjectKeyFromObject(pcs), got)) {
			return
		}
		got.Spec.UpdateStrategy = &grovev1alpha1.PodCliqueSetUpdateStrategy{Type: grovev1alpha1.CoherentStrategy}
		assert.NoError(c, k8s().Update(context.Background(), got), "switching to Coherent at rest is admitted")
	}, 30*time.Second, 250*time.Millisecond)

	epochGang := regexp.MustCompile(`^adopt-0-[0-9]+(-[a-z]+-[0-9]+)?$`)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		pgm := &grovev1alpha1.PodGangMap{}
		assert.NoError(c, k8s().Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "adopt-0"}, pgm), "the replica's PodGangMap")
		for _, p := range podsOf(t, ns, pcs.Name) {
			assert.Regexp(c, epochGang, p.Labels[grovev1alpha1.LabelPodGang], "pod %s joined a gang named by epoch", p.Name)
		}
	}, 2*time.Minute, 250*time.Millisecond, "the gangs are adopted")
	assert.Equal(t, before, uidsOf(podsOf(t, ns, pcs.Name)), "no pod was replaced")
	assertGangLayout(t, get(t, ns, pcs.Name))

	u := startUpdate(t, get(t, ns, pcs.Name), true, "pworker", "dworker")
	u.finish(t, 6*time.Minute)
}
