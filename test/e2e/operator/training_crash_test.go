package operatore2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/cluster"
)

// stopOperator kills the shared operator; the returned func starts a new one.
func stopOperator(t *testing.T) func() {
	t.Helper()
	operator.Kill()
	return func() {
		var err error
		operator, err = startBinary(cluster.Current, "grove-operator", fmt.Sprintf("grove-operator-%d", time.Now().UnixNano()))
		require.NoError(t, err)
	}
}

// crashAfterRestartDecision leaves the state a crash would: restartCount 1 written with the
// replica's PodCliques recorded as restart 1's — and, with deleteOne, one of them already deleted.
func crashAfterRestartDecision(t *testing.T, ns, pcs string, deleteOne bool) map[string]types.UID {
	t.Helper()
	ctx := context.Background()
	list := &grovev1alpha1.PodCliqueList{}
	require.NoError(t, k8s().List(ctx, list, client.InNamespace(ns), client.MatchingLabels{grovev1alpha1.LabelPartOf: pcs}))
	before := map[string]types.UID{}
	restart := grovev1alpha1.ReplicaRestart{ReplicaIndex: 0, Restart: 1}
	for i := range list.Items {
		before[list.Items[i].Name] = list.Items[i].UID
		restart.PodCliqueUIDs = append(restart.PodCliqueUIDs, list.Items[i].UID)
	}
	got := &grovev1alpha1.PodCliqueSet{}
	require.NoError(t, k8s().Get(ctx, client.ObjectKey{Namespace: ns, Name: pcs}, got))
	got.Status.RestartCount = 1
	got.Status.RestartsInProgress = []grovev1alpha1.ReplicaRestart{restart}
	require.NoError(t, k8s().Status().Update(ctx, got))
	if deleteOne {
		require.NoError(t, k8s().Delete(ctx, &list.Items[0]))
	}
	return before
}

// TestTrainingRestartsSurviveOperatorCrashes is not parallel: it stops the shared operator to
// leave, each time, the exact state a crash at that moment leaves.
func TestTrainingRestartsSurviveOperatorCrashes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		deleteOne bool
	}{
		{"a: after the restart count was written, before any deletion", false},
		{"b: in the middle of the deletions", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := cluster.Current.NewNamespace(t)
			pcs := trainingPCS(ns, "crash", 1, "", &grovev1alpha1.TrainingSpec{MaxRestarts: ptr.To[int32](2)})
			pcs.Spec.Template.Cliques = append(pcs.Spec.Template.Cliques, clique("launcher", 1))
			startGang(t, pcs, 3) // every PodClique recorded wasAvailable before the crash
			startAgain := stopOperator(t)
			cluster.Current.FailPod(t, ns, "crash-0-trainer-1")
			before := crashAfterRestartDecision(t, ns, "crash", tc.deleteOne)
			startAgain()

			require.Eventually(t, func() bool {
				changed, _ := replaced(before, cliqueUIDs(t, ns, "crash"))
				return len(changed) == len(before)
			}, time.Minute, 100*time.Millisecond, "the replica is restarted")
			waitRunning(t, ns, "crash", 3, 2*time.Minute)
			// The record goes once the restarted operator has seen the replica's new PodCliques
			// whole: a second restart of the same failure would be counted by then.
			got := &grovev1alpha1.PodCliqueSet{}
			require.Eventually(t, func() bool {
				return k8s().Get(ctx, client.ObjectKeyFromObject(pcs), got) == nil && len(got.Status.RestartsInProgress) == 0 &&
					got.Status.Phase == grovev1alpha1.PodCliqueSetPhaseRunning
			}, 30*time.Second, 200*time.Millisecond, "the restart's record goes once its PodCliques are gone")
			assert.Equal(t, int32(1), got.Status.RestartCount, "the restart is counted exactly once")
		})
	}

	t.Run("c: after the pods succeeded, before the phase was written", func(t *testing.T) {
		ns := cluster.Current.NewNamespace(t)
		pcs := trainingPCS(ns, "done", 1, "3s", nil)
		require.NoError(t, k8s().Create(ctx, pcs))
		waitRunning(t, ns, "done", 2, 2*time.Minute)
		startAgain := stopOperator(t)
		require.Eventually(t, func() bool {
			for _, p := range listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "done"}) {
				if p.Status.Phase != "Succeeded" {
					return false
				}
			}
			return true
		}, time.Minute, 100*time.Millisecond, "pods finish while the operator is down")
		startAgain()
		got := waitPhase(t, pcs, grovev1alpha1.PodCliqueSetPhaseSucceeded, time.Minute)
		assert.Zero(t, got.Status.RestartCount)
		assert.Len(t, listPods(t, ns, map[string]string{grovev1alpha1.LabelPartOf: "done"}), 2, "succeeded pods are not recreated after an operator restart")
	})
}
