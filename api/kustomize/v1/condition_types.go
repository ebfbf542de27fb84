package v1

// Finalizer, condition reasons and annotation values of
// kustomize.toolkit.fluxcd.io objects. Flux compatible: the same strings as
// kustomize-controller's api/v1.
const (
	// KustomizationFinalizer lets the controller prune the inventory per
	// spec.deletionPolicy before the object goes away.
	KustomizationFinalizer = "finalizers.fluxcd.io"

	// HealthyCondition reports the outcome of the health checks.
	HealthyCondition = "Healthy"

	PruneFailedReason             = "PruneFailed"
	ArtifactFailedReason          = "ArtifactFailed"
	BuildFailedReason             = "BuildFailed"
	HealthCheckFailedReason       = "HealthCheckFailed"
	HealthCheckCanceledReason     = "HealthCheckCanceled"
	DependencyNotReadyReason      = "DependencyNotReady"
	ReconciliationSucceededReason = "ReconciliationSucceeded"
	ReconciliationFailedReason    = "ReconciliationFailed"
	DirectoryCreationFailedReason = "DirectoryCreationFailed"
	AccessDeniedReason            = "AccessDenied"
	InvalidCELExpressionReason    = "InvalidCELExpression"
	FeatureGateDisabledReason     = "FeatureGateDisabled"

	EnabledValue      = "enabled"
	DisabledValue     = "disabled"
	MergeValue        = "Merge"
	IfNotPresentValue = "IfNotPresent"
	IgnoreValue       = "Ignore"
)
