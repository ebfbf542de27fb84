// Package v1alpha1 holds the Go types of Argo CD's argoproj.io/v1alpha1 API
// group, Application and AppProject: the same group, kinds and JSON fields
// as Argo CD's (pkg/apis/application/v1alpha1 at v3.5), so an Argo CD
// user's YAML and kubectl habits work against Eddy's application-controller
// unchanged. Fields Eddy does not act on are still declared (typed, or kept
// whole where Argo CD's schema is open-ended), so the API server stores
// them as written. The types carry no logic beyond accessors.
//
// +kubebuilder:object:generate=true
// +groupName=argoproj.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is argoproj.io/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: "argoproj.io", Version: "v1alpha1"}

	// SchemeBuilder registers this group's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this group's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Application{}, &ApplicationList{}, &AppProject{}, &AppProjectList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
