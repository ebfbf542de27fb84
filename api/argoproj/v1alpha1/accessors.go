package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Annotations, labels and finalizers Argo CD reads and writes, with Argo
// CD's names (common/common.go, application_annotations.go).
const (
	AnnotationTrackingID       = "argocd.argoproj.io/tracking-id"
	AnnotationRefresh          = "argocd.argoproj.io/refresh"
	AnnotationSkipReconcile    = "argocd.argoproj.io/skip-reconcile"
	AnnotationSyncWave         = "argocd.argoproj.io/sync-wave"
	AnnotationHook             = "argocd.argoproj.io/hook"
	AnnotationHookDeletePolicy = "argocd.argoproj.io/hook-delete-policy"
	AnnotationSyncOptions      = "argocd.argoproj.io/sync-options"
	AnnotationCompareOptions   = "argocd.argoproj.io/compare-options"
	AnnotationIgnoreHealth     = "argocd.argoproj.io/ignore-healthcheck"
	AnnotationDeletionApproved = "argocd.argoproj.io/deletion-approved"

	// LabelSecretType marks Argo CD's declarative Secrets: "repository",
	// "repo-creds" or "cluster".
	LabelSecretType = "argocd.argoproj.io/secret-type"

	FinalizerResources           = "resources-finalizer.argocd.argoproj.io"
	FinalizerResourcesForeground = "resources-finalizer.argocd.argoproj.io/foreground"
	FinalizerResourcesBackground = "resources-finalizer.argocd.argoproj.io/background"
	FinalizerHook                = "argocd.argoproj.io/hook-finalizer"

	// DefaultProject is the project of an Application that names none.
	DefaultProject = "default"
	// InClusterServer and InClusterName address the controller's cluster.
	InClusterServer = "https://kubernetes.default.svc"
	InClusterName   = "in-cluster"
	// DefaultRevisionHistoryLimit is spec.revisionHistoryLimit's default.
	DefaultRevisionHistoryLimit = 10
)

// GetSources returns spec.sources when it is not empty, else spec.source
// alone (nil when neither is set).
func (in *Application) GetSources() []ApplicationSource {
	if len(in.Spec.Sources) > 0 {
		return in.Spec.Sources
	}
	if in.Spec.Source != nil {
		return []ApplicationSource{*in.Spec.Source}
	}
	return nil
}

// IsMultiSource is true when spec.sources is used.
func (in *Application) IsMultiSource() bool { return len(in.Spec.Sources) > 0 }

// GetProject returns spec.project, "default" when empty.
func (in *Application) GetProject() string {
	if in.Spec.Project == "" {
		return DefaultProject
	}
	return in.Spec.Project
}

// InstanceName is the name tracking ids use: the Application's name in
// the controller's namespace, `<namespace>_<name>` elsewhere.
func (in *Application) InstanceName(controllerNamespace string) string {
	if in.Namespace == controllerNamespace || in.Namespace == "" {
		return in.Name
	}
	return in.Namespace + "_" + in.Name
}

// IsAutomated is true when spec.syncPolicy.automated is set and not
// enabled: false.
func (in *Application) IsAutomated() bool {
	p := in.Spec.SyncPolicy
	return p != nil && p.Automated != nil && (p.Automated.Enabled == nil || *p.Automated.Enabled)
}

// GetRevisionHistoryLimit returns spec.revisionHistoryLimit, 10 when unset.
func (in *Application) GetRevisionHistoryLimit() int64 {
	if in.Spec.RevisionHistoryLimit == nil {
		return DefaultRevisionHistoryLimit
	}
	return *in.Spec.RevisionHistoryLimit
}

// GetSyncOptions returns spec.syncPolicy.syncOptions.
func (in *Application) GetSyncOptions() []string {
	if in.Spec.SyncPolicy == nil {
		return nil
	}
	return in.Spec.SyncPolicy.SyncOptions
}

// GetSyncStatus returns status.sync.status.
func (in *Application) GetSyncStatus() string { return in.Status.Sync.Status }

// GetHealthStatus returns status.health.status.
func (in *Application) GetHealthStatus() string { return in.Status.Health.Status }

// IsPrune is automated.prune.
func (a *SyncPolicyAutomated) IsPrune() bool { return a != nil && a.Prune != nil && *a.Prune }

// IsSelfHeal is automated.selfHeal.
func (a *SyncPolicyAutomated) IsSelfHeal() bool { return a != nil && a.SelfHeal != nil && *a.SelfHeal }

// IsAllowEmpty is automated.allowEmpty.
func (a *SyncPolicyAutomated) IsAllowEmpty() bool {
	return a != nil && a.AllowEmpty != nil && *a.AllowEmpty
}

// The accessors every kind of Eddy's API offers (conditions, suspension,
// observed generation, last handled reconcile request), which the eddy
// command reads of each kind it lists. Argo CD's Application keeps none of
// Flux's status protocol, so they answer what Argo CD records instead.

// IsSuspended is true when the argocd.argoproj.io/skip-reconcile annotation
// is "true": Argo CD's controller (and application-controller) then leaves
// the Application alone, as a Flux controller leaves a suspended object.
func (in *Application) IsSuspended() bool { return in.Annotations[AnnotationSkipReconcile] == "true" }

// GetConditions returns nil: an Application's status.conditions are Argo
// CD's ApplicationConditions (errors and warnings, without a status), none
// of them a Flux condition; its state is status.sync and status.health.
func (in *Application) GetConditions() []metav1.Condition { return nil }

// GetObservedGeneration returns 0: Argo CD records no observed generation.
func (in *Application) GetObservedGeneration() int64 { return 0 }

// GetLastHandledReconcileRequest returns "": Argo CD is asked to compare
// again by the argocd.argoproj.io/refresh annotation, which it removes when
// done, not by a request it records as handled.
func (in *Application) GetLastHandledReconcileRequest() string { return "" }

// IsSuspended returns false: nothing suspends an AppProject.
func (in *AppProject) IsSuspended() bool { return false }

// GetConditions returns nil: no controller writes an AppProject's status
// (Argo CD keeps its roles' tokens there).
func (in *AppProject) GetConditions() []metav1.Condition { return nil }

// GetObservedGeneration returns 0: an AppProject's status records none.
func (in *AppProject) GetObservedGeneration() int64 { return 0 }

// GetLastHandledReconcileRequest returns "": no controller reconciles an
// AppProject on request.
func (in *AppProject) GetLastHandledReconcileRequest() string { return "" }
