package plan

import (
	"encoding/json"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/util/strategicpatch"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	trainerv1alpha1 "github.com/kubegrove/grove/apis/trainer/v1alpha1"
)

// applyRuntimePatches merges each runtime patch's template spec into the JobSet spec, in list
// order, with Kubernetes strategic merge semantics (replicated jobs, containers, env, volumes,
// scheduling gates and image pull secrets merge by name; volume mounts by path; maps merge;
// tolerations replace). The replicated jobs keep the runtime's order. A patch may only name
// replicated jobs the runtime has.
func applyRuntimePatches(tj *trainerv1alpha1.TrainJob, rt *Runtime, spec *jobsetv1alpha2.JobSetSpec) error {
	position := make(map[string]int, len(spec.ReplicatedJobs))
	for i, rj := range spec.ReplicatedJobs {
		position[rj.Name] = i
	}
	for i, patch := range tj.Spec.RuntimePatches {
		if patch.TrainingRuntimeSpec == nil || patch.TrainingRuntimeSpec.Template == nil || patch.TrainingRuntimeSpec.Template.Spec == nil {
			continue
		}
		jobs := patch.TrainingRuntimeSpec.Template.Spec
		for j, rj := range jobs.ReplicatedJobs {
			if _, ok := position[rj.Name]; !ok {
				return fmt.Errorf("spec.runtimePatches[%d].trainingRuntimeSpec.template.spec.replicatedJobs[%d].name: %s %q has no replicated job %q",
					i, j, rt.Kind, rt.Name, rj.Name)
			}
		}
		merged, err := strategicMerge(spec, jobs)
		if err != nil {
			return fmt.Errorf("spec.runtimePatches[%d] (manager %s): %w", i, patch.Manager, err)
		}
		*spec = merged
	}
	sort.SliceStable(spec.ReplicatedJobs, func(a, b int) bool {
		return position[spec.ReplicatedJobs[a].Name] < position[spec.ReplicatedJobs[b].Name]
	})
	return nil
}

func strategicMerge(spec *jobsetv1alpha2.JobSetSpec, patch *trainerv1alpha1.JobSetSpecPatch) (jobsetv1alpha2.JobSetSpec, error) {
	var out jobsetv1alpha2.JobSetSpec
	original, err := json.Marshal(spec)
	if err != nil {
		return out, err
	}
	delta, err := json.Marshal(patch)
	if err != nil {
		return out, err
	}
	merged, err := strategicpatch.StrategicMergePatch(original, delta, jobsetv1alpha2.JobSetSpec{})
	if err != nil {
		return out, err
	}
	err = json.Unmarshal(merged, &out)
	return out, err
}
