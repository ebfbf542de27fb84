package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BucketKind is the kind name of Bucket.
const BucketKind = "Bucket"

// Providers of Bucket.spec.provider. Flux compatible.
const (
	// BucketProviderGeneric: any S3-compatible object storage (the default).
	BucketProviderGeneric = "generic"
	// BucketProviderAmazon: AWS S3, with the environment's AWS credentials
	// when spec.secretRef is not set.
	BucketProviderAmazon = "aws"
	// BucketProviderGoogle: Google Cloud Storage.
	BucketProviderGoogle = "gcp"
	// BucketProviderAzure: Azure Blob Storage.
	BucketProviderAzure = "azure"
)

// Providers of Bucket.spec.sts.provider. Flux compatible.
const (
	// STSProviderAmazon: AWS STS (for the aws bucket provider).
	STSProviderAmazon = "aws"
	// STSProviderLDAP: MinIO's AssumeRoleWithLDAPIdentity (for the generic
	// bucket provider).
	STSProviderLDAP = "ldap"
)

// Condition reasons of Bucket. Flux compatible (source-controller api/v1
// bucket_types.go and condition_types.go).
const (
	// BucketOperationSucceededReason: Flux's reason for a successful
	// listing and fetch; Eddy reports success with meta.SucceededReason
	// (as Flux does) and does not set it.
	BucketOperationSucceededReason = "BucketOperationSucceeded"
	// BucketOperationFailedReason: the bucket could not be confirmed,
	// listed or its objects fetched (FetchFailed=True, Ready=False).
	BucketOperationFailedReason = "BucketOperationFailed"
	// InvalidSTSConfigurationReason: spec.sts does not fit spec.provider
	// (FetchFailed=True, Ready=False, Stalled).
	InvalidSTSConfigurationReason = "InvalidSTSConfiguration"
)

