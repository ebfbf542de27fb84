package v2

import (
	"github.com/fluxcd/pkg/apis/meta"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
)

// HelmReleaseKind is the kind name of HelmRelease.
const HelmReleaseKind = "HelmRelease"

// HelmReleaseSpec is which chart to release, with which values, and how to
// install, upgrade, test, roll back and uninstall it. Flux compatible: field
// names, defaults and validation of helm-controller's api/v2 HelmReleaseSpec.
//
// +kubebuilder:validation:XValidation:rule="(has(self.chart) && !has(self.chartRef)) || (!has(self.chart) && has(self.chartRef))", message="either chart or chartRef must be set"
type HelmReleaseSpec struct {
	// Chart is a template of the chart source helm-controller creates,
	// named `<namespace>-<name>`: a HelmChart in the sourceRef's namespace,
	// or an OCIRepository in the HelmRelease's.
	// +optional
	Chart *HelmChartTemplate `json:"chart,omitempty"`

	// ChartRef names an existing chart source: a HelmChart, or an
	// OCIRepository or ExternalArtifact holding a packaged chart.
	// +optional
	ChartRef *CrossNamespaceSourceReference `json:"chartRef,omitempty"`

	// Interval between reconciles, e.g. 10m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required
	Interval metav1.Duration `json:"interval"`

	// KubeConfig targets a remote cluster. Eddy: refused until implemented.
	// +optional
	KubeConfig *meta.KubeConfigReference `json:"kubeConfig,omitempty"`

	// Suspend stops reconciliation of this object until set back to false.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// ReleaseName of the Helm release; default `[<targetNamespace>-]<name>`,
	// shortened when over 53 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:Optional
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`

	// TargetNamespace the release's objects go to; default the HelmRelease's.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Optional
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// StorageNamespace holds the release's Helm storage Secrets; default the
	// HelmRelease's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Optional
	// +optional
	StorageNamespace string `json:"storageNamespace,omitempty"`

	// DependsOn lists HelmReleases that must be Ready first.
	// +optional
	DependsOn []meta.DependencyReference `json:"dependsOn,omitempty"`

	// Timeout of each Helm action (install, upgrade, test, rollback,
	// uninstall) unless the action sets its own; default 5m0s.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// MaxHistory is how many release versions Helm keeps; default 5, 0 for
	// no limit.
	// +optional
	MaxHistory *int `json:"maxHistory,omitempty"`

	// ServiceAccountName to impersonate for the Helm actions.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Optional
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// PersistentClient reuses one Kubernetes client across Helm actions;
	// default true.
	// +optional
	PersistentClient *bool `json:"persistentClient,omitempty"`

	// DriftDetection compares the cluster with the release manifest.
	// +optional
	DriftDetection *DriftDetection `json:"driftDetection,omitempty"`

	// Install configures `helm install`.
	// +optional
	Install *Install `json:"install,omitempty"`

	// Upgrade configures `helm upgrade`.
	// +optional
	Upgrade *Upgrade `json:"upgrade,omitempty"`

	// Test configures `helm test`.
	// +optional
	Test *Test `json:"test,omitempty"`

	// Rollback configures `helm rollback`.
	// +optional
	Rollback *Rollback `json:"rollback,omitempty"`

	// Uninstall configures `helm uninstall`.
	// +optional
	Uninstall *Uninstall `json:"uninstall,omitempty"`

	// ValuesFrom lists Secrets and ConfigMaps holding values, merged in
	// order; Values is merged on top.
	// +optional
	ValuesFrom []meta.ValuesReference `json:"valuesFrom,omitempty"`

	// Values for the chart, highest precedence.
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// CommonMetadata adds labels and annotations to every rendered object.
	// +optional
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`

	// PostRenderers change the rendered manifests before Helm applies them,
	// in order.
	// +optional
	PostRenderers []PostRenderer `json:"postRenderers,omitempty"`

	// PostRenderStrategy: combined (the default: hooks and templates
	// together), nohooks or separate.
	// +kubebuilder:validation:Enum=nohooks;combined;separate
	// +optional
	PostRenderStrategy string `json:"postRenderStrategy,omitempty"`

	// WaitStrategy: how to wait for the release's objects; poller (kstatus,
	// the default) or legacy.
	// +optional
	WaitStrategy *WaitStrategy `json:"waitStrategy,omitempty"`

	// HealthCheckExprs are CEL health checks for custom resources; used only
	// with the poller wait strategy.
	// +optional
	HealthCheckExprs []kustomizev1.CustomHealthCheck `json:"healthCheckExprs,omitempty"`
}

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

