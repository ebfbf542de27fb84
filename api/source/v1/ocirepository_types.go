package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OCIRepositoryKind is the kind name of OCIRepository.
const OCIRepositoryKind = "OCIRepository"

// OCIRepositoryPrefix is the scheme every OCIRepository URL starts with.
const OCIRepositoryPrefix = "oci://"

// Authentication providers of OCIRepository.spec.provider; unset means generic.
const (
	OCIProviderGeneric = "generic"
	OCIProviderAWS     = "aws"
	OCIProviderAzure   = "azure"
	OCIProviderGCP     = "gcp"
)

// Layer operations of OCIRepository.spec.layerSelector.operation; unset
// means extract. Flux compatible.
const (
	// OCILayerExtract unpacks the selected tar+gzip layer and stores it as a
	// tar.gz artifact of its files.
	OCILayerExtract = "extract"
	// OCILayerCopy stores the selected layer's compressed bytes as they are.
	OCILayerCopy = "copy"
)

// Condition reasons of OCIRepository. Flux compatible (source-controller
// api/v1 ocirepository_types.go).
const (
	// OCIPullFailedReason: the artifact could not be resolved or pulled.
	OCIPullFailedReason = "OCIArtifactPullFailed"
	// OCILayerOperationFailedReason: the selected layer could not be
	// extracted or copied.
	OCILayerOperationFailedReason = "OCIArtifactLayerOperationFailed"
)

