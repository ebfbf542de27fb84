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

// Reasons for the conditions above. Flux compatible strings.
const (
	// GitOperationSucceedReason: a Git operation succeeded (Flux's reason;
	// Eddy reports success with meta.SucceededReason and does not set it).
	GitOperationSucceedReason = "GitOperationSucceeded"

	// GitOperationFailedReason: listing the remote's refs, cloning or checking
	// out failed (FetchFailed=True, Ready=False); Stalled when the reference
	// can never resolve.
	GitOperationFailedReason = "GitOperationFailed"

	// AuthenticationFailedReason: the spec.secretRef or spec.proxySecretRef
	// Secret could not be read or its data does not configure authentication
	// or a proxy (FetchFailed=True, Ready=False).
	AuthenticationFailedReason = "AuthenticationFailed"

	// URLInvalidReason: spec.url does not parse or has an unsupported scheme
	// (FetchFailed=True, Ready=False, Stalled).
	URLInvalidReason = "URLInvalid"

	// VerificationErrorReason: the spec.verify.secretRef Secret holding the
	// trusted keys could not be read (SourceVerified=False, Ready=False).
	VerificationErrorReason = "VerificationError"

	// InvalidProviderConfigReason: spec.provider names a provider Eddy
	// does not implement, which it refuses (FetchFailed=True, Ready=False,
	// Stalled).
	InvalidProviderConfigReason = "InvalidProviderConfiguration"

	// DirCreationFailedReason: the temporary working directory of a checkout
	// could not be created (StorageOperationFailed=True, Ready=False).
	DirCreationFailedReason = "DirectoryCreationFailed"

	// StatOperationFailedReason: Flux's reason for a failed stat of a storage
	// path; Eddy does not set it (kept for compatibility).
	StatOperationFailedReason = "StatOperationFailed"

	// ArchiveOperationFailedReason: the checkout could not be archived into
	// storage (StorageOperationFailed=True, Ready=False).
	ArchiveOperationFailedReason = "ArchiveOperationFailed"

	// InvalidPathReason: Flux's reason for a source path that is not a
	// directory; Eddy does not set it (kept for compatibility).
	InvalidPathReason = "InvalidPath"

	// SymlinkUpdateFailedReason: Flux's reason for a failed update of the
	// latest-artifact symlink; Eddy keeps no symlink and does not set it (kept
	// for compatibility).
	SymlinkUpdateFailedReason = "SymlinkUpdateFailed"

	// ArtifactUpToDateReason: Flux's reason for an artifact already up to
	// date; Eddy does not set it (kept for compatibility).
	ArtifactUpToDateReason = "ArtifactUpToDate"

	// PatchOperationFailedReason: Flux's reason for a failed status patch;
	// Eddy returns the error instead and does not set it (kept for
	// compatibility).
	PatchOperationFailedReason = "PatchOperationFailed"

	// EmptyGitRepositoryReason: the remote has no commits (FetchFailed=True,
	// Ready=False).
	EmptyGitRepositoryReason = "EmptyGitRepository"

	// InvalidVerificationModeReason: spec.verify.mode asks for a tag's
	// signature while spec.ref does not name a tag (SourceVerified=False,
	// Ready=False, Stalled).
	InvalidVerificationModeReason = "InvalidVerificationMode"

	// InvalidGitObjectReason: the tag to verify carries no signature (a
	// lightweight or unsigned tag) (SourceVerified=False, Ready=False).
	InvalidGitObjectReason = "InvalidGitObject"

	// InvalidTagSignatureReason: the tag's signature does not verify with the
	// trusted keys (SourceVerified=False, Ready=False).
	InvalidTagSignatureReason = "InvalidTagSignature"

	// InvalidCommitSignatureReason: the commit is unsigned or its signature
	// does not verify with the trusted keys (SourceVerified=False,
	// Ready=False).
	InvalidCommitSignatureReason = "InvalidCommitSignature"

	// SourceIgnoreErrorReason: the .sourceignore files or spec.ignore could
	// not be read or parsed (StorageOperationFailed=True, Ready=False).
	SourceIgnoreErrorReason = "SourceIgnoreError"

	// IllegalPathReason: a spec.include path leaves the artifact or the
	// includes form a cycle (StorageOperationFailed or
	// IncludeUnavailable=True, Ready=False, Stalled).
	IllegalPathReason = "IllegalPath"

	// CopyFailureReason: an included artifact could not be extracted or copied
	// into the checkout (StorageOperationFailed=True, Ready=False).
	CopyFailureReason = "CopyFailure"

	// GarbageCollectionFailedReason: Flux's reason for failed garbage
	// collection of old artifacts; Eddy logs that failure and does not set it
	// (kept for compatibility).
	GarbageCollectionFailedReason = "GarbageCollectionFailed"

	// NewRevisionReason: the remote has a newer revision than the stored
	// artifact (ArtifactOutdated=True until the new artifact is stored).
	NewRevisionReason = "NewRevision"

	// IncludeChangeReason: the included artifacts differ from those the stored
	// artifact was built with (ArtifactOutdated=True until the new artifact is
	// stored).
	IncludeChangeReason = "IncludeChange"

	// NotFoundReason: an included GitRepository does not exist
	// (IncludeUnavailable=True, Ready=False; a wait, retried).
	NotFoundReason = "NotFound"

	// NoArtifactReason: an included GitRepository has no artifact yet
	// (IncludeUnavailable=True, Ready=False; a wait, retried).
	NoArtifactReason = "NoArtifact"
)

// Reasons of the Helm sources (HelmRepository, HelmChart). Flux compatible.
const (
	// IndexationFailedReason: a HelmRepository's index could not be fetched
	// or parsed (FetchFailed=True, Ready=False).
	IndexationFailedReason = "IndexationFailed"

	// BuildFailedCondition is True when a HelmChart could not be built
	// (abnormal-true).
	BuildFailedCondition = "BuildFailed"

	// ChartPullErrorReason: the chart could not be downloaded.
	ChartPullErrorReason = "ChartPullError"

	// ChartPackageErrorReason: the chart could not be packaged.
	ChartPackageErrorReason = "ChartPackageError"

	// UnsupportedSourceKindReason: a HelmChart's sourceRef names a kind that
	// cannot hold charts (Stalled).
	UnsupportedSourceKindReason = "UnsupportedSourceKind"

	// NoSourceArtifactReason: the HelmChart's source has no artifact yet (a
	// wait, retried).
	NoSourceArtifactReason = "NoSourceArtifact"

	// SourceUnavailableReason: the HelmChart's source object cannot be read.
	SourceUnavailableReason = "SourceUnavailable"

	// InvalidChartReferenceReason: spec.chart names no loadable chart, or an
	// OCI reference is malformed (Stalled: only a spec change helps).
	InvalidChartReferenceReason = "InvalidChartReference"

	// MetadataPatchErrorReason: the chart version cannot take the build
	// metadata of reconcileStrategy Revision or valuesFiles (Stalled).
	MetadataPatchErrorReason = "MetadataPatchError"

	// ValuesFilesErrorReason: a spec.valuesFiles entry is missing or not
	// YAML (BuildFailed=True, Stalled).
	ValuesFilesErrorReason = "ValuesFilesError"

	// DependencyBuildErrorReason: a chart dependency could not be resolved
	// (BuildFailed=True, retried).
	DependencyBuildErrorReason = "DependencyBuildError"

	// ReadOperationFailedReason: a read from the source failed, e.g. an
	// OCIRepository's tag listing (FetchFailed=True, retried).
	ReadOperationFailedReason = "ReadOperationFailed"
)
