package v1

// ImageFinalizer is the finalizer the image controllers put on the objects
// they reconcile. Flux compatible.
const ImageFinalizer = "finalizers.fluxcd.io"

// Reasons of the Ready, Reconciling and Stalled conditions of
// ImageRepository and ImagePolicy, beside fluxcd/pkg/apis/meta's
// (SucceededReason, FailedReason, ProgressingReason, AccessDeniedReason,
// InvalidPolicySelectorReason...). Flux compatible: the values of
// image-reflector-controller's api/v1.
const (
	// ImageURLInvalidReason: an ImageRepository's spec.image does not parse
	// as a repository reference (a scheme or a tag in it); Stalled, no
	// retry until the spec changes.
	ImageURLInvalidReason = "ImageURLInvalid"
	// DependencyNotReadyReason: an ImagePolicy's ImageRepository is missing
	// or has no scanned tags yet; retried after --requeue-dependency.
	DependencyNotReadyReason = "DependencyNotReady"
	// AuthenticationFailedReason: the registry credentials (Secret,
	// ServiceAccount pull secrets or cloud provider) could not be read or
	// were refused.
	AuthenticationFailedReason = "AuthenticationFailed"
	// ReadOperationFailedReason: listing the tags or reading a manifest
	// from the registry failed.
	ReadOperationFailedReason = "ReadOperationFailed"
	// IntervalNotConfiguredReason: an ImagePolicy with
	// digestReflectionPolicy Always has no interval; Stalled.
	IntervalNotConfiguredReason = "IntervalNotConfigured"
	// InvalidPolicyReason: an ImagePolicy's policy or filterTags cannot be
	// used (no or several policies, a bad semver range, a bad regexp);
	// Stalled. Flux's controller spells it inline; exported here.
	InvalidPolicyReason = "InvalidPolicy"
)

// Reasons of the Ready, Reconciling and Stalled conditions of
// ImageUpdateAutomation, beside fluxcd/pkg/apis/meta's. Flux compatible:
// the values of image-automation-controller's api/v1.
const (
	// InvalidUpdateStrategyReason: spec.update.strategy is not one the
	// controller knows; Stalled.
	InvalidUpdateStrategyReason = "InvalidUpdateStrategy"
	// InvalidSourceConfigReason: spec.git is missing or the Git source
	// cannot be used as configured (e.g. no branch to check out); Stalled.
	InvalidSourceConfigReason = "InvalidSourceConfiguration"
	// SourceManagerFailedReason: preparing the Git working copy failed.
	SourceManagerFailedReason = "SourceManagerFailed"
	// GitOperationFailedReason: a clone, fetch, commit or push failed.
	GitOperationFailedReason = "GitOperationFailed"
	// UpdateFailedReason: applying the policies to the files failed.
	UpdateFailedReason = "UpdateFailed"
	// InvalidPolicySelectorReason: spec.policySelector is not a valid label
	// selector; Stalled.
	InvalidPolicySelectorReason = "InvalidPolicySelector"
	// RemovedTemplateFieldReason: spec.git.commit.messageTemplate uses a
	// field Flux removed (.Updated, .Changed.ImageResult); Stalled.
	RemovedTemplateFieldReason = "RemovedTemplateField"
)
