package podcliqueset

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

// groupFixture is a Training PodCliqueSet "tg" (maxRestarts 1) of a standalone clique solo and a
// scaling group grp of lead and mem, one restart already spent. The group's own condition says
// breached, as it did before the restart; whether a member PodClique is breached now is the case.
func groupFixture(t *testing.T, memberBreached bool) (*fixture, *grovev1alpha1.PodCliqueSet, *grovev1alpha1.PodCliqueScalingGroup) {
	t.Helper()
	pcs := builders.PodCliqueSet("ns", "tg").Training(1).Clique("solo", 1).Clique("lead", 1).Clique("mem", 1).
		ScalingGroup("grp", 1, 1, "lead", "mem").Obj()
	pcs.Status.RestartCount = 1
	old := metav1.NewTime(time.Now().Add(-time.Minute))
	breached := metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionTrue, Reason: "InsufficientReadyPods", LastTransitionTime: old}
	notYet := metav1.Condition{Type: grovev1alpha1.ConditionMinAvailableBreached, Status: metav1.ConditionFalse, Reason: grovev1alpha1.ReasonNeverAvailable, LastTransitionTime: old}
	group := builders.PodCliqueScalingGroup("ns", "tg-0-grp", "lead", "mem").Replicas(1, 1).OfReplica("tg", "0").Obj()
	group.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(pcs, grovev1alpha1.GroupVersion.WithKind("PodCliqueSet"))}
	group.Status.Conditions = []metav1.Condition{breached}
	mem := notYet
	if memberBreached {
		mem = breached
	}
	objs := []client.Object{pcs, group,
		builders.PodClique("ns", "tg-0-solo").OfReplica("tg", "0").ControlledBy(pcs, "PodCliqueSet").Condition(notYet).Obj(),
		builders.PodClique("ns", "tg-0-grp-0-lead").OfReplica("tg", "0").OfGroupReplica("tg-0-grp", "0").ControlledBy(group, "PodCliqueScalingGroup").Condition(notYet).Obj(),
		builders.PodClique("ns", "tg-0-grp-0-mem").OfReplica("tg", "0").OfGroupReplica("tg-0-grp", "0").ControlledBy(group, "PodCliqueScalingGroup").Condition(mem).Obj(),
	}
	return newFixture(t, objs...), pcs, group
}

func TestAScalingGroupsBreachFromBeforeARestartIsNotASecondFailure(t *testing.T) {
	cases := []struct {
		name           string
		memberBreached bool
		wantFailed     bool
	}{
		{"the group's members were just recreated: its old condition is no failure", false, false},
		{"a member is breached now: the one restart is spent, the workload fails", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, pcs, _ := groupFixture(t, tc.memberBreached)
			f.reconcile(t, "tg")
			got := &grovev1alpha1.PodCliqueSet{}
			require.NoError(t, f.c.Get(context.Background(), client.ObjectKeyFromObject(pcs), got))
			assert.Equal(t, tc.wantFailed, meta.IsStatusConditionTrue(got.Status.Conditions, grovev1alpha1.ConditionFailed), "conditions %v", got.Status.Conditions)
			assert.Equal(t, int32(1), got.Status.RestartCount, "no restart counted")
		})
	}
}

func TestAFailedWorkloadDeletesItsScalingGroupsSoNothingIsRecreated(t *testing.T) {
	f, pcs, group := groupFixture(t, true)
	f.reconcile(t, "tg") // fails: a member is breached, the one restart spent
	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, f.c.Get(context.Background(), client.ObjectKeyFromObject(pcs), got))
	require.True(t, meta.IsStatusConditionTrue(got.Status.Conditions, grovev1alpha1.ConditionFailed), "the failure is recorded first")
	assert.NotEqual(t, grovev1alpha1.PodCliqueSetPhaseFailed, got.Status.Phase, "the phase waits until every pod is gone")
	err := f.c.Get(context.Background(), client.ObjectKeyFromObject(group), &grovev1alpha1.PodCliqueScalingGroup{})
	assert.True(t, apierrors.IsNotFound(err), "the scaling group is deleted: %v", err)
	list := &grovev1alpha1.PodCliqueList{}
	require.NoError(t, f.c.List(context.Background(), list))
	assert.Empty(t, list.Items, "every PodClique is deleted")

	f.reconcile(t, "tg") // nothing is left
	require.NoError(t, f.c.Get(context.Background(), client.ObjectKeyFromObject(pcs), got))
	assert.Equal(t, grovev1alpha1.PodCliqueSetPhaseFailed, got.Status.Phase)
	require.NoError(t, f.c.List(context.Background(), list))
	assert.Empty(t, list.Items, "nothing is recreated after Failed")
}
