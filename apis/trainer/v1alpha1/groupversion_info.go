// Package v1alpha1 holds the trainer.kubeflow.org/v1alpha1 API: TrainJob, TrainingRuntime and
// ClusterTrainingRuntime, wire-compatible with Kubeflow Trainer v2.3 (its manifests apply
// unchanged), plus KEP-2899's runtime ttlSecondsAfterFinished and this project's workloadKind,
// which lets a runtime turn its TrainJobs into PodCliqueSets instead of JobSets.
// +kubebuilder:object:generate=true
// +groupName=trainer.kubeflow.org
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of this package.
	GroupVersion = schema.GroupVersion{Group: "trainer.kubeflow.org", Version: "v1alpha1"}

	// SchemeBuilder registers this package's kinds with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
