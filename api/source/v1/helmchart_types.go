package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// HelmChartKind is the kind name of HelmChart.
const HelmChartKind = "HelmChart"

// Reconcile strategies of HelmChart.spec.reconcileStrategy. Flux compatible.
const (
	// ReconcileStrategyChartVersion rebuilds the chart when its version changes.
	ReconcileStrategyChartVersion = "ChartVersion"
	// ReconcileStrategyRevision rebuilds the chart on every new source
	// revision (GitRepository or Bucket sources), giving the version the build
	// metadata `+<first 12 hex of the source revision>`.
	ReconcileStrategyRevision = "Revision"
)

// Reasons of a HelmChart's Ready condition on success. Flux compatible.
const (
	// ChartPullSucceededReason: the chart was pulled from a HelmRepository.
	ChartPullSucceededReason = "ChartPullSucceeded"
	// ChartPackageSucceededReason: the chart was packaged from a directory
	// of a GitRepository or Bucket artifact.
	ChartPackageSucceededReason = "ChartPackageSucceeded"
)

// HelmChartSpec is which chart to pull or package, from which source, and
// how often. Flux compatible: field names, defaults and validation of
// source-controller's api/v1 HelmChartSpec.
//
// +kubebuilder:validation:XValidation:rule="!has(self.verify) || self.sourceRef.kind == 'HelmRepository'",message="spec.verify is only supported when spec.sourceRef.kind is 'HelmRepository'"
type HelmChartSpec struct {
	// Chart is the chart's name in a HelmRepository, or the path of its
	// directory in a GitRepository or Bucket artifact.
	// +required
	Chart string `json:"chart"`

	// Version is a semver constraint on the chart version (HelmRepository
	// sources only); `*` picks the latest stable version.
	// +kubebuilder:default:=*
	// +optional
	Version string `json:"version,omitempty"`

	// SourceRef names the source of the chart, in the same namespace.
	// +required
	SourceRef LocalHelmChartSourceReference `json:"sourceRef"`

	// Interval between checks of the source for a new chart, e.g. 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required
	Interval metav1.Duration `json:"interval"`

	// ReconcileStrategy decides when a new artifact is built: ChartVersion
	// (the default) or Revision.
	// +kubebuilder:validation:Enum=ChartVersion;Revision
	// +kubebuilder:default:=ChartVersion
	// +optional
	ReconcileStrategy string `json:"reconcileStrategy,omitempty"`

	// ValuesFiles are paths of values files in the chart (or the source
	// artifact), merged in order into the packaged chart's values.yaml.
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// IgnoreMissingValuesFiles skips ValuesFiles that do not exist instead of
	// failing.
	// +optional
	IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles,omitempty"`

	// Suspend stops reconciliation of this object until set back to false.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Verify asks for the signature of an OCI chart to be verified
	// (cosign public keys or notation).
	// +optional
	Verify *HelmChartVerification `json:"verify,omitempty"`
}

// LocalHelmChartSourceReference names the source of a HelmChart in the
// HelmChart's namespace.
type LocalHelmChartSourceReference struct {
	// APIVersion of the source.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the source: HelmRepository, GitRepository or Bucket.
	// +kubebuilder:validation:Enum=HelmRepository;GitRepository;Bucket
	// +required
	Kind string `json:"kind"`

	// Name of the source.
	// +required
	Name string `json:"name"`
}

// HelmChartVerification names how to verify an OCI chart's signature.
type HelmChartVerification struct {
	// Provider of the signature: cosign (the default) or notation.
	// +kubebuilder:validation:Enum=cosign;notation
	// +kubebuilder:default:=cosign
	Provider string `json:"provider"`

	// SecretRef names a Secret with the trusted public keys.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// MatchOIDCIdentity lists the OIDC identities a keyless signature may
	// carry; any match is enough.
	// +optional
	MatchOIDCIdentity []OIDCIdentityMatch `json:"matchOIDCIdentity,omitempty"`
}

// OIDCIdentityMatch is an issuer and subject pair, each a regular expression.
type OIDCIdentityMatch struct {
	// Issuer is a regular expression the OIDC issuer must match.
	// +required
	Issuer string `json:"issuer"`

	// Subject is a regular expression the certificate identity must match.
	// +required
	Subject string `json:"subject"`
}

// HelmChartStatus is what source-controller observed and produced.
type HelmChartStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ObservedSourceArtifactRevision is the source artifact revision the
	// current chart artifact was built from.
	// +optional
	ObservedSourceArtifactRevision string `json:"observedSourceArtifactRevision,omitempty"`

	// ObservedChartName is the chart name of the current artifact.
	// +optional
	ObservedChartName string `json:"observedChartName,omitempty"`

	// ObservedValuesFiles are the values files merged into the current
	// artifact.
	// +optional
	ObservedValuesFiles []string `json:"observedValuesFiles,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, ArtifactInStorage,
	// ArtifactOutdated, FetchFailed, BuildFailed, StorageOperationFailed.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// URL is the address of the latest chart artifact, stable across
	// versions (`…/latest.tar.gz`).
	// +optional
	URL string `json:"url,omitempty"`

	// Artifact is the last chart stored for this object.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// HelmChart is a Helm chart that source-controller pulls from a
// HelmRepository or packages from a GitRepository, and stores as a
// `<chart>-<version>.tgz` artifact.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=hc,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Chart",type=string,JSONPath=`.spec.chart`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.spec.version`
// +kubebuilder:printcolumn:name="Source Kind",type=string,JSONPath=`.spec.sourceRef.kind`
// +kubebuilder:printcolumn:name="Source Name",type=string,JSONPath=`.spec.sourceRef.name`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
type HelmChart struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HelmChartSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status HelmChartStatus `json:"status,omitempty"`
}

// HelmChartList is a list of HelmChart.
//
// +kubebuilder:object:root=true
type HelmChartList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmChart `json:"items"`
}

// GetConditions returns the status conditions of the HelmChart.
func (in *HelmChart) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions of the HelmChart.
func (in *HelmChart) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// GetObservedGeneration returns status.observedGeneration.
func (in *HelmChart) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *HelmChart) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (in *HelmChart) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *HelmChart) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended returns spec.suspend.
func (in *HelmChart) IsSuspended() bool { return in.Spec.Suspend }

// GetArtifact returns status.artifact, nil before the first one is stored.
func (in *HelmChart) GetArtifact() *meta.Artifact { return in.Status.Artifact }
