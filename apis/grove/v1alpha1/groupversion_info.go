// Package v1alpha1 holds the grove.io/v1alpha1 API: PodCliqueSet, PodClique and
// PodCliqueScalingGroup. JSON field names follow upstream Grove so its manifests apply unchanged.
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=grove.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of this package.
	GroupVersion = schema.GroupVersion{Group: "grove.io", Version: "v1alpha1"}
	// SchemeGroupVersion is GroupVersion under the name generated apply configurations use.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers this package's kinds with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
