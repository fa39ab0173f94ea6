package trainjobadmission

import (
	"encoding/json"
	"testing"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// FuzzValidate feeds arbitrary TrainJobs and runtimes through validation: nothing panics.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(`{"spec":{"runtimeRef":{"name":"rt","kind":"TrainingRuntime"},"trainer":{"numNodes":0}}}`))
	f.Add([]byte(`{"spec":{"ttlSecondsAfterFinished":1,"template":{"spec":{"ttlSecondsAfterFinished":3,"replicatedJobs":[{"name":"n","template":{"spec":{"activeDeadlineSeconds":5}}}]}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tj := &trainerv1alpha1.TrainJob{}
		if json.Unmarshal(data, tj) == nil {
			_ = ValidateTrainJob(tj)
		}
		rt := &trainerv1alpha1.TrainingRuntime{}
		if json.Unmarshal(data, rt) == nil {
			_, _ = ValidateRuntimeSpec(&rt.Spec)
		}
	})
}
