package podcliqueset

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

var cliqueSucceeded = metav1.Condition{Type: grovev1alpha1.ConditionSucceeded, Status: metav1.ConditionTrue, Reason: "AllPodsSucceeded"}

func TestSuccessPolicyDecidesWhenATrainingWorkloadSucceeded(t *testing.T) {
	// 2 replicas of launcher + node, and a scaling group "workers" (2 replicas) of clique "w".
	base := func() *builders.PodCliqueSetBuilder {
		return builders.PodCliqueSet("ns", "mpi").Replicas(2).Training(0).
			Clique("launcher", 1).Clique("node", 2).Clique("w", 1).ScalingGroup("workers", 2, 2, "w")
	}
	every := []string{"mpi-0-launcher", "mpi-1-launcher", "mpi-0-node", "mpi-1-node",
		"mpi-0-workers-0-w", "mpi-0-workers-1-w", "mpi-1-workers-0-w", "mpi-1-workers-1-w"}
	cases := []struct {
		name      string
		pcs       *grovev1alpha1.PodCliqueSet
		succeeded []string
		want      bool
	}{
		{"no policy: not until every PodClique succeeded", base().Obj(), every[:7], false},
		{"no policy: every PodClique succeeded", base().Obj(), every, true},
		{"All of launcher: both replicas' launchers", base().SucceedsWhen(grovev1alpha1.TrainingSuccessAll, "launcher").Obj(), every[:2], true},
		{"All of launcher: one replica's launcher is not enough", base().SucceedsWhen(grovev1alpha1.TrainingSuccessAll, "launcher").Obj(), every[:1], false},
		{"operator left empty means All", base().SucceedsWhen("", "launcher").Obj(), every[:1], false},
		{"Any of launcher: one launcher", base().SucceedsWhen(grovev1alpha1.TrainingSuccessAny, "launcher").Obj(), every[1:2], true},
		{"Any of launcher: a node does not count", base().SucceedsWhen(grovev1alpha1.TrainingSuccessAny, "launcher").Obj(), every[2:4], false},
		{"All of a scaling-group clique: every group replica of every replica", base().SucceedsWhen(grovev1alpha1.TrainingSuccessAll, "w").Obj(), every[4:], true},
		{"All of a scaling-group clique: one group replica missing", base().SucceedsWhen(grovev1alpha1.TrainingSuccessAll, "w").Obj(), every[4:7], false},
		{"All with no targets is every clique", base().SucceedsWhen(grovev1alpha1.TrainingSuccessAll).Obj(), every[:7], false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obs := emptyObserved()
			for _, name := range every {
				obs.cliques[name] = builders.PodClique("ns", name).Obj()
			}
			for _, name := range tc.succeeded {
				obs.cliques[name] = builders.PodClique("ns", name).Condition(cliqueSucceeded).Obj()
			}
			assert.Equal(t, tc.want, succeededByPolicy(tc.pcs, obs))
		})
	}
}

func TestASucceededWorkloadDeletesOnlyThePodCliquesStillRunning(t *testing.T) {
	pcs := builders.PodCliqueSet("ns", "mpi").Training(0).Clique("launcher", 1).Clique("node", 2).
		SucceedsWhen(grovev1alpha1.TrainingSuccessAll, "launcher").Obj()
	pcs.Status.Phase = grovev1alpha1.PodCliqueSetPhaseSucceeded
	launcher := builders.PodClique("ns", "mpi-0-launcher").OfReplica("mpi", "0").ControlledBy(pcs, "PodCliqueSet").Condition(cliqueSucceeded).Obj()
	node := builders.PodClique("ns", "mpi-0-node").OfReplica("mpi", "0").ControlledBy(pcs, "PodCliqueSet").Ready(2).Obj()
	f := newFixture(t, pcs, launcher, node)

	f.reconcile(t, "mpi")

	ctx := context.Background()
	assert.True(t, apierrors.IsNotFound(f.c.Get(ctx, client.ObjectKeyFromObject(node), node)), "the MPI nodes still running go, as JobSet deletes its active Jobs")
	require.NoError(t, f.c.Get(ctx, client.ObjectKeyFromObject(launcher), launcher), "the launcher that succeeded is kept")
	assert.Contains(t, f.logged("training workload succeeded by its success policy"), "mpi-0-node")
	assert.Zero(t, f.statusWrites, "the phase was recorded before; settling writes no status")
}

func TestSuccessMessageNamesThePolicy(t *testing.T) {
	assert.Equal(t, "every pod of every replica exited 0", successMessage(builders.PodCliqueSet("ns", "a").Training(0).Obj()))
	assert.Equal(t, "every PodClique of cliques launcher succeeded (successPolicy All); the PodCliques still running are deleted",
		successMessage(builders.PodCliqueSet("ns", "a").Training(0).SucceedsWhen("", "launcher").Obj()))
	assert.Equal(t, "a PodClique of every clique succeeded (successPolicy Any); the PodCliques still running are deleted",
		successMessage(builders.PodCliqueSet("ns", "a").Training(0).SucceedsWhen(grovev1alpha1.TrainingSuccessAny).Obj()))
}