// OCIRepositorySpec is which OCI artifact to pull from a container registry
// and how often. Flux compatible: field names, enums and patterns of
// source-controller v1.10's api/v1 OCIRepositorySpec. url and interval are
// required by CEL rules on the object rather than by the schema, as in
// v1.10, so that HelmRelease can inline this spec in its chart template.
type OCIRepositorySpec struct {
	// URL of the artifact repository, oci://<host>/<repository>.
	// +kubebuilder:validation:Pattern="^oci://.*$"
	// +optional
	URL string `json:"url,omitempty"`

	// Reference to pull and watch; latest tag when unset.
	// +optional
	Reference *OCIRepositoryRef `json:"ref,omitempty"`

	// LayerSelector picks the layer to store; the first layer when unset.
	// +optional
	LayerSelector *OCILayerSelector `json:"layerSelector,omitempty"`

	// Provider of the credentials: generic (the default), aws, azure or gcp.
	// Eddy: aws, azure and gcp are built, with the controller's own identity.
	// +kubebuilder:validation:Enum=generic;aws;azure;gcp
	// +optional
	Provider string `json:"provider,omitempty"`

	// SecretRef names a Secret in the same namespace of type
	// kubernetes.io/dockerconfigjson holding the registry credentials.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// Verify asks for the artifact's signature to be checked (cosign or
	// notation). Eddy: keyless cosign is refused (Stalled).
	// +optional
	Verify *OCIRepositoryVerification `json:"verify,omitempty"`

	// ServiceAccountName whose image pull secrets authenticate the pull.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// CertSecretRef names a Secret (Opaque or kubernetes.io/tls) with a
	// PEM client certificate and key (`tls.crt`, `tls.key`) and/or a PEM CA
	// certificate (`ca.crt`) for the registry connection.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// ProxySecretRef names a Secret with the proxy to use: `address`, and
	// optional `username` and `password`.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// Interval between checks of the registry for a new digest, e.g. 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Timeout of the registry operations of one reconcile; 60s when unset.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Ignore replaces the default exclusions, in .sourceignore (gitignore) format.
	// +optional
	Ignore *string `json:"ignore,omitempty"`

	// Insecure allows plain HTTP to the registry.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Suspend stops reconciles of this source; the last artifact stays served.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// OCIRepositoryRef is the OCI reference to pull. Precedence: digest, then
// semver, then tag (Flux compatible).
type OCIRepositoryRef struct {
	// Digest to pull, sha256:<hex>.
	// +optional
	Digest string `json:"digest,omitempty"`

	// SemVer range of tags; the highest matching tag is pulled.
	// +optional
	SemVer string `json:"semver,omitempty"`

	// SemverFilter is a Go regexp the tags must match before the SemVer range is applied.
	// +optional
	SemverFilter string `json:"semverFilter,omitempty"`

	// Tag to pull; latest when no field is set.
	// +optional
	Tag string `json:"tag,omitempty"`
}

// OCILayerSelector picks the layer of the artifact to store.
type OCILayerSelector struct {
	// MediaType of the layer; the first layer of this type is selected.
	// +optional
	MediaType string `json:"mediaType,omitempty"`

	// Operation on the selected layer: extract (the default) unpacks the
	// tar+gzip layer, copy stores its compressed bytes as they are.
	// +kubebuilder:validation:Enum=extract;copy
	// +optional
	Operation string `json:"operation,omitempty"`
}

// OCIRepositoryVerification asks for the artifact's signature to be checked.
// Flux compatible fields.
type OCIRepositoryVerification struct {
	// Provider of the signature: cosign (the default) or notation.
	// +kubebuilder:validation:Enum=cosign;notation
	// +kubebuilder:default:=cosign
	Provider string `json:"provider"`

	// SecretRef names a Secret with the trusted public keys.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// MatchOIDCIdentity lists the accepted keyless-signing identities.
	// +optional
	MatchOIDCIdentity []OIDCIdentityMatch `json:"matchOIDCIdentity,omitempty"`

	// TrustedRootSecretRef names a Secret with a Sigstore trusted_root.json.
	// +optional
	TrustedRootSecretRef *meta.LocalObjectReference `json:"trustedRootSecretRef,omitempty"`
}

// OCIRepositoryStatus is what source-controller observed of an OCIRepository.
type OCIRepositoryStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, FetchFailed,
	// ArtifactInStorage, ArtifactOutdated, StorageOperationFailed, SourceVerified.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// URL of the latest artifact (the latest.tar.gz link).
	// +optional
	URL string `json:"url,omitempty"`

	// Artifact is the last artifact stored; revision `<tag>@sha256:<hex>`
	// or `sha256:<hex>` for a digest reference.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// ObservedIgnore is the spec.ignore the artifact was built with.
	// +optional
	ObservedIgnore *string `json:"observedIgnore,omitempty"`

	// ObservedLayerSelector is the spec.layerSelector the artifact was built with.
	// +optional
	ObservedLayerSelector *OCILayerSelector `json:"observedLayerSelector,omitempty"`

	// SourceVerificationFingerprint identifies the keys the artifact was last
	// verified with (Flux v2.10); empty while verification is not implemented.
	// +optional
	SourceVerificationFingerprint string `json:"sourceVerificationFingerprint,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// OCIRepository is an OCI artifact in a container registry that
// source-controller pulls at spec.interval and stores as an artifact.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=ocirepo,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
// +kubebuilder:validation:XValidation:rule="has(self.spec) && has(self.spec.url)",message="spec.url is required"
// +kubebuilder:validation:XValidation:rule="has(self.spec) && has(self.spec.interval)",message="spec.interval is required"
type OCIRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec OCIRepositorySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status OCIRepositoryStatus `json:"status,omitempty"`
}

// OCIRepositoryList is a list of OCIRepository.
//
// +kubebuilder:object:root=true
type OCIRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OCIRepository `json:"items"`
}

// GetConditions returns the status conditions of the OCIRepository.
func (in *OCIRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions of the OCIRepository.
func (in *OCIRepository) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// GetObservedGeneration returns status.observedGeneration.
func (in *OCIRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *OCIRepository) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (in *OCIRepository) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *OCIRepository) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended returns spec.suspend.
func (in *OCIRepository) IsSuspended() bool { return in.Spec.Suspend }

// GetArtifact returns status.artifact, nil before the first one is stored.
func (in *OCIRepository) GetArtifact() *meta.Artifact { return in.Status.Artifact }
