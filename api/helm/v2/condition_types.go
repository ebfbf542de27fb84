package v2

// HelmReleaseFinalizer is set on every HelmRelease so its release is
// uninstalled before the object goes away. Flux compatible.
const HelmReleaseFinalizer = "finalizers.fluxcd.io"

// Condition types of a HelmRelease besides Ready, Reconciling and Stalled.
// Flux compatible: the strings of helm-controller's api/v2.
const (
	// ReleasedCondition reports the outcome of the last install or upgrade.
	ReleasedCondition = "Released"
	// TestSuccessCondition reports the outcome of the last Helm test run;
	// present only with spec.test.enable.
	TestSuccessCondition = "TestSuccess"
	// RemediatedCondition is True after a failed release was rolled back or
	// uninstalled; Ready is then False.
	RemediatedCondition = "Remediated"
	// DriftedCondition reports whether the cluster differs from the release
	// manifest; present only with spec.driftDetection.mode enabled or warn.
	DriftedCondition = "Drifted"
)

// Reasons of the conditions above. Flux compatible strings; the messages
// that go with them are in flux-contract-2.10.md §2.1.
const (
	InstallSucceededReason   = "InstallSucceeded"
	InstallFailedReason      = "InstallFailed"
	UpgradeSucceededReason   = "UpgradeSucceeded"
	UpgradeFailedReason      = "UpgradeFailed"
	TestSucceededReason      = "TestSucceeded"
	TestFailedReason         = "TestFailed"
	RollbackSucceededReason  = "RollbackSucceeded"
	RollbackFailedReason     = "RollbackFailed"
	UninstallSucceededReason = "UninstallSucceeded"
	UninstallFailedReason    = "UninstallFailed"
	ArtifactFailedReason     = "ArtifactFailed"
	DependencyNotReadyReason = "DependencyNotReady"
	DriftDetectedReason      = "DriftDetected"
	NoDriftDetectedReason    = "NoDriftDetected"

	// Reasons helm-controller sets that its api package does not declare.
	SourceNotReadyReason        = "SourceNotReady"
	ValuesErrorReason           = "ValuesError"
	ChartMutateErrorReason      = "ChartMutateError"
	RESTClientErrorReason       = "RESTClientError"
	FactoryErrorReason          = "FactoryError"
	StateErrorReason            = "StateError"
	ReconcileErrorReason        = "ReconcileError"
	RetriesExceededReason       = "RetriesExceeded"
	MissingRollbackTargetReason = "MissingRollbackTarget"
	AwaitingTestsReason         = "AwaitingTests"
	PendingReleaseReason        = "PendingRelease"
	InitFailedReason            = "InitFailed"
)

// Annotations read on a HelmRelease or on the objects it renders.
const (
	// ForceRequestAnnotation forces an install or upgrade when its value
	// equals reconcile.fluxcd.io/requestedAt. Flux compatible.
	ForceRequestAnnotation = "reconcile.fluxcd.io/forceAt"
	// ResetRequestAnnotation resets the failure counters when its value
	// equals reconcile.fluxcd.io/requestedAt. Flux compatible.
	ResetRequestAnnotation = "reconcile.fluxcd.io/resetAt"
	// DriftDetectionMetadataKey with the value "disabled", as a label or
	// annotation on a rendered object, leaves that object out of drift
	// detection. Flux compatible.
	DriftDetectionMetadataKey = "helm.toolkit.fluxcd.io/driftDetection"
	// DriftDetectionDisabledValue is the value of DriftDetectionMetadataKey
	// that opts an object out.
	DriftDetectionDisabledValue = "disabled"
)
