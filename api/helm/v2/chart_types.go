package v2

import (
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// HelmChartTemplate is the chart source helm-controller generates for a
// HelmRelease: a HelmChart (kind HelmChart, the default) or an
// OCIRepository (kind OCIRepository), named `<hrNamespace>-<hrName>`.
// Flux compatible: helm-controller api v1.7's HelmChartTemplate, its kind
// field and CEL rules.
//
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'OCIRepository' || (has(self.spec.url) && size(self.spec.url) > 0)", message="chart.spec.url must be set when chart.kind is 'OCIRepository'"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.url) || (has(self.kind) && self.kind == 'OCIRepository')",message="chart.spec.url requires chart.kind: 'OCIRepository'; for a HelmChart template set spec.chart and spec.sourceRef instead"
// +kubebuilder:validation:XValidation:rule="(has(self.kind) && self.kind == 'OCIRepository') || (has(self.spec.chart) && has(self.spec.sourceRef))", message="chart.spec.chart and chart.spec.sourceRef must be set when chart.kind is not 'OCIRepository'"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'OCIRepository' || !has(self.spec.chart)", message="chart.spec.chart cannot be set when chart.kind is 'OCIRepository'"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'OCIRepository' || !has(self.spec.version) || self.spec.version == '*'", message="chart.spec.version cannot be set when chart.kind is 'OCIRepository'"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'OCIRepository' || !has(self.spec.sourceRef)", message="chart.spec.sourceRef cannot be set when chart.kind is 'OCIRepository'"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'OCIRepository' || !has(self.spec.reconcileStrategy) || self.spec.reconcileStrategy == 'ChartVersion'", message="chart.spec.reconcileStrategy cannot be set when chart.kind is 'OCIRepository'"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'OCIRepository' || !has(self.spec.valuesFiles)", message="chart.spec.valuesFiles cannot be set when chart.kind is 'OCIRepository'"
// +kubebuilder:validation:XValidation:rule="!has(self.kind) || self.kind != 'OCIRepository' || !has(self.spec.ignoreMissingValuesFiles)", message="chart.spec.ignoreMissingValuesFiles cannot be set when chart.kind is 'OCIRepository'"
type HelmChartTemplate struct {
	// Kind of the generated source: HelmChart (the default; spec.chart and
	// spec.sourceRef required) or OCIRepository (spec.url required; the
	// OCIRepository fields of spec apply and its interval defaults to the
	// HelmRelease's).
	// +kubebuilder:validation:Enum=HelmChart;OCIRepository
	// +optional
	Kind string `json:"kind,omitempty"`

	// ObjectMeta adds labels and annotations to the generated object.
	// +optional
	ObjectMeta *HelmChartTemplateObjectMeta `json:"metadata,omitempty"`

	// Spec of the generated object.
	// +required
	Spec HelmChartTemplateSpec `json:"spec"`
}

// HelmChartTemplateObjectMeta is the metadata of a HelmChartTemplate.
type HelmChartTemplateObjectMeta struct {
	// Labels of the generated object.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations of the generated object.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// HelmChartTemplateSpec is the spec of the generated object: the
// OCIRepository fields (kind OCIRepository; interval and verify also apply
// to a HelmChart) next to the HelmChart ones.
type HelmChartTemplateSpec struct {
	sourcev1.OCIRepositorySpec `json:",inline"`

	// Chart name in a HelmRepository, or a chart directory's path in a
	// GitRepository or Bucket artifact.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	Chart string `json:"chart,omitempty"`

	// Version is a semver constraint (HelmRepository sources); `*` (the
	// default) for the latest stable.
	// +optional
	Version string `json:"version,omitempty"`

	// SourceRef names the chart's source.
	// +optional
	SourceRef *CrossNamespaceObjectReference `json:"sourceRef,omitempty"`

	// ReconcileStrategy of the HelmChart: ChartVersion (the default) or
	// Revision.
	// +kubebuilder:validation:Enum=ChartVersion;Revision
	// +optional
	ReconcileStrategy string `json:"reconcileStrategy,omitempty"`

	// ValuesFiles merged, in order, into the chart's values.yaml.
	// +optional
	ValuesFiles []string `json:"valuesFiles,omitempty"`

	// IgnoreMissingValuesFiles skips ValuesFiles that do not exist.
	// +optional
	IgnoreMissingValuesFiles bool `json:"ignoreMissingValuesFiles,omitempty"`
}

// GetVersion is spec.version, or `*` when empty (Flux's code default).
func (in HelmChartTemplateSpec) GetVersion() string {
	if in.Version == "" {
		return "*"
	}
	return in.Version
}

// GetReconcileStrategy is spec.reconcileStrategy, or ChartVersion when
// empty (Flux's code default).
func (in HelmChartTemplateSpec) GetReconcileStrategy() string {
	if in.ReconcileStrategy == "" {
		return sourcev1.ReconcileStrategyChartVersion
	}
	return in.ReconcileStrategy
}

// CrossNamespaceObjectReference names a chart source of a HelmChartTemplate.
type CrossNamespaceObjectReference struct {
	// APIVersion of the source.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the source: HelmRepository, GitRepository or Bucket.
	// +kubebuilder:validation:Enum=HelmRepository;GitRepository;Bucket
	// +required
	Kind string `json:"kind,omitempty"`

	// Name of the source.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the source; default the HelmRelease's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Optional
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// CrossNamespaceSourceReference names the chart source of spec.chartRef.
type CrossNamespaceSourceReference struct {
	// APIVersion of the source.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the source: OCIRepository, HelmChart or ExternalArtifact.
	// +kubebuilder:validation:Enum=OCIRepository;HelmChart;ExternalArtifact
	// +required
	Kind string `json:"kind"`

	// Name of the source.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the source; default the HelmRelease's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Optional
	// +optional
	Namespace string `json:"namespace,omitempty"`
}
