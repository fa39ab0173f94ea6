// Package v1alpha1 holds the scheduler.grove.io/v1alpha1 API: the PodGang, the contract between
// the grove-operator (which writes its spec) and the backend-controllers (which translate it for
// one scheduler and report back in its status).
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +groupName=scheduler.grove.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of this package.
	GroupVersion = schema.GroupVersion{Group: "scheduler.grove.io", Version: "v1alpha1"}
	// SchemeGroupVersion is GroupVersion under the name generated apply configurations use.
	SchemeGroupVersion = GroupVersion

	// SchemeBuilder registers this package's kinds with a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this package's kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// addKnownTypes adds this package's kinds to a scheme under GroupVersion.
func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &PodGang{}, &PodGangList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
