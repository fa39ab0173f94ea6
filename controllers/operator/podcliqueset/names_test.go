package podcliqueset

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// The case a new user ran into: PodCliqueSet a has a scaling group g of 3 replicas, and
// PodCliqueSet a-0-g, created second, wants PodClique a-0-g-0-x and PodGangs a-0-g-0 and a-0-g-1,
// which a's children already hold.
func TestNamesHeldByAnotherOwnerAreReportedAndNeverTakenOver(t *testing.T) {
	a := builders.PodCliqueSet("ns", "a").Clique("x", 1).ScalingGroup("g", 3, 1, "x").Obj()
	aGroup := builders.PodCliqueScalingGroup("ns", "a-0-g", "x").Replicas(3, 1).OfReplica("a", "0").Obj()
	held := builders.PodClique("ns", "a-0-g-0-x").OfReplica("a", "0").OfGroupReplica("a-0-g", "0").ControlledBy(aGroup, "PodCliqueScalingGroup").Obj()
	heldGang := builders.PodGang("ns", "a-0-g-1").Obj()
	heldGang.Labels[grovev1alpha1.LabelPartOf] = "a"
	heldGang.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(a, grovev1alpha1.GroupVersion.WithKind("PodCliqueSet"))}
	second := builders.PodCliqueSet("ns", "a-0-g").Replicas(2).Clique("x", 1).Obj()

	f := newFixture(t, a, aGroup, held, heldGang, second)
	c, ctx, req := f.c, context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(second)}
	f.reconcile(t, "a-0-g") // creates what is free
	res := f.reconcile(t, "a-0-g")
	assert.Equal(t, collisionRecheck, res.RequeueAfter, "it looks again: the holder may go")

	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, c.Get(ctx, req.NamespacedName, got))
	cond := meta.FindStatusCondition(got.Status.Conditions, grovev1alpha1.ConditionNameCollision)
	require.NotNil(t, cond)
	assert.Equal(t, metav1.ConditionTrue, cond.Status)
	assert.Equal(t, grovev1alpha1.ReasonNameHeldByAnotherOwner, cond.Reason)
	assert.Contains(t, cond.Message, "PodClique ns/a-0-g-0-x is controlled by PodCliqueScalingGroup a-0-g of PodCliqueSet a")
	assert.Contains(t, cond.Message, "PodGang ns/a-0-g-1 is controlled by PodCliqueSet a")

	stillHeld := &grovev1alpha1.PodClique{}
	require.NoError(t, c.Get(ctx, client.ObjectKeyFromObject(held), stillHeld))
	assert.True(t, metav1.IsControlledBy(stillHeld, aGroup), "nothing is adopted")
	assert.Equal(t, held.Labels, stillHeld.Labels, "nor relabelled")
	free := &grovev1alpha1.PodClique{}
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "ns", Name: "a-0-g-1-x"}, free), "a free name is created")
	assert.True(t, metav1.IsControlledBy(free, second))

	warnings := f.warnings()
	if assert.Len(t, warnings, 1) {
		assert.Contains(t, warnings[0], "NameCollision")
	}
}
