// Package v2 holds the Go types of the helm.toolkit.fluxcd.io/v2 API group:
// the same group, kind and JSON fields as Flux's helm-controller, so existing
// HelmRelease manifests and the flux CLI work against Eddy unchanged. The
// types carry no logic; defaults that Flux computes in code (release name,
// timeouts, remediation) are computed by helm-controller.
//
// +kubebuilder:object:generate=true
// +groupName=helm.toolkit.fluxcd.io
package v2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is helm.toolkit.fluxcd.io/v2.
	GroupVersion = schema.GroupVersion{Group: "helm.toolkit.fluxcd.io", Version: "v2"}

	// SchemeBuilder registers this group's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this group's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &HelmRelease{}, &HelmReleaseList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
