package v2

import (
	"github.com/fluxcd/pkg/apis/meta"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
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

	// KubeConfig targets a remote cluster (secretRef; configMapRef is refused).
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

// IsSuspended returns spec.suspend.
func (in *HelmRelease) IsSuspended() bool { return in.Spec.Suspend }
