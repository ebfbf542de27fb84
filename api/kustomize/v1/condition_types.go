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

	// PruneFailedReason: deleting objects that left the source failed, on
	// a reconcile (Ready=False) or when the Kustomization is deleted (a
	// Warning event); also when pruning on deletion is skipped because the
	// impersonated ServiceAccount is gone.
	PruneFailedReason = "PruneFailed"
	// ArtifactFailedReason: the source is missing, has no artifact yet, is
	// of a kind Eddy does not read, or its artifact could not be fetched or
	// lacks spec.path (Ready=False; a wait is retried after
	// --requeue-dependency).
	ArtifactFailedReason = "ArtifactFailed"
	// BuildFailedReason: kustomize build or postBuild substitution failed,
	// a substituteFrom object could not be read, or spec.decryption is set,
	// which Eddy refuses (Ready=False; Stalled for spec.decryption).
	BuildFailedReason = "BuildFailed"
	// HealthCheckFailedReason: an object of spec.wait or spec.healthChecks
	// reported Failed, or not all were Current within the timeout
	// (Ready=False and Healthy=False); also spec.healthCheckExprs, which Eddy
	// refuses (Stalled).
	HealthCheckFailedReason = "HealthCheckFailed"
	// HealthCheckCanceledReason: the health checks of a revision were
	// canceled because a new revision or generation arrived (Flux's reason;
	// kept for compatibility).
	HealthCheckCanceledReason = "HealthCheckCanceled"
	// DependencyNotReadyReason: a spec.dependsOn Kustomization is missing,
	// not Ready at its generation, or, sharing the source, not at the same
	// revision (Ready=False and a Normal event; retried after
	// --requeue-dependency).
	DependencyNotReadyReason = "DependencyNotReady"
	// ReconciliationSucceededReason: the revision was built, applied,
	// pruned and found healthy (Ready=True "Applied revision: <rev>" and the
	// Normal event "Reconciliation finished in ...").
	ReconciliationSucceededReason = "ReconciliationSucceeded"
	// ReconciliationFailedReason: server-side apply failed, the client of
	// the impersonated account could not be built, spec.ignore rules are
	// invalid (Stalled), or spec.kubeConfig is set, which Eddy refuses
	// (Stalled) (Ready=False).
	ReconciliationFailedReason = "ReconciliationFailed"
	// DirectoryCreationFailedReason: Flux's reason for a temporary
	// directory that could not be created; Eddy builds in memory and does
	// not set it (kept for compatibility).
	DirectoryCreationFailedReason = "DirectoryCreationFailed"
	// AccessDeniedReason: spec.sourceRef names another namespace while
	// --no-cross-namespace-refs is set (Ready=False, Stalled).
	AccessDeniedReason = "AccessDenied"
	// InvalidCELExpressionReason: Flux's reason for a spec.healthCheckExprs
	// expression that does not compile; Eddy refuses the field as a whole
	// (HealthCheckFailedReason) and does not set it (kept for compatibility).
	InvalidCELExpressionReason = "InvalidCELExpression"
	// FeatureGateDisabledReason: Flux's reason for a field whose feature
	// gate is off; Eddy does not set it (kept for compatibility).
	FeatureGateDisabledReason = "FeatureGateDisabled"

	// EnabledValue and DisabledValue are the values of Flux's per-object
	// annotations, e.g. kustomize.toolkit.fluxcd.io/prune: disabled.
	EnabledValue  = "enabled"
	DisabledValue = "disabled"
	// MergeValue, IfNotPresentValue and IgnoreValue are the values of
	// kustomize.toolkit.fluxcd.io/ssa: how an object is applied.
	MergeValue        = "Merge"
	IfNotPresentValue = "IfNotPresent"
	IgnoreValue       = "Ignore"
)
