package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sync status codes.
const (
	SyncStatusSynced    = "Synced"
	SyncStatusOutOfSync = "OutOfSync"
	SyncStatusUnknown   = "Unknown"
)

// Health status codes, best first as Argo CD orders them when it takes the
// worst: Healthy < Suspended < Progressing < Missing < Degraded < Unknown.
const (
	HealthHealthy     = "Healthy"
	HealthSuspended   = "Suspended"
	HealthProgressing = "Progressing"
	HealthMissing     = "Missing"
	HealthDegraded    = "Degraded"
	HealthUnknown     = "Unknown"
)

// Condition types of status.conditions.
const (
	ConditionInvalidSpecError        = "InvalidSpecError"
	ConditionComparisonError         = "ComparisonError"
	ConditionSyncError               = "SyncError"
	ConditionUnknownError            = "UnknownError"
	ConditionDeletionError           = "DeletionError"
	ConditionSharedResourceWarning   = "SharedResourceWarning"
	ConditionRepeatedResourceWarning = "RepeatedResourceWarning"
	ConditionExcludedResourceWarning = "ExcludedResourceWarning"
	ConditionOrphanedResourceWarning = "OrphanedResourceWarning"
)

// ApplicationStatus is what the controller observed and did.
type ApplicationStatus struct {
	// Resources are the Application's objects, sorted by group, kind,
	// namespace and name.
	// +optional
	Resources []ResourceStatus `json:"resources,omitempty"`
	// +optional
	Sync SyncStatus `json:"sync,omitempty"`
	// +optional
	Health AppHealthStatus `json:"health,omitempty"`
	// History has one entry per full successful sync, oldest first.
	// +optional
	History []RevisionHistory `json:"history,omitempty"`
	// +optional
	Conditions []ApplicationCondition `json:"conditions,omitempty"`
	// ReconciledAt is the time of the last comparison with the source.
	// +optional
	ReconciledAt *metav1.Time `json:"reconciledAt,omitempty"`
	// +optional
	OperationState *OperationState `json:"operationState,omitempty"`
	// ObservedAt is deprecated and not written.
	// +optional
	ObservedAt *metav1.Time `json:"observedAt,omitempty"`
	// +optional
	SourceType string `json:"sourceType,omitempty"`
	// +optional
	Summary ApplicationSummary `json:"summary,omitempty"`
	// +optional
	ResourceHealthSource string `json:"resourceHealthSource,omitempty"`
	// +optional
	SourceTypes []string `json:"sourceTypes,omitempty"`
	// +optional
	ControllerNamespace string `json:"controllerNamespace,omitempty"`
	// SourceHydrator is the source hydrator's status; stored, not written.
	// +optional
	SourceHydrator *apiextensionsv1.JSON `json:"sourceHydrator,omitempty"`
}

// SyncStatus is the last comparison's result.
type SyncStatus struct {
	// Status is Synced, OutOfSync or Unknown.
	Status string `json:"status"`
	// +optional
	ComparedTo ComparedTo `json:"comparedTo,omitempty"`
	// Revision is the commit SHA (or chart version) compared against; empty
	// for multi-source Applications, which fill Revisions.
	// +optional
	Revision string `json:"revision,omitempty"`
	// +optional
	Revisions []string `json:"revisions,omitempty"`
}

// ComparedTo is the spec the last comparison used.
type ComparedTo struct {
	// +optional
	Source      ApplicationSource      `json:"source,omitempty"`
	Destination ApplicationDestination `json:"destination"`
	// +optional
	Sources []ApplicationSource `json:"sources,omitempty"`
	// +optional
	IgnoreDifferences []ResourceIgnoreDifferences `json:"ignoreDifferences,omitempty"`
}

// AppHealthStatus is the Application's aggregated health.
type AppHealthStatus struct {
	// +optional
	Status string `json:"status,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// LastTransitionTime is set when Status changes.
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// HealthStatus is one object's health.
type HealthStatus struct {
	// +optional
	Status string `json:"status,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// ResourceStatus is one object of the Application.
type ResourceStatus struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// Status is Synced, OutOfSync or Unknown; empty for hooks.
	// +optional
	Status string `json:"status,omitempty"`
	// +optional
	Health *HealthStatus `json:"health,omitempty"`
	// +optional
	Hook bool `json:"hook,omitempty"`
	// +optional
	RequiresPruning bool `json:"requiresPruning,omitempty"`
	// +optional
	SyncWave int64 `json:"syncWave,omitempty"`
	// +optional
	RequiresDeletionConfirmation bool `json:"requiresDeletionConfirmation,omitempty"`
}

// ApplicationCondition is a problem or warning.
type ApplicationCondition struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	// +optional
	LastTransitionTime *metav1.Time `json:"lastTransitionTime,omitempty"`
}

// ApplicationSummary is the images and external URLs of the objects.
type ApplicationSummary struct {
	// +optional
	ExternalURLs []string `json:"externalURLs,omitempty"`
	// +optional
	Images []string `json:"images,omitempty"`
	// +optional
	IsAppOfApps bool `json:"isAppOfApps,omitempty"`
}

// RevisionHistory is one full successful sync.
type RevisionHistory struct {
	// +optional
	Revision   string      `json:"revision,omitempty"`
	DeployedAt metav1.Time `json:"deployedAt"`
	ID         int64       `json:"id"`
	// +optional
	Source ApplicationSource `json:"source,omitempty"`
	// +optional
	DeployStartedAt *metav1.Time `json:"deployStartedAt,omitempty"`
	// +optional
	Sources []ApplicationSource `json:"sources,omitempty"`
	// +optional
	Revisions []string `json:"revisions,omitempty"`
	// +optional
	InitiatedBy OperationInitiator `json:"initiatedBy,omitempty"`
}
