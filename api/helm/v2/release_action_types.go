package v2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

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