// BucketSpec is which object storage bucket to read and how often. Flux
// compatible: field names, enums, defaults and validation rules of
// source-controller's api/v1 BucketSpec (Flux v2.10).
//
// +kubebuilder:validation:XValidation:rule="self.provider == 'aws' || self.provider == 'generic' || !has(self.sts)", message="STS configuration is only supported for the 'aws' and 'generic' Bucket providers"
// +kubebuilder:validation:XValidation:rule="self.provider != 'aws' || !has(self.sts) || self.sts.provider == 'aws'", message="'aws' is the only supported STS provider for the 'aws' Bucket provider"
// +kubebuilder:validation:XValidation:rule="self.provider != 'generic' || !has(self.sts) || self.sts.provider == 'ldap'", message="'ldap' is the only supported STS provider for the 'generic' Bucket provider"
// +kubebuilder:validation:XValidation:rule="!has(self.sts) || self.sts.provider != 'aws' || !has(self.sts.secretRef)", message="spec.sts.secretRef is not required for the 'aws' STS provider"
// +kubebuilder:validation:XValidation:rule="!has(self.sts) || self.sts.provider != 'aws' || !has(self.sts.certSecretRef)", message="spec.sts.certSecretRef is not required for the 'aws' STS provider"
// +kubebuilder:validation:XValidation:rule="self.provider != 'generic' || !has(self.serviceAccountName)", message="ServiceAccountName is not supported for the 'generic' Bucket provider"
// +kubebuilder:validation:XValidation:rule="!has(self.secretRef) || !has(self.serviceAccountName)", message="cannot set both .spec.secretRef and .spec.serviceAccountName"
type BucketSpec struct {
	// Provider of the object storage: generic (S3-compatible, the
	// default), aws (S3), gcp (Google Cloud Storage) or azure (Azure Blob
	// Storage).
	// +kubebuilder:validation:Enum=generic;aws;gcp;azure
	// +kubebuilder:default:=generic
	// +optional
	Provider string `json:"provider,omitempty"`

	// BucketName is the name of the bucket.
	// +required
	BucketName string `json:"bucketName"`

	// Endpoint is the object storage address of the bucket: host[:port]
	// for generic and aws; the account URL
	// (https://<account>.blob.core.windows.net) for azure; for gcp, not
	// read (storage.googleapis.com, or the controller's
	// STORAGE_EMULATOR_HOST).
	// +required
	Endpoint string `json:"endpoint"`

	// STS is the Security Token Service that issues temporary credentials
	// (aws and generic providers only): for aws, the endpoint (one of
	// AWS's) where the controller's AWS identity gets its credentials; for
	// generic, MinIO's LDAP STS.
	// +optional
	STS *BucketSTSSpec `json:"sts,omitempty"`

	// Insecure allows plain HTTP to the endpoint.
	// +optional
	Insecure bool `json:"insecure,omitempty"`

	// Region of the endpoint.
	// +optional
	Region string `json:"region,omitempty"`

	// Prefix filters the objects listed, on the server side.
	// +optional
	Prefix string `json:"prefix,omitempty"`

	// SecretRef names a Secret with the credentials: `accesskey` and
	// `secretkey` for generic and aws; `serviceaccount` (a JSON service
	// account key) for gcp; for azure, `accountKey` (Shared Key), `sasKey`
	// (a SAS token), or `tenantId`, `clientId` and `clientSecret` (a
	// service principal; `authorityHost` optional). Without it, gcp uses
	// the controller's identity (the metadata server), aws the
	// controller's AWS credentials, azure anonymous access. Eddy: azure's
	// client certificate and managed identity keys are refused.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// ServiceAccountName is the ServiceAccount of workload identity (gcp
	// and aws). Eddy: refused (Stalled) until implemented.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// CertSecretRef names a Secret (Opaque or kubernetes.io/tls) with a
	// PEM client certificate and key (`tls.crt`, `tls.key`) and/or a PEM CA
	// certificate (`ca.crt`) for the endpoint (generic provider).
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// ProxySecretRef names a Secret with the proxy to use: `address`, and
	// optional `username` and `password`.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// Interval between checks of the bucket for changes, e.g. 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required
	Interval metav1.Duration `json:"interval"`

	// Timeout of the fetch operations; 60s by default.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Ignore adds exclusions, in .sourceignore (gitignore) format, to
	// those of the bucket's own .sourceignore object.
	// +optional
	Ignore *string `json:"ignore,omitempty"`

	// Suspend stops reconciles of this source; the last artifact stays served.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// BucketSTSSpec is the Security Token Service of a Bucket. Flux compatible.
type BucketSTSSpec struct {
	// Provider of the Security Token Service: aws or ldap.
	// +kubebuilder:validation:Enum=aws;ldap
	// +required
	Provider string `json:"provider"`

	// Endpoint is the HTTP/S address of the Security Token Service.
	// +required
	// +kubebuilder:validation:Pattern="^(http|https)://.*$"
	Endpoint string `json:"endpoint"`

	// SecretRef names a Secret with `username` and `password` (ldap only).
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// CertSecretRef names a Secret with `tls.crt`, `tls.key` and/or
	// `ca.crt` for the STS endpoint (ldap only).
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`
}

// BucketStatus is what source-controller observed of a Bucket.
type BucketStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, FetchFailed,
	// ArtifactInStorage, ArtifactOutdated, StorageOperationFailed.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// URL of the latest artifact (the latest.tar.gz link).
	// +optional
	URL string `json:"url,omitempty"`

	// Artifact is the last artifact stored; revision `sha256:<hex>` of the
	// object index (key and etag of every object kept).
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// ObservedIgnore is the spec.ignore the artifact was built with.
	// +optional
	ObservedIgnore *string `json:"observedIgnore,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// Bucket is an object storage bucket that source-controller reads at
// spec.interval and stores as an artifact.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:categories=all;fluxcd;fluxcd-sources
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Endpoint",type=string,JSONPath=`.spec.endpoint`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
type Bucket struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec BucketSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status BucketStatus `json:"status,omitempty"`
}

// BucketList is a list of Bucket.
//
// +kubebuilder:object:root=true
type BucketList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Bucket `json:"items"`
}

// GetConditions returns the status conditions of the Bucket.
func (in *Bucket) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions of the Bucket.
func (in *Bucket) SetConditions(conditions []metav1.Condition) { in.Status.Conditions = conditions }

// GetObservedGeneration returns status.observedGeneration.
func (in *Bucket) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *Bucket) SetObservedGeneration(generation int64) { in.Status.ObservedGeneration = generation }

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (in *Bucket) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *Bucket) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended returns spec.suspend.
func (in *Bucket) IsSuspended() bool { return in.Spec.Suspend }

// GetArtifact returns status.artifact, nil before the first one is stored.
func (in *Bucket) GetArtifact() *meta.Artifact { return in.Status.Artifact }
