package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HelmRepositoryKind is the kind name of HelmRepository.
const HelmRepositoryKind = "HelmRepository"

// HelmRepository types (spec.type). Flux compatible: unset means default.
const (
	// HelmRepositoryTypeDefault is an HTTP(S) chart repository serving index.yaml.
	HelmRepositoryTypeDefault = "default"
	// HelmRepositoryTypeOCI is an OCI registry; such objects are static:
	// HelmCharts resolve charts from the registry themselves.
	HelmRepositoryTypeOCI = "oci"
)

// HelmRepositorySpec is where a Helm chart repository lives and how to reach
// it. Flux compatible: field names, defaults and validation of
// source-controller's api/v1 HelmRepositorySpec.
type HelmRepositorySpec struct {
	// URL of the repository: http:// or https:// for an index.yaml
	// repository, oci:// for a registry (with type oci).
	// +kubebuilder:validation:Pattern="^(http|https|oci)://.*$"
	// +required
	URL string `json:"url"`

	// SecretRef names a Secret in the same namespace with `username` and
	// `password` for HTTP basic authentication (or registry login for oci).
	// The legacy `certFile`/`keyFile`/`caFile` keys are deprecated in favour
	// of CertSecretRef.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret in the same namespace with TLS data:
	// `ca.crt` to trust a CA, `tls.crt` and `tls.key` for a client
	// certificate.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// PassCredentials sends the SecretRef credentials to chart download URLs
	// on another host than URL's. Off by default so credentials stay on the
	// repository's own host.
	// +optional
	PassCredentials bool `json:"passCredentials,omitempty"`

	// Interval between fetches of the index, e.g. 10m; 1m when unset.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Interval metav1.Duration `json:"interval,omitempty"`

	// Insecure allows plain HTTP to an OCI registry (type oci only).
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Timeout bounds the index fetch (or an OCI operation); 1m when unset.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Suspend stops reconciliation of this object until set back to false.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// AccessFrom lists namespaces allowed to use this repository. Flux
	// declares it and does not implement it; Eddy neither.
	// +optional
	AccessFrom *AccessFrom `json:"accessFrom,omitempty"`

	// Type of repository: default (an HTTP index) or oci.
	// +kubebuilder:validation:Enum=default;oci
	// +optional
	Type string `json:"type,omitempty"`

	// Provider of OCI registry credentials when spec.secretRef is not set:
	// generic (the default: none), or aws, azure or gcp: a registry token
	// from that cloud's token service for the controller's own identity.
	// Used with type oci only, as Flux.
	// +kubebuilder:validation:Enum=generic;aws;azure;gcp
	// +kubebuilder:default:=generic
	// +optional
	Provider string `json:"provider,omitempty"`
}

// AccessFrom selects the namespaces allowed to reference an object.
type AccessFrom struct {
	// NamespaceSelectors: a namespace matching any selector is allowed.
	// +required
	NamespaceSelectors []NamespaceSelector `json:"namespaceSelectors"`
}

// NamespaceSelector selects namespaces by label.
type NamespaceSelector struct {
	// MatchLabels are the labels a namespace must carry, all of them.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}

// HelmRepositoryStatus is what source-controller observed and produced.
type HelmRepositoryStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, ArtifactInStorage,
	// ArtifactOutdated, FetchFailed, StorageOperationFailed.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// URL is the address of the latest index artifact, stable across
	// revisions (`…/index.yaml`).
	// +optional
	URL string `json:"url,omitempty"`

	// Artifact is the last index stored for this object.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// HelmRepository is a Helm chart repository whose index source-controller
// fetches at spec.interval and stores as an artifact.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=helmrepo,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
type HelmRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HelmRepositorySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status HelmRepositoryStatus `json:"status,omitempty"`
}

// HelmRepositoryList is a list of HelmRepository.
//
// +kubebuilder:object:root=true
type HelmRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmRepository `json:"items"`
}

// GetConditions returns the status conditions of the HelmRepository.
func (in *HelmRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions of the HelmRepository.
func (in *HelmRepository) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// GetObservedGeneration returns status.observedGeneration.
func (in *HelmRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *HelmRepository) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (in *HelmRepository) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *HelmRepository) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended returns spec.suspend.
func (in *HelmRepository) IsSuspended() bool { return in.Spec.Suspend }

// GetArtifact returns status.artifact, nil before the first one is stored.
func (in *HelmRepository) GetArtifact() *meta.Artifact { return in.Status.Artifact }
