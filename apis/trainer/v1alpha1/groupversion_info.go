// Package v1alpha1 holds the trainer.kubeflow.org/v1alpha1 API: TrainJob, TrainingRuntime and
// ClusterTrainingRuntime, wire-compatible with Kubeflow Trainer v2.3 (its manifests apply
// unchanged), plus KEP-2899's runtime ttlSecondsAfterFinished and this project's workloadKind,
// which lets a runtime turn its TrainJobs into PodCliqueSets instead of JobSets.
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=trainer.kubeflow.org
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of this package.
	GroupVersion = schema.GroupVersion{Group: "trainer.kubeflow.org", Version: "v1alpha1"}
	// SchemeGroupVersion is GroupVersion under the name generated apply configurations use.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers this package's kinds with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes adds this package's kinds to a scheme under GroupVersion.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &TrainingRuntime{}, &TrainingRuntimeList{}, &ClusterTrainingRuntime{}, &ClusterTrainingRuntimeList{}, &TrainJob{}, &TrainJobList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
