// Package v1 holds the Go types of the source.toolkit.fluxcd.io/v1 API group:
// the same group, kinds and JSON fields as Flux's source-controller, so existing
// manifests and the flux CLI work against Eddy unchanged. The types carry no logic.
//
// +kubebuilder:object:generate=true
// +groupName=source.toolkit.fluxcd.io
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is source.toolkit.fluxcd.io/v1.
	GroupVersion = schema.GroupVersion{Group: "source.toolkit.fluxcd.io", Version: "v1"}

	// SchemeBuilder registers this group's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this group's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&GitRepository{}, &GitRepositoryList{},
		&HelmRepository{}, &HelmRepositoryList{},
		&HelmChart{}, &HelmChartList{},
		&OCIRepository{}, &OCIRepositoryList{},
		&Bucket{}, &BucketList{},
		&ExternalArtifact{}, &ExternalArtifactList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
