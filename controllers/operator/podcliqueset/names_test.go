package podcliqueset

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	configv1alpha1 "github.com/kubegrove/grove/apis/config/v1alpha1"
	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	schedulerv1alpha1 "github.com/kubegrove/grove/apis/scheduler/v1alpha1"
	"github.com/kubegrove/grove/backends"
	"github.com/kubegrove/grove/test/builders"
)

// The case a new user ran into: PodCliqueSet a has a scaling group g of 3 replicas, and
// PodCliqueSet a-0-g, created second, wants PodClique a-0-g-0-x and PodGangs a-0-g-0 and a-0-g-1,
// which a's children already hold.
func TestNamesHeldByAnotherOwnerAreReportedAndNeverTakenOver(t *testing.T) {
	scheme := runtime.NewScheme()
	require.NoError(t, clientgoscheme.AddToScheme(scheme))
	require.NoError(t, grovev1alpha1.AddToScheme(scheme))
	require.NoError(t, schedulerv1alpha1.AddToScheme(scheme))
	a := builders.PodCliqueSet("ns", "a").Clique("x", 1).ScalingGroup("g", 3, 1, "x").Obj()
	aGroup := builders.PodCliqueScalingGroup("ns", "a-0-g", "x").Replicas(3, 1).OfReplica("a", "0").Obj()
	held := builders.PodClique("ns", "a-0-g-0-x").OfReplica("a", "0").OfGroupReplica("a-0-g", "0").ControlledBy(aGroup, "PodCliqueScalingGroup").Obj()
	heldGang := builders.PodGang("ns", "a-0-g-1").Obj()
	heldGang.Labels[grovev1alpha1.LabelPartOf] = "a"
	heldGang.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(a, grovev1alpha1.GroupVersion.WithKind("PodCliqueSet"))}
	second := builders.PodCliqueSet("ns", "a-0-g").Replicas(2).Clique("x", 1).Obj()

	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(a, aGroup, held, heldGang, second).
		WithStatusSubresource(&grovev1alpha1.PodCliqueSet{}).Build()
	registry, err := backends.NewRegistry(configv1alpha1.SchedulerConfiguration{}, nil)
	require.NoError(t, err)
	rec := events.NewFakeRecorder(20)
	r := &Reconciler{Client: c, Recorder: rec, Backends: registry}
	ctx := context.Background()
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(second)}
	_, err = r.Reconcile(ctx, req) // creates what is free
	require.NoError(t, err)
	res, err := r.Reconcile(ctx, req) // writes the status
	require.NoError(t, err)
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

	var warnings []string
	for len(rec.Events) > 0 {
		if e := <-rec.Events; e[:len(corev1.EventTypeWarning)] == corev1.EventTypeWarning {
			warnings = append(warnings, e)
		}
	}
	if assert.Len(t, warnings, 1) {
		assert.Contains(t, warnings[0], "NameCollision")
	}
}
