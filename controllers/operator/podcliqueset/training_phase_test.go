package podcliqueset

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	grovev1alpha1 "github.com/kubegrove/grove/apis/grove/v1alpha1"
	"github.com/kubegrove/grove/test/builders"
)

func TestTrainingPhaseSetsTheStartTimeOnceTheWorkloadRan(t *testing.T) {
	now := time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Minute))
	for _, tc := range []struct {
		name      string
		phase     grovev1alpha1.PodCliqueSetPhase
		start     *metav1.Time
		succeeded bool // the one PodClique reports Succeeded
		wantPhase grovev1alpha1.PodCliqueSetPhase
		wantStart *metav1.Time
	}{
		{name: "pending: no start", phase: grovev1alpha1.PodCliqueSetPhasePending, wantPhase: grovev1alpha1.PodCliqueSetPhasePending},
		{name: "first Running: started now", phase: grovev1alpha1.PodCliqueSetPhaseRunning,
			wantPhase: grovev1alpha1.PodCliqueSetPhaseRunning, wantStart: &metav1.Time{Time: now}},
		{name: "Running again: the first start is kept", phase: grovev1alpha1.PodCliqueSetPhaseRunning, start: &earlier,
			wantPhase: grovev1alpha1.PodCliqueSetPhaseRunning, wantStart: &earlier},
		{name: "ran and finished between two passes: Succeeded, started now", phase: grovev1alpha1.PodCliqueSetPhasePending, succeeded: true,
			wantPhase: grovev1alpha1.PodCliqueSetPhaseSucceeded, wantStart: &metav1.Time{Time: now}},
		{name: "Succeeded after Running: the start is kept", phase: grovev1alpha1.PodCliqueSetPhaseRunning, start: &earlier, succeeded: true,
			wantPhase: grovev1alpha1.PodCliqueSetPhaseSucceeded, wantStart: &earlier},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pcs := builders.PodCliqueSet("ns", "tg").Clique("solo", 2).Training(0).Obj()
			clique := builders.PodClique("ns", "tg-0-solo").OfReplica("tg", "0")
			if tc.succeeded {
				clique = clique.Succeeded()
			}
			obs := &observed{cliques: map[string]*grovev1alpha1.PodClique{"tg-0-solo": clique.Obj()}}
			st := &grovev1alpha1.PodCliqueSetStatus{Phase: tc.phase, StartTime: tc.start}

			trainingPhase(pcs, st, obs, now)

			assert.Equal(t, tc.wantPhase, st.Phase)
			assert.Equal(t, tc.wantStart, st.StartTime)
		})
	}
}
