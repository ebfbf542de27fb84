package v1

import (
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImageRepositoryKind is the kind name of ImageRepository.
const ImageRepositoryKind = "ImageRepository"

// DefaultExclusionList is the tag exclusion list of an ImageRepository
// that sets none: cosign signature tags (`sha256-<hex>.sig`). Flux
// compatible (the CRD default and the code default).
var DefaultExclusionList = []string{"^.*\\.sig$"}

// Registry providers of an ImageRepository (spec.provider).
const (
	GenericProvider = "generic"
	AWSProvider     = "aws"
	AzureProvider   = "azure"
	GCPProvider     = "gcp"
)

// ImageRepositorySpec is a container image repository whose tags are
// scanned at an interval. Flux compatible: field names, defaults and
// validation of image-reflector-controller's api/v1.
type ImageRepositorySpec struct {
	// Image is the repository to scan, without scheme and without tag,
	// e.g. `ghcr.io/org/app` or `nginx` (Docker Hub).
	// +required
	Image string `json:"image,omitempty"`

	// Interval between two scans, e.g. `5m`.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required
	Interval metav1.Duration `json:"interval,omitempty"`

	// Timeout of one scan, authentication included; default the interval,
	// never below one second.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// SecretRef names a Secret of type kubernetes.io/dockerconfigjson in
	// the same namespace with the registry credentials.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// ProxySecretRef names a Secret in the same namespace with keys
	// `address` and optionally `username` and `password`: the HTTP/S proxy
	// to reach the registry through (it wins over the proxy environment).
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// ServiceAccountName is a ServiceAccount in the same namespace: its
	// imagePullSecrets are used with provider generic. With a cloud
	// provider it would select the identity (object-level workload
	// identity), which Eddy does not implement: Stalled.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// CertSecretRef names a Secret in the same namespace (Opaque or
	// kubernetes.io/tls) with TLS material for the registry: `ca.crt` (a
	// PEM CA bundle) and/or `tls.crt` with `tls.key` (a PEM client
	// certificate and key, for mutual TLS). The keys `caFile`, `certFile`
	// and `keyFile` are read too (deprecated by Flux).
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// Suspend stops scanning; the last scan result stays.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// AccessFrom lists the namespaces whose ImagePolicies may reference
	// this repository; default only its own.
	// +optional
	AccessFrom *sourcev1.AccessFrom `json:"accessFrom,omitempty"`

	// ExclusionList holds Go regular expressions: a tag matching any of
	// them is dropped from the scan result. Default DefaultExclusionList;
	// at most 25 entries.
	// +kubebuilder:default:={"^.*\\.sig$"}
	// +kubebuilder:validation:MaxItems:=25
	// +optional
	ExclusionList []string `json:"exclusionList,omitempty"`

	// Provider selects how to authenticate: generic (spec.secretRef and
	// the ServiceAccount's pull secrets; the default), or aws, azure or
	// gcp: a registry token from that cloud's token service for the
	// controller's own identity, in place of the pull secrets, as Flux.
	// +kubebuilder:validation:Enum=generic;aws;azure;gcp
	// +kubebuilder:default:=generic
	// +optional
	Provider string `json:"provider,omitempty"`

	// Insecure talks plain HTTP to the registry.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// ScanResult is the outcome of the last successful scan.
type ScanResult struct {
	// Revision is the checksum of the stored tag list, `sha256:<hex>`; it
	// changes exactly when the list changes.
	// +optional
	Revision string `json:"revision"`

	// TagCount is the number of tags kept after the exclusion list.
	// +required
	TagCount int `json:"tagCount"`

	// ScanTime is when the scan ran.
	// +optional
	ScanTime metav1.Time `json:"scanTime"`

	// LatestTags are at most ten of the tags, in descending string order
	// (not semver order).
	// +optional
	LatestTags []string `json:"latestTags,omitempty"`
}

// ImageRepositoryStatus is what image-reflector-controller observed.
type ImageRepositoryStatus struct {
	// Conditions: Ready, Reconciling, Stalled.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// CanonicalImageName is spec.image with the registry and path
	// defaults filled in, e.g. `index.docker.io/library/nginx`.
	// +optional
	CanonicalImageName string `json:"canonicalImageName,omitempty"`

	// LastScanResult is the result of the last successful scan.
	// +optional
	LastScanResult *ScanResult `json:"lastScanResult,omitempty"`

	// ObservedExclusionList is the exclusion list the last scan used; a
	// change of spec.exclusionList forces a new scan.
	ObservedExclusionList []string `json:"observedExclusionList,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// ImageRepository scans a container image repository's tags.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
// +kubebuilder:resource:shortName=imgrepo;imagerepo,categories=all;fluxcd;fluxcd-images
// +kubebuilder:printcolumn:name="Image",type="string",JSONPath=".spec.image"
// +kubebuilder:printcolumn:name="Tags",type=string,JSONPath=`.status.lastScanResult.tagCount`
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:printcolumn:name="Last scan",type=string,JSONPath=`.status.lastScanResult.scanTime`,priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
type ImageRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ImageRepositorySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status ImageRepositoryStatus `json:"status,omitempty"`
}

// ImageRepositoryList is a list of ImageRepositories.
//
// +kubebuilder:object:root=true
type ImageRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageRepository `json:"items"`
}

// GetTimeout is the timeout of one scan: spec.timeout, else
// spec.interval, never below one second.
func (in *ImageRepository) GetTimeout() time.Duration {
	d := in.Spec.Interval.Duration
	if in.Spec.Timeout != nil {
		d = in.Spec.Timeout.Duration
	}
	return max(d, time.Second)
}

// GetExclusionList is spec.exclusionList, else DefaultExclusionList.
func (in *ImageRepository) GetExclusionList() []string {
	if len(in.Spec.ExclusionList) > 0 {
		return in.Spec.ExclusionList
	}
	return DefaultExclusionList
}

// GetProvider is spec.provider, else GenericProvider.
func (in *ImageRepository) GetProvider() string {
	if in.Spec.Provider != "" {
		return in.Spec.Provider
	}
	return GenericProvider
}

// GetRequeueAfter is spec.interval: the time between two scans.
func (in *ImageRepository) GetRequeueAfter() time.Duration { return in.Spec.Interval.Duration }

// GetConditions returns the status conditions of the ImageRepository.
func (in *ImageRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions of the ImageRepository.
func (in *ImageRepository) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// GetObservedGeneration returns status.observedGeneration: the generation
// of the spec last reconciled.
func (in *ImageRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *ImageRepository) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt: the
// last reconcile.fluxcd.io/requestedAt value a reconcile handled.
func (in *ImageRepository) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *ImageRepository) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended returns spec.suspend.
func (in *ImageRepository) IsSuspended() bool { return in.Spec.Suspend }
