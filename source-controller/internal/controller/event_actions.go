package controller

import (
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/events"
)

// eventActions gives source-controller's events their action (the `action`
// of the event.toolkit.fluxcd.io/v1 payload) by reason; any other reason is
// the outcome of the reconcile: Reconcile (new artifact, recovery, failure).
// A call site whose reason is reported by another stage too sets its action
// with Events.WithAction. Flux compatible: the actions source-controller
// v1.10.1 gives these events.
var eventActions = events.ActionTable(sourcev1.ActionReconcile, map[string]sourcev1.Action{
	"ArtifactVerificationFailed":       sourcev1.ActionReconcileStorage,
	"GarbageCollectionSucceeded":       sourcev1.ActionGarbageCollect,
	sourcev1.ArtifactUpToDateReason:    sourcev1.ActionReconcileArtifact,
	sourcev1.SymlinkUpdateFailedReason: sourcev1.ActionReconcileArtifact,
	"NoSourceArtifact":                 sourcev1.ActionReconcileSource,
	"ResolvedDependencies":             sourcev1.ActionReconcileSource,
	"CacheOperationFailed":             sourcev1.ActionReconcileSource,
})
