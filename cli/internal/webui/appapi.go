package webui

import "time"

// The JSON of Argo CD Applications (argoproj.io/v1alpha1), apart from the
// Flux objects' Summary and Detail: an Application has its own statuses
// (sync and health) and an operation field instead of Flux's conditions
// and reconcile requests.

// AppSummary is one Application in the overview (Objects.Apps), with the
// columns of `argocd app list` (argocd-contract: the CLI's app list).
type AppSummary struct {
	Ref
	Project string `json:"project"`
	// Sync is status.sync.status: "Synced", "OutOfSync", "Unknown" or ""
	// (not compared yet).
	Sync string `json:"sync"`
	// Health is status.health.status: "Healthy", "Progressing",
	// "Degraded", "Suspended", "Missing", "Unknown" or "".
	Health        string `json:"health"`
	HealthMessage string `json:"healthMessage,omitempty"`
	// SyncPolicy is "Manual", "Auto" or "Auto-Prune".
	SyncPolicy string `json:"syncPolicy"`
	// Revision is the compared revision (status.sync.revision).
	Revision string `json:"revision"`
	// RepoURL, Path and TargetRevision are the first source's.
	RepoURL        string `json:"repoURL"`
	Path           string `json:"path,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
	// DestServer is the destination's server URL, else its cluster name.
	DestServer    string `json:"destServer"`
	DestNamespace string `json:"destNamespace,omitempty"`
	// Conditions is the CONDITIONS column ("<none>", "SyncError(2)", …).
	Conditions string `json:"conditions"`
	// OperationPhase is status.operationState.phase ("" without one);
	// Operating is true while the operation field is set.
	OperationPhase string `json:"operationPhase,omitempty"`
	Operating      bool   `json:"operating,omitempty"`
}

// AppSource is one source of an Application (spec.source or spec.sources).
type AppSource struct {
	RepoURL        string `json:"repoURL"`
	Path           string `json:"path,omitempty"`
	Chart          string `json:"chart,omitempty"`
	TargetRevision string `json:"targetRevision,omitempty"`
	Ref            string `json:"ref,omitempty"`
}

// AppResource is one row of the resources table, as `argocd app get`
// builds it (app.ResourceStates).
type AppResource struct {
	Group     string `json:"group,omitempty"`
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Status    string `json:"status"` // sync status, or a hook's phase
	Health    string `json:"health"` // health, or a hook's sync result
	Hook      string `json:"hook,omitempty"`
	Message   string `json:"message,omitempty"`
}

// AppHistory is one status.history entry; Revision is the targetRevision
// with the deployed commit's first 7 digits, as `argocd app history`.
type AppHistory struct {
	ID          int64     `json:"id"`
	DeployedAt  time.Time `json:"deployedAt"`
	RepoURL     string    `json:"repoURL"`
	Revision    string    `json:"revision"`
	InitiatedBy string    `json:"initiatedBy,omitempty"` // username, or "automated"
}

// AppCondition is one status.conditions entry.
type AppCondition struct {
	Type               string     `json:"type"`
	Message            string     `json:"message"`
	LastTransitionTime *time.Time `json:"lastTransitionTime,omitempty"`
}

// AppOperation is status.operationState.
type AppOperation struct {
	Phase       string     `json:"phase"` // Running, Terminating, Failed, Error, Succeeded
	Message     string     `json:"message,omitempty"`
	Revision    string     `json:"revision,omitempty"` // the sync result's revision(s), comma-separated
	InitiatedBy string     `json:"initiatedBy,omitempty"`
	StartedAt   time.Time  `json:"startedAt"`
	FinishedAt  *time.Time `json:"finishedAt,omitempty"`
}

// AppDiffField is one field of the pending diff: Live and Desired are
// compact JSON, "" when that side has no field. A Secret's values are
// masked by the controller (pkg/appdiff), never sent.
type AppDiffField struct {
	Path    string `json:"path"`
	Live    string `json:"live"`
	Desired string `json:"desired"`
	Manager string `json:"manager,omitempty"`
}

// AppDiffObject is one object of the pending diff.
type AppDiffObject struct {
	Group     string         `json:"group,omitempty"`
	Kind      string         `json:"kind"`
	Namespace string         `json:"namespace,omitempty"`
	Name      string         `json:"name"`
	Fields    []AppDiffField `json:"fields"`
}

// AppDetail is GET /api/app/{namespace}/{name}.
type AppDetail struct {
	Summary AppSummary `json:"summary"`
	// SyncStatus is argocd's "Sync Status:" line ("Synced to HEAD (1a2b3c4)").
	SyncStatus  string         `json:"syncStatus"`
	Sources     []AppSource    `json:"sources"`
	DestName    string         `json:"destName,omitempty"`
	SyncOptions []string       `json:"syncOptions,omitempty"`
	SelfHeal    bool           `json:"selfHeal,omitempty"`
	Resources   []AppResource  `json:"resources"`
	History     []AppHistory   `json:"history"` // newest first
	Conditions  []AppCondition `json:"conditions"`
	Operation   *AppOperation  `json:"operation,omitempty"`
	// Diff is the pending diff (annotation eddy.dev/diff; without it the
	// OutOfSync objects alone); DiffError when the annotation is unreadable.
	Diff      []AppDiffObject `json:"diff"`
	DiffError string          `json:"diffError,omitempty"`
	Events    []Event         `json:"events"` // newest first
	// CanSync: the user may patch applications in the namespace
	// (SelfSubjectAccessReview), so the Sync button can work.
	CanSync bool `json:"canSync"`
}

// AppSync is the body of POST /api/app/{namespace}/{name}/sync (header
// X-CSRF-Token): the options of `eddy app sync` the page offers.
type AppSync struct {
	Prune  bool `json:"prune,omitempty"`
	DryRun bool `json:"dryRun,omitempty"`
}
