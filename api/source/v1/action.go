package v1

// Action is the stage of a source reconcile an event reports: the `action`
// of the event.toolkit.fluxcd.io/v1 payload posted to --events-addr.
// Flux compatible: the values of source-controller api/v1 (v1.10) action.go.
type Action string

// String returns the action as sent in the event payload.
func (a Action) String() string { return string(a) }

const (
	// ActionReconcile is the outcome of a whole reconcile: the new
	// artifact, the recovery from a failure, or the failure itself.
	ActionReconcile Action = "Reconcile"
	// ActionReconcileStorage is the check of the stored artifact (a
	// failed integrity verification), its path, URL and garbage collection.
	ActionReconcileStorage Action = "ReconcileStorage"
	// ActionReconcileSource is fetching the upstream content (clone, pull,
	// index or chart download) and resolving its revision.
	ActionReconcileSource Action = "ReconcileSource"
	// ActionVerifySource is verifying the fetched content's signatures.
	ActionVerifySource Action = "VerifySource"
	// ActionReconcileArtifact is archiving the content into the artifact
	// and publishing it (URL, revision, the latest link).
	ActionReconcileArtifact Action = "ReconcileArtifact"
	// ActionGarbageCollect is removing stale artifacts from storage.
	ActionGarbageCollect Action = "GarbageCollect"
	// ActionFinalize is removing the object's artifacts on deletion.
	ActionFinalize Action = "Finalize"
)
