// Package v1 holds the Go types of the image.toolkit.fluxcd.io/v1 API group:
// ImageRepository and ImagePolicy (reconciled by image-reflector-controller)
// and ImageUpdateAutomation (reconciled by image-automation-controller), with
// the group, kinds, JSON fields, defaults and validation of Flux v2.10, so
// existing manifests and the flux CLI work against Eddy unchanged. One field
// is Eddy's own and says so: ImageUpdateAutomation's
// spec.git.push.pullRequest. The types carry no logic beyond accessors.
//
// +kubebuilder:object:generate=true
// +groupName=image.toolkit.fluxcd.io
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is image.toolkit.fluxcd.io/v1.
	GroupVersion = schema.GroupVersion{Group: "image.toolkit.fluxcd.io", Version: "v1"}

	// SchemeBuilder registers this group's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this group's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&ImageRepository{}, &ImageRepositoryList{},
		&ImagePolicy{}, &ImagePolicyList{},
		&ImageUpdateAutomation{}, &ImageUpdateAutomationList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
