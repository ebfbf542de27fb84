package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kind names.
const (
	ApplicationKind = "Application"
	AppProjectKind  = "AppProject"
)

// Application is a group of Kubernetes objects rendered from one or more
// sources and kept equal to them in a destination cluster and namespace.
// Like Argo CD's, it has no status subresource: the controller writes
// status, operation, finalizers and the normalised spec on the object
// itself.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=applications,shortName=app;apps
// +kubebuilder:printcolumn:name="Sync Status",type=string,JSONPath=".status.sync.status"
// +kubebuilder:printcolumn:name="Health Status",type=string,JSONPath=".status.health.status"
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=".status.sync.revision",priority=10
// +kubebuilder:printcolumn:name="Project",type=string,JSONPath=".spec.project",priority=10
type Application struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              ApplicationSpec   `json:"spec"`
	Status            ApplicationStatus `json:"status,omitempty"`
	// Operation is a requested sync; the controller clears it when the
	// operation ends.
	// +optional
	Operation *Operation `json:"operation,omitempty"`
}

// ApplicationList is a list of Applications.
//
// +kubebuilder:object:root=true
type ApplicationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []Application `json:"items"`
}

// ApplicationSpec is what an Application renders and where it applies it.
type ApplicationSpec struct {
	// Source is the one source; ignored when Sources is not empty.
	// +optional
	Source *ApplicationSource `json:"source,omitempty"`
	// Destination is the cluster and namespace the objects go to.
	Destination ApplicationDestination `json:"destination"`
	// Project is the AppProject whose rules apply; empty means "default".
	Project string `json:"project"`
	// SyncPolicy says when and how to sync.
	// +optional
	SyncPolicy *SyncPolicy `json:"syncPolicy,omitempty"`
	// IgnoreDifferences leaves fields out of the comparison.
	// +optional
	IgnoreDifferences []ResourceIgnoreDifferences `json:"ignoreDifferences,omitempty"`
	// Info is free-form, shown by the UI.
	// +optional
	Info []Info `json:"info,omitempty"`
	// RevisionHistoryLimit bounds status.history; default 10.
	// +optional
	RevisionHistoryLimit *int64 `json:"revisionHistoryLimit,omitempty"`
	// Sources, when not empty, replaces Source (multi-source).
	// +optional
	Sources []ApplicationSource `json:"sources,omitempty"`
	// SourceHydrator is Argo CD's source hydrator; stored, not acted on.
	// +optional
	SourceHydrator *apiextensionsv1.JSON `json:"sourceHydrator,omitempty"`
}

// ApplicationDestination is a cluster, by Server URL or by Name, and a
// namespace.
type ApplicationDestination struct {
	// Server is the cluster's API URL; https://kubernetes.default.svc is
	// the cluster the controller runs in.
	// +optional
	Server string `json:"server,omitempty"`
	// Namespace is given to namespaced objects that have none.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Name is a cluster Secret's name; "in-cluster" is the controller's.
	// +optional
	Name string `json:"name,omitempty"`
}

// ResourceIgnoreDifferences selects objects (Group and Kind are globs) and
// the fields of theirs the comparison ignores.
type ResourceIgnoreDifferences struct {
	// +optional
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// JSONPointers are RFC 6901 pointers.
	// +optional
	JSONPointers []string `json:"jsonPointers,omitempty"`
	// JQPathExpressions are jq path expressions.
	// +optional
	JQPathExpressions []string `json:"jqPathExpressions,omitempty"`
	// ManagedFieldsManagers: fields these field managers own are ignored.
	// +optional
	ManagedFieldsManagers []string `json:"managedFieldsManagers,omitempty"`
}

// Info is a name and a value.
type Info struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SyncPolicy says when and how an Application syncs.
type SyncPolicy struct {
	// Automated, when set (and not enabled: false), syncs on its own.
	// +optional
	Automated *SyncPolicyAutomated `json:"automated,omitempty"`
	// SyncOptions are "Key=value" options (CreateNamespace=true, ...).
	// +optional
	SyncOptions []string `json:"syncOptions,omitempty"`
	// Retry is the retry strategy of failed syncs.
	// +optional
	Retry *RetryStrategy `json:"retry,omitempty"`
	// ManagedNamespaceMetadata is set on a namespace CreateNamespace makes.
	// +optional
	ManagedNamespaceMetadata *ManagedNamespaceMetadata `json:"managedNamespaceMetadata,omitempty"`
}

// SyncPolicyAutomated is automated sync's settings.
type SyncPolicyAutomated struct {
	// Prune deletes objects no longer rendered.
	// +optional
	Prune *bool `json:"prune,omitempty"`
	// SelfHeal syncs again when the live state drifts.
	// +optional
	SelfHeal *bool `json:"selfHeal,omitempty"`
	// AllowEmpty allows a sync that prunes every object.
	// +optional
	AllowEmpty *bool `json:"allowEmpty,omitempty"`
	// Enabled: false turns automated sync off, keeping the settings; nil
	// means true.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// RetryStrategy is how often and how soon a failed sync is tried again.
type RetryStrategy struct {
	// Limit is the number of retries: 0 none, -1 unlimited.
	// +optional
	Limit int64 `json:"limit,omitempty"`
	// +optional
	Backoff *Backoff `json:"backoff,omitempty"`
	// Refresh retries with the latest revision.
	// +optional
	Refresh bool `json:"refresh,omitempty"`
}

// Backoff is the wait before a retry: Duration × Factor^n, at most
// MaxDuration (defaults 5s, 2, 3m).
type Backoff struct {
	// Duration is a Go duration or a number of seconds.
	// +optional
	Duration string `json:"duration,omitempty"`
	// +optional
	Factor *int64 `json:"factor,omitempty"`
	// +optional
	MaxDuration string `json:"maxDuration,omitempty"`
}

// ManagedNamespaceMetadata is labels and annotations for a created namespace.
type ManagedNamespaceMetadata struct {
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}
