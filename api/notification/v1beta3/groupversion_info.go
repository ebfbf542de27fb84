// Package v1beta3 holds the Go types of the notification.toolkit.fluxcd.io/v1beta3
// API group: Provider and Alert, with the same group, kinds and JSON fields as
// Flux's notification-controller. Served but deprecated since Flux v2.10
// (v1 is the storage version; the CRDs convert with strategy None, so the
// two versions share storage). The types carry no logic.
//
// +kubebuilder:object:generate=true
// +groupName=notification.toolkit.fluxcd.io
package v1beta3

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is notification.toolkit.fluxcd.io/v1beta3.
	GroupVersion = schema.GroupVersion{Group: "notification.toolkit.fluxcd.io", Version: "v1beta3"}

	// SchemeBuilder registers this group's kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds this group's kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Provider{}, &ProviderList{}, &Alert{}, &AlertList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
