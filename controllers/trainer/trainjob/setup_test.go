package trainjob

import (
	"testing"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
	"github.com/kubegrove/grove/internal/reconcile/eventbatch"
)

func TestOwnStatusChangesWakeTheReconcilerAndProgressReportsDoNot(t *testing.T) {
	base := &trainerv1alpha1.TrainJob{Status: trainerv1alpha1.TrainJobStatus{NumNodes: 2}}
	cases := []struct {
		name string
		edit func(*trainerv1alpha1.TrainJob)
		want bool
	}{
		{"nothing changed", func(*trainerv1alpha1.TrainJob) {}, false},
		{"a condition this controller writes", func(tj *trainerv1alpha1.TrainJob) {
			tj.Status.Conditions = []metav1.Condition{{Type: trainerv1alpha1.TrainJobComplete, Status: metav1.ConditionTrue}}
		}, true},
		{"the job counts", func(tj *trainerv1alpha1.TrainJob) {
			tj.Status.JobsStatus = []trainerv1alpha1.JobStatus{{Name: "node", Active: ptr.To[int32](1)}}
		}, true},
		{"a progress report from the status server", func(tj *trainerv1alpha1.TrainJob) {
			tj.Status.TrainerStatus = &trainerv1alpha1.TrainerStatus{ProgressPercentage: ptr.To[int32](40)}
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			updated := base.DeepCopy()
			tc.edit(updated)
			assert.Equal(t, tc.want, eventbatch.UpdatesWhere(ownStatusChanged).Update(event.UpdateEvent{ObjectOld: base, ObjectNew: updated}))
		})
	}
	assert.False(t, eventbatch.UpdatesWhere(ownStatusChanged).Create(event.CreateEvent{Object: base}), "creation is the main watch's")
}
