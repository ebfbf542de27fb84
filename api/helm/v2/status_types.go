package v2

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
)

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