// CommonMetadata is added to every object a release renders.
type CommonMetadata struct {
	// Annotations added to every object.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Labels added to every object.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// PostRenderer changes rendered manifests before Helm applies them.
type PostRenderer struct {
	// Kustomize patches and image overrides.
	// +optional
	Kustomize *Kustomize `json:"kustomize,omitempty"`
}

// Kustomize is a kustomize post-renderer: patches, then images.
type Kustomize struct {
	// Patches: strategic merge or JSON 6902 patches, each with an optional
	// target selector.
	// +optional
	Patches []kustomizev1.Patch `json:"patches,omitempty"`

	// Images override container image names, tags or digests.
	// +optional
	Images []kustomizev1.Image `json:"images,omitempty"`
}

// Drift detection modes of spec.driftDetection.mode. Flux compatible.
const (
	DriftDetectionEnabled  = "enabled"
	DriftDetectionWarn     = "warn"
	DriftDetectionDisabled = "disabled"
)

// DriftDetection compares the cluster with the release manifest.
type DriftDetection struct {
	// Mode: disabled (the default), warn (report only) or enabled (report
	// and correct).
	// +kubebuilder:validation:Enum=enabled;warn;disabled
	// +optional
	Mode string `json:"mode,omitempty"`

	// Ignore lists JSON pointers left out of the comparison, optionally only
	// for the objects a target selects.
	// +optional
	Ignore []IgnoreRule `json:"ignore,omitempty"`
}

// IgnoreRule leaves fields out of drift detection.
type IgnoreRule struct {
	// Paths are JSON pointers (RFC 6901), e.g. /spec/replicas.
	// +required
	Paths []string `json:"paths"`

	// Target selects the objects the rule applies to; all when unset.
	// +optional
	Target *kustomizev1.Selector `json:"target,omitempty"`
}

// WaitStrategy names how to wait for a release's objects.
type WaitStrategy struct {
	// Name: poller (kstatus) or legacy (Helm's own wait).
	// +kubebuilder:validation:Enum=poller;legacy
	// +required
	Name string `json:"name"`
}

// CRD policies of install.crds and upgrade.crds. Flux compatible.
const (
	CRDsSkip          = "Skip"
	CRDsCreate        = "Create"
	CRDsCreateReplace = "CreateReplace"
)

// Action strategies of install.strategy.name and upgrade.strategy.name.
const (
	ActionStrategyRemediateOnFailure = "RemediateOnFailure"
	ActionStrategyRetryOnFailure     = "RetryOnFailure"
)

// Remediation strategies of upgrade.remediation.strategy.
const (
	RemediationStrategyRollback  = "rollback"
	RemediationStrategyUninstall = "uninstall"
)

// Install configures `helm install`.
type Install struct {
	// Timeout of the install; default spec.timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Strategy on failure: RemediateOnFailure (the default) or RetryOnFailure.
	// +optional
	Strategy *InstallStrategy `json:"strategy,omitempty"`

	// Remediation of a failed install (always an uninstall).
	// +optional
	Remediation *InstallRemediation `json:"remediation,omitempty"`

	// DisableTakeOwnership refuses to adopt objects not owned by the release.
	// +optional
	DisableTakeOwnership bool `json:"disableTakeOwnership,omitempty"`

	// DisableWait skips waiting for the release's objects to be ready.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`

	// DisableWaitForJobs skips waiting for Jobs to complete.
	// +optional
	DisableWaitForJobs bool `json:"disableWaitForJobs,omitempty"`

	// DisableHooks skips the chart's hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`

	// DisableOpenAPIValidation skips validating manifests against the
	// API server's schema.
	// +optional
	DisableOpenAPIValidation bool `json:"disableOpenAPIValidation,omitempty"`

	// DisableSchemaValidation skips the chart's values.schema.json.
	// +optional
	DisableSchemaValidation bool `json:"disableSchemaValidation,omitempty"`

	// Replace reuses a release name left in history.
	// +optional
	Replace bool `json:"replace,omitempty"`

	// SkipCRDs is deprecated; use CRDs.
	// +optional
	SkipCRDs bool `json:"skipCRDs,omitempty"`

	// CRDs policy: Skip, Create (the default) or CreateReplace.
	// +kubebuilder:validation:Enum=Skip;Create;CreateReplace
	// +optional
	CRDs string `json:"crds,omitempty"`

	// CreateNamespace creates the target namespace when missing.
	// +optional
	CreateNamespace bool `json:"createNamespace,omitempty"`

	// ServerSideApply applies with server-side apply (Helm 4).
	// +optional
	ServerSideApply *bool `json:"serverSideApply,omitempty"`
}

// InstallStrategy names what to do when an install fails.
//
// +kubebuilder:validation:XValidation:rule="!has(self.retryInterval) || self.name != 'RemediateOnFailure'", message=".retryInterval cannot be set when .name is 'RemediateOnFailure'"
type InstallStrategy struct {
	// Name: RemediateOnFailure or RetryOnFailure.
	// +kubebuilder:validation:Enum=RemediateOnFailure;RetryOnFailure
	// +required
	Name string `json:"name"`

	// RetryInterval between retries with RetryOnFailure; default 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`
}

// InstallRemediation is how a failed install is remediated.
type InstallRemediation struct {
	// Retries before giving up (Stalled RetriesExceeded); negative for no
	// limit; default 0.
	// +optional
	Retries int `json:"retries,omitempty"`

	// IgnoreTestFailures; default test.ignoreFailures.
	// +optional
	IgnoreTestFailures *bool `json:"ignoreTestFailures,omitempty"`

	// RemediateLastFailure remediates the last failure too, once retries
	// are exhausted; default false.
	// +optional
	RemediateLastFailure *bool `json:"remediateLastFailure,omitempty"`
}

// Upgrade configures `helm upgrade`.
type Upgrade struct {
	// Timeout of the upgrade; default spec.timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Strategy on failure: RemediateOnFailure (the default) or RetryOnFailure.
	// +optional
	Strategy *UpgradeStrategy `json:"strategy,omitempty"`

	// Remediation of a failed upgrade.
	// +optional
	Remediation *UpgradeRemediation `json:"remediation,omitempty"`

	// DisableTakeOwnership refuses to adopt objects not owned by the release.
	// +optional
	DisableTakeOwnership bool `json:"disableTakeOwnership,omitempty"`

	// DisableWait skips waiting for the release's objects to be ready.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`

	// DisableWaitForJobs skips waiting for Jobs to complete.
	// +optional
	DisableWaitForJobs bool `json:"disableWaitForJobs,omitempty"`

	// DisableHooks skips the chart's hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`

	// DisableOpenAPIValidation skips validating manifests against the
	// API server's schema.
	// +optional
	DisableOpenAPIValidation bool `json:"disableOpenAPIValidation,omitempty"`

	// DisableSchemaValidation skips the chart's values.schema.json.
	// +optional
	DisableSchemaValidation bool `json:"disableSchemaValidation,omitempty"`

	// Force replaces objects that cannot be patched.
	// +optional
	Force bool `json:"force,omitempty"`

	// PreserveValues reuses the last release's values.
	// +optional
	PreserveValues bool `json:"preserveValues,omitempty"`

	// CleanupOnFail deletes objects a failed upgrade created.
	// +optional
	CleanupOnFail bool `json:"cleanupOnFail,omitempty"`

	// CRDs policy: Skip (the default), Create or CreateReplace.
	// +kubebuilder:validation:Enum=Skip;Create;CreateReplace
	// +optional
	CRDs string `json:"crds,omitempty"`

	// ServerSideApply: enabled, disabled or auto (the default: as the
	// previous release).
	// +kubebuilder:validation:Enum=enabled;disabled;auto
	// +optional
	ServerSideApply string `json:"serverSideApply,omitempty"`

	// ChartNameChangeStrategy: Reinstall (the default) or InPlaceUpdate.
	// +kubebuilder:validation:Enum=InPlaceUpdate;Reinstall
	// +optional
	ChartNameChangeStrategy string `json:"chartNameChangeStrategy,omitempty"`
}

// UpgradeStrategy names what to do when an upgrade fails.
//
// +kubebuilder:validation:XValidation:rule="!has(self.retryInterval) || self.name == 'RetryOnFailure'", message=".retryInterval can only be set when .name is 'RetryOnFailure'"
type UpgradeStrategy struct {
	// Name: RemediateOnFailure or RetryOnFailure.
	// +kubebuilder:validation:Enum=RemediateOnFailure;RetryOnFailure
	// +required
	Name string `json:"name"`

	// RetryInterval between retries with RetryOnFailure; default 5m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`
}

// UpgradeRemediation is how a failed upgrade is remediated.
type UpgradeRemediation struct {
	// Retries before giving up (Stalled RetriesExceeded); negative for no
	// limit; default 0.
	// +optional
	Retries int `json:"retries,omitempty"`

	// IgnoreTestFailures; default test.ignoreFailures.
	// +optional
	IgnoreTestFailures *bool `json:"ignoreTestFailures,omitempty"`

	// RemediateLastFailure remediates the last failure too, once retries
	// are exhausted; default true when Retries > 0.
	// +optional
	RemediateLastFailure *bool `json:"remediateLastFailure,omitempty"`

	// Strategy: rollback (the default) or uninstall.
	// +kubebuilder:validation:Enum=rollback;uninstall
	// +optional
	Strategy *string `json:"strategy,omitempty"`
}

// Test configures `helm test`.
type Test struct {
	// Enable runs the chart's tests after each install or upgrade.
	// +optional
	Enable bool `json:"enable,omitempty"`

	// Timeout of the tests; default spec.timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// IgnoreFailures keeps a release Ready when its tests fail.
	// +optional
	IgnoreFailures bool `json:"ignoreFailures,omitempty"`

	// Filters include or exclude tests by name.
	// +optional
	Filters *[]Filter `json:"filters,omitempty"`
}

// Filter includes or excludes a test by name.
type Filter struct {
	// Name of the test.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Exclude the test instead of including it.
	// +optional
	Exclude bool `json:"exclude,omitempty"`
}

// Rollback configures `helm rollback` (upgrade remediation).
type Rollback struct {
	// Timeout of the rollback; default spec.timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// DisableWait skips waiting for the objects to be ready.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`

	// DisableWaitForJobs skips waiting for Jobs to complete.
	// +optional
	DisableWaitForJobs bool `json:"disableWaitForJobs,omitempty"`

	// DisableHooks skips the chart's hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`

	// Recreate restarts pods (deprecated, no effect).
	// +optional
	Recreate bool `json:"recreate,omitempty"`

	// Force replaces objects that cannot be patched.
	// +optional
	Force bool `json:"force,omitempty"`

	// CleanupOnFail deletes objects a failed rollback created.
	// +optional
	CleanupOnFail bool `json:"cleanupOnFail,omitempty"`

	// ServerSideApply: enabled, disabled or auto.
	// +kubebuilder:validation:Enum=enabled;disabled;auto
	// +optional
	ServerSideApply string `json:"serverSideApply,omitempty"`
}

// Uninstall configures `helm uninstall`.
type Uninstall struct {
	// Timeout of the uninstall; default spec.timeout.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// DisableHooks skips the chart's hooks.
	// +optional
	DisableHooks bool `json:"disableHooks,omitempty"`

	// KeepHistory keeps the release's storage after uninstall.
	// +optional
	KeepHistory bool `json:"keepHistory,omitempty"`

	// DisableWait skips waiting for the objects to be deleted.
	// +optional
	DisableWait bool `json:"disableWait,omitempty"`

	// DeletionPropagation: background (the default), foreground or orphan.
	// +kubebuilder:validation:Enum=background;foreground;orphan
	// +optional
	DeletionPropagation *string `json:"deletionPropagation,omitempty"`
}

// Release actions of status.lastAttemptedReleaseAction and history. Flux
// compatible.
const (
	ReleaseActionInstall              = "install"
	ReleaseActionUpgrade              = "upgrade"
	ReleaseActionRollback             = "rollback"
	ReleaseActionUninstall            = "uninstall"
	ReleaseActionUninstallRemediation = "uninstall-remediation"
)

// HelmReleaseStatus is what helm-controller observed and did.
type HelmReleaseStatus struct {
	// ObservedGeneration is the generation last reconciled to completion.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// ObservedPostRenderersDigest is the digest of spec.postRenderers last
	// released.
	// +optional
	ObservedPostRenderersDigest string `json:"observedPostRenderersDigest,omitempty"`

	// ObservedCommonMetadataDigest is the digest of spec.commonMetadata
	// last released.
	// +optional
	ObservedCommonMetadataDigest string `json:"observedCommonMetadataDigest,omitempty"`

	// LastAttemptedGeneration is the generation of the last release attempt.
	// +optional
	LastAttemptedGeneration int64 `json:"lastAttemptedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, Released, TestSuccess,
	// Remediated, Drifted.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// HelmChart is the generated chart source in use: `<namespace>/<name>`
	// for a HelmChart, `<kind>/<namespace>/<name>` for another kind (e.g.
	// `OCIRepository/apps/apps-podinfo`). Flux compatible (SetChart).
	// +optional
	HelmChart string `json:"helmChart,omitempty"`

	// StorageNamespace of the current release.
	// +optional
	StorageNamespace string `json:"storageNamespace,omitempty"`

	// History of releases, newest first.
	// +optional
	History []Snapshot `json:"history,omitempty"`

	// Inventory of the objects the current release manages.
	// +optional
	Inventory *kustomizev1.ResourceInventory `json:"inventory,omitempty"`

	// LastAttemptedReleaseAction: install or upgrade.
	// +kubebuilder:validation:Enum=install;upgrade
	// +optional
	LastAttemptedReleaseAction string `json:"lastAttemptedReleaseAction,omitempty"`

	// LastAttemptedReleaseActionDuration is how long the last install or
	// upgrade took.
	// +kubebuilder:validation:Type=string
	// +optional
	LastAttemptedReleaseActionDuration *metav1.Duration `json:"lastAttemptedReleaseActionDuration,omitempty"`

	// Failures counts failed reconciles since the last success.
	// +optional
	Failures int64 `json:"failures,omitempty"`

	// InstallFailures counts failed installs since the last reset.
	// +optional
	InstallFailures int64 `json:"installFailures,omitempty"`

	// UpgradeFailures counts failed upgrades since the last reset.
	// +optional
	UpgradeFailures int64 `json:"upgradeFailures,omitempty"`

	// LastAttemptedRevision is the chart version last attempted.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// LastAttemptedRevisionDigest is the chart artifact digest last
	// attempted (OCI and ExternalArtifact sources).
	// +optional
	LastAttemptedRevisionDigest string `json:"lastAttemptedRevisionDigest,omitempty"`

	// LastAttemptedValuesChecksum is deprecated; see LastAttemptedConfigDigest.
	// +optional
	LastAttemptedValuesChecksum string `json:"lastAttemptedValuesChecksum,omitempty"`

	// LastReleaseRevision is deprecated; see History.
	// +optional
	LastReleaseRevision int `json:"lastReleaseRevision,omitempty"`

	// LastAttemptedConfigDigest is the digest of the values last attempted.
	// +optional
	LastAttemptedConfigDigest string `json:"lastAttemptedConfigDigest,omitempty"`

	// LastHandledResetAt is the last reconcile.fluxcd.io/resetAt handled.
	// +optional
	LastHandledResetAt string `json:"lastHandledResetAt,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
	meta.ForceRequestStatus     `json:",inline"`
}

// Snapshot is one Helm release version as helm-controller recorded it.
type Snapshot struct {
	// APIVersion of the snapshot format; v2.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Digest of the release object in Helm storage, `<algo>:<hex>`; a
	// mismatch means the release changed outside helm-controller.
	// +required
	Digest string `json:"digest"`

	// Name of the release.
	// +required
	Name string `json:"name"`

	// Namespace of the release.
	// +required
	Namespace string `json:"namespace"`

	// Version of the release.
	// +required
	Version int `json:"version"`

	// Status of the release: deployed, superseded, failed, ...
	// +required
	Status string `json:"status"`

	// Action that made the release: install, upgrade, rollback, ...
	// +optional
	Action string `json:"action,omitempty"`

	// ChartName of the release.
	// +required
	ChartName string `json:"chartName"`

	// ChartVersion of the release.
	// +required
	ChartVersion string `json:"chartVersion"`

	// AppVersion of the chart.
	// +optional
	AppVersion string `json:"appVersion,omitempty"`

	// ConfigDigest of the release's values.
	// +required
	ConfigDigest string `json:"configDigest"`

	// FirstDeployed is when the release was first deployed.
	// +required
	FirstDeployed metav1.Time `json:"firstDeployed"`

	// LastDeployed is when this version was deployed.
	// +required
	LastDeployed metav1.Time `json:"lastDeployed"`

	// Deleted is when the release was uninstalled.
	// +optional
	Deleted metav1.Time `json:"deleted,omitempty"`

	// TestHooks of the release, by name, once tests ran.
	// +optional
	TestHooks *map[string]*TestHookStatus `json:"testHooks,omitempty"`

	// OCIDigest of the chart's OCI artifact, when from an OCI source.
	// +optional
	OCIDigest string `json:"ociDigest,omitempty"`
}

// TestHookStatus is the outcome of one Helm test hook.
type TestHookStatus struct {
	// LastStarted is when the test hook last started.
	// +optional
	LastStarted metav1.Time `json:"lastStarted,omitempty"`

	// LastCompleted is when the test hook last completed.
	// +optional
	LastCompleted metav1.Time `json:"lastCompleted,omitempty"`

	// Phase of the test hook: Succeeded, Failed, ...
	// +optional
	Phase string `json:"phase,omitempty"`
}

// HelmRelease is a Helm release that helm-controller installs, upgrades,
// tests, remediates and uninstalls from a chart source.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=hr,categories=all;fluxcd;fluxcd-appliers
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
type HelmRelease struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HelmReleaseSpec `json:"spec,omitempty"`
	// +kubebuilder:default:={"observedGeneration":-1}
	Status HelmReleaseStatus `json:"status,omitempty"`
}

// HelmReleaseList is a list of HelmRelease.
//
// +kubebuilder:object:root=true
type HelmReleaseList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HelmRelease `json:"items"`
}

// GetConditions returns the status conditions of the HelmRelease.
func (in *HelmRelease) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions of the HelmRelease.
func (in *HelmRelease) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// GetObservedGeneration returns status.observedGeneration.
func (in *HelmRelease) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *HelmRelease) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (in *HelmRelease) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *HelmRelease) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}
