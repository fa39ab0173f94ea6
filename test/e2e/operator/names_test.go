package operatore2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
	"github.com/kubegrove/grove/test/cluster"
)

// The collision a new user met: a (scaling group g of 3 replicas) runs, then a-0-g (2 replicas)
// wants PodClique a-0-g-0-x and PodGangs a-0-g-0 and a-0-g-1, which a's children hold. (Here no
// webhook refuses a-0-g first, as grove-webhook does.) a-0-g reports both objects, takes nothing
// over, and a keeps running untouched.
func TestPodCliqueSetWhoseNamesAnotherHoldsReportsThemAndTakesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := cluster.Current.NewNamespace(t)
	a := builders.PodCliqueSet(ns, "a").Clique("x", 1).ScalingGroup("g", 3, 1, "x").Obj()
	a.UID = ""
	require.NoError(t, k8s().Create(ctx, a))
	waitRunning(t, ns, "a", 3, 2*time.Minute)
	before := cliqueUIDs(t, ns, "a")

	second := builders.PodCliqueSet(ns, "a-0-g").Replicas(2).Clique("x", 1).Obj()
	second.UID = ""
	require.NoError(t, k8s().Create(ctx, second))
	var cond *metav1.Condition
	require.Eventually(t, func() bool {
		got := &grovev1alpha1.PodCliqueSet{}
		if k8s().Get(ctx, client.ObjectKeyFromObject(second), got) != nil {
			return false
		}
		cond = meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionNameCollision)
		return cond != nil && cond.Status == metav1.ConditionTrue
	}, time.Minute, 200*time.Millisecond, "a-0-g reports NameCollision")
	assert.Contains(t, cond.Message, "PodClique "+ns+"/a-0-g-0-x is controlled by PodCliqueScalingGroup a-0-g of PodCliqueSet a")
	assert.Contains(t, cond.Message, "PodGang "+ns+"/a-0-g-0 is controlled by PodCliqueSet a")
	assertEvent(t, ns, "a-0-g", grovev1alpha1.ConditionNameCollision)

	held := &grovev1alpha1.PodClique{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: "a-0-g-0-x"}, held))
	assert.Equal(t, "a", held.Labels[grovev1alpha1.LabelPartOf], "nothing is adopted")
	// The condition is written after the pass that found the collision acted: a's cliques are
	// as that pass left them.
	assert.Equal(t, before, cliqueUIDs(t, ns, "a"), "a's PodCliques are untouched")
	waitRunning(t, ns, "a", 3, time.Minute)
}
