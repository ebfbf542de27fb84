package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExternalArtifactKind is the kind name of ExternalArtifact.
const ExternalArtifactKind = "ExternalArtifact"

// ExternalArtifactSpec says which object a third-party controller generates
// the artifact for. Flux compatible (source-controller api/v1
// externalartifact_types.go).
type ExternalArtifactSpec struct {
	// SourceRef points to the Kubernetes custom resource for which the
	// artifact is generated.
	// +optional
	SourceRef *meta.NamespacedObjectKindReference `json:"sourceRef,omitempty"`
}

// ExternalArtifactStatus is written by the third-party controller that
// owns the object, never by Eddy.
type ExternalArtifactStatus struct {
	// Artifact represents the output of an ExternalArtifact reconciliation.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// Conditions holds the conditions for the ExternalArtifact.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// GetConditions returns status.conditions.
func (in *ExternalArtifact) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets status.conditions.
func (in *ExternalArtifact) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetArtifact returns status.artifact.
func (in *ExternalArtifact) GetArtifact() *meta.Artifact { return in.Status.Artifact }

// GetObservedGeneration is 0: Flux's ExternalArtifact status has no
// observedGeneration (its producer owns the status).
func (in *ExternalArtifact) GetObservedGeneration() int64 { return 0 }

// GetLastHandledReconcileRequest is "": an ExternalArtifact is not reconciled
// by Eddy, so no request is handled.
func (in *ExternalArtifact) GetLastHandledReconcileRequest() string { return "" }

// IsSuspended is false: the kind has no spec.suspend.
func (in *ExternalArtifact) IsSuspended() bool { return false }

// ExternalArtifact is an artifact that a controller other than
// source-controller stores and publishes in its status, for Kustomizations
// and HelmReleases to consume (behind the ExternalArtifact feature gate).
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=ea,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:printcolumn:name="Source",type="string",JSONPath=".spec.sourceRef.name",description=""
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
type ExternalArtifact struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ExternalArtifactSpec   `json:"spec,omitempty"`
	Status ExternalArtifactStatus `json:"status,omitempty"`
}

// ExternalArtifactList is a list of ExternalArtifacts.
//
// +kubebuilder:object:root=true
type ExternalArtifactList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ExternalArtifact `json:"items"`
}

var _ Source = &ExternalArtifact{}
