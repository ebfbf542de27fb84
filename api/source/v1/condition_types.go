package v1

// Condition types and reasons of source.toolkit.fluxcd.io objects.
// Flux compatible: the same strings as source-controller's api/v1, which
// kstatus, `flux get` and alerts read.
const (
	// SourceFinalizer is set on every source so its artifacts are removed from
	// storage before the object goes away.
	SourceFinalizer = "finalizers.fluxcd.io"

	// ArtifactInStorageCondition is True when the artifact of the current
	// revision is in storage.
	ArtifactInStorageCondition = "ArtifactInStorage"
	// ArtifactOutdatedCondition is True when the stored artifact is older than
	// what the spec or the remote asks for (abnormal-true).
	ArtifactOutdatedCondition = "ArtifactOutdated"
	// FetchFailedCondition is True when the source could not be fetched (abnormal-true).
	FetchFailedCondition = "FetchFailed"
	// IncludeUnavailableCondition is True when an included source has no artifact (abnormal-true).
	IncludeUnavailableCondition = "IncludeUnavailable"
	// StorageOperationFailedCondition is True when writing to storage failed (abnormal-true).
	StorageOperationFailedCondition = "StorageOperationFailed"
	// SourceVerifiedCondition reports the outcome of signature verification.
	SourceVerifiedCondition = "SourceVerified"
)

// Reasons for the conditions above.
const (
	GitOperationSucceedReason     = "GitOperationSucceeded"
	GitOperationFailedReason      = "GitOperationFailed"
	AuthenticationFailedReason    = "AuthenticationFailed"
	URLInvalidReason              = "URLInvalid"
	VerificationErrorReason       = "VerificationError"
	InvalidProviderConfigReason   = "InvalidProviderConfiguration"
	DirCreationFailedReason       = "DirectoryCreationFailed"
	StatOperationFailedReason     = "StatOperationFailed"
	ArchiveOperationFailedReason  = "ArchiveOperationFailed"
	SymlinkUpdateFailedReason     = "SymlinkUpdateFailed"
	ArtifactUpToDateReason        = "ArtifactUpToDate"
	PatchOperationFailedReason    = "PatchOperationFailed"
	EmptyGitRepositoryReason      = "EmptyGitRepository"
	InvalidVerificationModeReason = "InvalidVerificationMode"
	InvalidGitObjectReason        = "InvalidGitObject"
	InvalidTagSignatureReason     = "InvalidTagSignature"
	InvalidCommitSignatureReason  = "InvalidCommitSignature"
	SourceIgnoreErrorReason       = "SourceIgnoreError"
	IllegalPathReason             = "IllegalPath"
	CopyFailureReason             = "CopyFailure"
	GarbageCollectionFailedReason = "GarbageCollectionFailed"
	NewRevisionReason             = "NewRevision"
	IncludeChangeReason           = "IncludeChange"
	NotFoundReason                = "NotFound"
	NoArtifactReason              = "NoArtifact"
)
