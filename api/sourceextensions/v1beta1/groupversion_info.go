// Package v1beta1 holds the Go types of the source.extensions.fluxcd.io/v1beta1
// API group: ArtifactGenerator, reconciled by source-watcher, with the group,
// kind, JSON fields and validation of Flux's source-watcher (Flux 2.7 and
// later), so existing manifests and the flux CLI work against Eddy unchanged.
// The types carry no logic beyond accessors.
//
// +kubebuilder:object:generate=true
// +groupName=source.extensions.fluxcd.io
package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is source.extensions.fluxcd.io/v1beta1.
	GroupVersion = schema.GroupVersion{Group: "source.extensions.fluxcd.io", Version: "v1beta1"}

	// SchemeBuilder registers this group's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this group's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &ArtifactGenerator{}, &ArtifactGeneratorList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
