package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AppProject groups Applications and restricts what they may render, from
// where, and where they may apply it.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:path=appprojects,shortName=appproj;appprojs
type AppProject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              AppProjectSpec `json:"spec"`
	// Status holds Argo CD's JWT tokens by role; stored, not written.
	// +optional
	Status *apiextensionsv1.JSON `json:"status,omitempty"`
}

// AppProjectList is a list of AppProjects.
//
// +kubebuilder:object:root=true
type AppProjectList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []AppProject `json:"items"`
}

// AppProjectSpec is a project's restrictions. Globs allow `*`; a leading
// `!` denies.
type AppProjectSpec struct {
	// SourceRepos are the repository URLs sources may come from.
	// +optional
	SourceRepos []string `json:"sourceRepos,omitempty"`
	// Destinations are the clusters and namespaces Applications may use.
	// +optional
	Destinations []ApplicationDestination `json:"destinations,omitempty"`
	// +optional
	Description string `json:"description,omitempty"`
	// Roles are Argo CD's RBAC roles; stored, not acted on.
	// +optional
	Roles *apiextensionsv1.JSON `json:"roles,omitempty"`
	// ClusterResourceWhitelist: the cluster-scoped kinds allowed (empty
	// allows none).
	// +optional
	ClusterResourceWhitelist []ClusterResourceRestrictionItem `json:"clusterResourceWhitelist,omitempty"`
	// +optional
	NamespaceResourceBlacklist []metav1.GroupKind `json:"namespaceResourceBlacklist,omitempty"`
	// +optional
	OrphanedResources *OrphanedResourcesMonitorSettings `json:"orphanedResources,omitempty"`
	// SyncWindows are stored, not acted on.
	// +optional
	SyncWindows *apiextensionsv1.JSON `json:"syncWindows,omitempty"`
	// +optional
	NamespaceResourceWhitelist []metav1.GroupKind `json:"namespaceResourceWhitelist,omitempty"`
	// +optional
	SignatureKeys *apiextensionsv1.JSON `json:"signatureKeys,omitempty"`
	// +optional
	ClusterResourceBlacklist []ClusterResourceRestrictionItem `json:"clusterResourceBlacklist,omitempty"`
	// +optional
	SourceNamespaces []string `json:"sourceNamespaces,omitempty"`
	// +optional
	PermitOnlyProjectScopedClusters bool `json:"permitOnlyProjectScopedClusters,omitempty"`
	// +optional
	DestinationServiceAccounts *apiextensionsv1.JSON `json:"destinationServiceAccounts,omitempty"`
	// +optional
	SourceIntegrity *apiextensionsv1.JSON `json:"sourceIntegrity,omitempty"`
}

// ClusterResourceRestrictionItem is a cluster-scoped kind (globs) and an
// optional name glob.
type ClusterResourceRestrictionItem struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	// +optional
	Name string `json:"name,omitempty"`
}

// OrphanedResourcesMonitorSettings turns on orphaned-object warnings.
type OrphanedResourcesMonitorSettings struct {
	// +optional
	Warn *bool `json:"warn,omitempty"`
	// +optional
	Ignore []OrphanedResourceKey `json:"ignore,omitempty"`
}

// OrphanedResourceKey is an object orphaned-object warnings leave out.
type OrphanedResourceKey struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
}
