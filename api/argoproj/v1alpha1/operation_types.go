package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Operation phases.
const (
	OperationRunning     = "Running"
	OperationTerminating = "Terminating"
	OperationFailed      = "Failed"
	OperationError       = "Error"
	OperationSucceeded   = "Succeeded"
)

// Results of one object in a sync.
const (
	ResultSynced       = "Synced"
	ResultSyncFailed   = "SyncFailed"
	ResultPruned       = "Pruned"
	ResultPruneSkipped = "PruneSkipped"
)

// Operation is a requested sync.
type Operation struct {
	// +optional
	Sync *SyncOperation `json:"sync,omitempty"`
	// +optional
	InitiatedBy OperationInitiator `json:"initiatedBy,omitempty"`
	// +optional
	Info []*Info `json:"info,omitempty"`
	// +optional
	Retry RetryStrategy `json:"retry,omitempty"`
}

// OperationInitiator is who asked: a user, or the controller itself.
type OperationInitiator struct {
	// +optional
	Username string `json:"username,omitempty"`
	// +optional
	Automated bool `json:"automated,omitempty"`
}

// SyncOperation is a sync's parameters.
type SyncOperation struct {
	// Revision to sync; empty means the source's targetRevision.
	// +optional
	Revision string `json:"revision,omitempty"`
	// Prune deletes objects no longer rendered.
	// +optional
	Prune bool `json:"prune,omitempty"`
	// DryRun applies nothing and records no history.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
	// SyncStrategy is hook (default) or apply (skips hooks).
	// +optional
	SyncStrategy *SyncStrategy `json:"syncStrategy,omitempty"`
	// Resources, when set, syncs only these (no hooks, no history).
	// +optional
	Resources []SyncOperationResource `json:"resources,omitempty"`
	// Source overrides the spec's source (rollback).
	// +optional
	Source *ApplicationSource `json:"source,omitempty"`
	// +optional
	Manifests []string `json:"manifests,omitempty"`
	// SyncOptions are this operation's options (not merged with the spec's).
	// +optional
	SyncOptions []string `json:"syncOptions,omitempty"`
	// +optional
	Sources []ApplicationSource `json:"sources,omitempty"`
	// +optional
	Revisions []string `json:"revisions,omitempty"`
	// SelfHealAttemptsCount counts self-heals since the last full sync.
	// +optional
	SelfHealAttemptsCount int64 `json:"autoHealAttemptsCount,omitempty"`
}

// SyncOperationResource selects one object for a selective sync.
type SyncOperationResource struct {
	// +optional
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// SyncStrategy selects hook (the default) or apply.
type SyncStrategy struct {
	// +optional
	Apply *SyncStrategyApply `json:"apply,omitempty"`
	// +optional
	Hook *SyncStrategyHook `json:"hook,omitempty"`
}

// SyncStrategyApply applies without hooks.
type SyncStrategyApply struct {
	// Force deletes and re-creates an object that cannot be patched.
	// +optional
	Force bool `json:"force,omitempty"`
}

// SyncStrategyHook applies with hooks.
type SyncStrategyHook struct {
	SyncStrategyApply `json:",inline"`
}

// OperationState is the state of the current or last operation.
type OperationState struct {
	Operation Operation `json:"operation"`
	// Phase is Running, Terminating, Failed, Error or Succeeded.
	Phase string `json:"phase"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	SyncResult *SyncOperationResult `json:"syncResult,omitempty"`
	StartedAt  metav1.Time          `json:"startedAt"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// +optional
	RetryCount int64 `json:"retryCount,omitempty"`
}

// SyncOperationResult is what a sync did.
type SyncOperationResult struct {
	// +optional
	Resources []*ResourceResult `json:"resources,omitempty"`
	Revision  string            `json:"revision"`
	// +optional
	Source ApplicationSource `json:"source,omitempty"`
	// +optional
	Sources []ApplicationSource `json:"sources,omitempty"`
	// +optional
	Revisions []string `json:"revisions,omitempty"`
	// +optional
	ManagedNamespaceMetadata *ManagedNamespaceMetadata `json:"managedNamespaceMetadata,omitempty"`
}

// ResourceResult is what a sync did to one object.
type ResourceResult struct {
	Group     string `json:"group"`
	Version   string `json:"version"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Status is Synced, SyncFailed, Pruned or PruneSkipped.
	// +optional
	Status string `json:"status,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// HookType is PreSync, Sync, PostSync, SyncFail, ... for a hook.
	// +optional
	HookType string `json:"hookType,omitempty"`
	// HookPhase is the hook's phase (Running, Succeeded, Failed, ...).
	// +optional
	HookPhase string `json:"hookPhase,omitempty"`
	// SyncPhase is PreSync, Sync, PostSync or SyncFail.
	// +optional
	SyncPhase string `json:"syncPhase,omitempty"`
	// +optional
	Images []string `json:"images,omitempty"`
}
