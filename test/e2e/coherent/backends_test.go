package coherent

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// TestACoherentUpdateUnderCoschedulingPlacesEachStepsGangThroughItsPodGroup runs the disaggregated
// update with scheduler-plugins' coscheduling scheduler placing the gangs: the budgets and the
// prefill:decode proportion hold at every pod event, every gang the update makes is released
// whole, and each of the replica's gangs at the end has a coscheduling PodGroup of its name with
// its minimum, which its pods name (the backend received the new gangs, not only the old ones).
func TestACoherentUpdateUnderCoschedulingPlacesEachStepsGangThroughItsPodGroup(t *testing.T) {
	ns := cluster.Current.NewNamespace(t)
	withPool(t, ns, 1)
	pcs := disaggregated(ns, "cosched", 1)
	for _, c := range pcs.Spec.Template.Cliques {
		c.Spec.PodSpec.SchedulerName = coscheduler
	}
	pcs = deploy(t, pcs, 4*time.Minute)

	u := startUpdate(t, pcs, true, "pleader", "pworker", "dleader", "dworker")
	u.finish(t, 8*time.Minute)
	assert.Equal(t, 2, u.gangs.anchorsMade()["0"], "the replica is updated in two steps, each one anchor gang\ngangs made:\n%s", lazy(u.gangs.describe))

	ctx := context.Background()
	gangs := &schedulerv1alpha1.PodGangList{}
	require.NoError(t, k8s().List(ctx, gangs, client.InNamespace(ns)))
	require.NotEmpty(t, gangs.Items, "the replica's PodGangs")
	for _, pg := range gangs.Items {
		group := &schedv1alpha1.PodGroup{}
		if !assert.NoError(t, k8s().Get(ctx, client.ObjectKeyFromObject(&pg), group), "PodGang %s has a coscheduling PodGroup of its name", pg.Name) {
			continue
		}
		assert.Equal(t, pg.Spec.MinMember(), group.Spec.MinMember, "PodGroup %s asks for its gang's minimum", pg.Name)
	}
	for _, p := range podsOf(t, ns, "cosched") {
		gang := p.Labels[grovev1alpha1.LabelPodGang]
		assert.NotEmpty(t, gang, "pod %s is in a gang", p.Name)
		assert.Equal(t, gang, p.Labels[schedv1alpha1.PodGroupLabel], "pod %s names its gang's PodGroup", p.Name)
		assert.Equal(t, coscheduler, p.Spec.SchedulerName, "pod %s", p.Name)
	}
}
