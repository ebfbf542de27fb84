package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// GitRepositoryKind is the kind name of GitRepository.
const GitRepositoryKind = "GitRepository"

// SymlinksAnnotation on a GitRepository chooses how source-controller
// archives the checkout's symbolic links. With the value SymlinksFollow, a
// link whose target (resolved through chains of links) stays inside the
// checkout and out of .git is archived as what it points to: a file's
// content as a regular file under the link's name, a directory as a copy
// of its tree (a link back to a directory being copied becomes an empty
// directory); a link that leaves the checkout (absolute, or climbing above
// the root) fails the artifact with "repository contains out-of-bounds
// symlinks. file: <path relative to the root>" (Argo CD's message and
// rule), one whose target is missing with "repository contains dangling
// symlinks. file: <path>"; the condition is StorageOperationFailed
// (ArchiveOperationFailed) and the previous artifact stays. Any other value,
// or no annotation, archives regular files and directories only, as Flux
// does, byte for byte. Beyond Flux: application-controller sets it on the
// GitRepositories it owns, so Argo CD Applications render linked
// manifests as Argo CD does.
const SymlinksAnnotation = "eddy.dev/symlinks"

// SymlinksFollow is the value of SymlinksAnnotation that follows links.
const SymlinksFollow = "follow"

// Authentication providers of GitRepository.spec.provider; unset means generic.
const (
	GitProviderGeneric = "generic"
	GitProviderAWS     = "aws"
	GitProviderAzure   = "azure"
	GitProviderGitHub  = "github"
)

// GitVerificationMode names which Git objects a signature check covers.
type GitVerificationMode string

// Verification modes; "head" is accepted as an alias of "HEAD" (Flux compatible).
const (
	ModeGitHEAD       GitVerificationMode = "HEAD"
	ModeGitTag        GitVerificationMode = "Tag"
	ModeGitTagAndHEAD GitVerificationMode = "TagAndHEAD"
)

// GitRepositorySpec is what to fetch from a Git server and how often.
// Flux compatible: field names, defaults and validation of source-controller's
// api/v1 GitRepositorySpec.
//
// +kubebuilder:validation:XValidation:rule="!has(self.serviceAccountName) || (has(self.provider) && (self.provider == 'azure' || self.provider == 'aws'))",message="serviceAccountName can only be set when provider is 'azure' or 'aws'"
type GitRepositorySpec struct {
	// URL of the repository: http://, https:// or ssh://.
	// +kubebuilder:validation:Pattern="^(http|https|ssh)://.*$"
	// +required
	URL string `json:"url"`

	// SecretRef names a Secret in the same namespace holding credentials:
	// `username`/`password` or `bearerToken` for HTTPS, `identity`/`known_hosts`
	// (and optional `password`) for SSH, `ca.crt` for a custom CA.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// Provider of the credentials: generic (the default), aws, azure or github.
	// Eddy: github (a GitHub App) and azure (the controller's Entra ID token
	// for Azure DevOps) are built; aws is refused (Stalled).
	// +kubebuilder:validation:Enum=generic;aws;azure;github
	// +optional
	Provider string `json:"provider,omitempty"`

	// ServiceAccountName whose workload identity authenticates; azure and aws only.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// Interval between checks of the remote for a new revision, e.g. 1m or 1h30m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required
	Interval metav1.Duration `json:"interval"`

	// Timeout bounds each Git operation (listing, clone, checkout); default 60s.
	// +kubebuilder:default="60s"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Reference to check out; without one the branch `master` is used.
	// +optional
	Reference *GitRepositoryRef `json:"ref,omitempty"`

	// Verification of commit or tag signatures (OpenPGP or SSH).
	// +optional
	Verification *GitRepositoryVerification `json:"verify,omitempty"`

	// ProxySecretRef names a Secret with `address`, `username` and `password`
	// of an HTTP proxy to reach the Git server through.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// Ignore holds .gitignore-syntax patterns excluded from the artifact; any
	// pattern here replaces the default exclusions.
	// +optional
	Ignore *string `json:"ignore,omitempty"`

	// Suspend stops reconciliation of this object until set back to false.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// RecurseSubmodules clones the repository's submodules too.
	// +optional
	RecurseSubmodules bool `json:"recurseSubmodules,omitempty"`

	// Include copies the artifacts of other GitRepositories into this one.
	// +optional
	Include []GitRepositoryInclude `json:"include,omitempty"`

	// SparseCheckout limits the checkout, and so the artifact, to these directories.
	// +optional
	SparseCheckout []string `json:"sparseCheckout,omitempty"`
}

// GitRepositoryInclude copies another GitRepository's artifact into this one.
type GitRepositoryInclude struct {
	// GitRepositoryRef names the GitRepository, in the same namespace, to include.
	// +required
	GitRepositoryRef meta.LocalObjectReference `json:"repository"`

	// FromPath is the directory of the included artifact to copy; default its root.
	// +optional
	FromPath string `json:"fromPath,omitempty"`

	// ToPath is where the copy lands in this artifact; default the included object's name.
	// +optional
	ToPath string `json:"toPath,omitempty"`
}

// GitRepositoryRef selects what to check out. Flux compatible precedence:
// commit, then name, then tag, then semver, then branch.
type GitRepositoryRef struct {
	// Branch to check out; `master` when no other field is set.
	// +optional
	Branch string `json:"branch,omitempty"`

	// Tag to check out.
	// +optional
	Tag string `json:"tag,omitempty"`

	// SemVer constraint; the highest matching tag is checked out.
	// +optional
	SemVer string `json:"semver,omitempty"`

	// Name of a full Git reference, e.g. refs/heads/main or refs/pull/1/head.
	// +optional
	Name string `json:"name,omitempty"`

	// Commit SHA to check out; with Branch, the branch is fetched and must
	// contain the commit. Beyond Flux (which takes the full 40 hex digits):
	// a prefix of 7 to 40 hex digits is accepted, resolved among the
	// fetched commits (all branches, or Branch's history) as Argo CD
	// resolves a truncated SHA; a prefix matching several commits stalls
	// with an error naming it. The artifact revision carries the full SHA.
	// +optional
	Commit string `json:"commit,omitempty"`
}

// GitRepositoryVerification asks for the signature of the checked-out
// commit and/or tag to be verified against trusted keys.
type GitRepositoryVerification struct {
	// Mode selects the objects verified: HEAD (the default, `head` is an alias), Tag or TagAndHEAD.
	// +kubebuilder:validation:Enum=head;HEAD;Tag;TagAndHEAD
	// +kubebuilder:default:=HEAD
	// +optional
	Mode GitVerificationMode `json:"mode,omitempty"`

	// SecretRef names a Secret whose `*.asc` keys hold PGP public keys and
	// whose `*.sshpub` keys hold SSH public keys.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`
}

// GitRepositoryStatus is what source-controller observed and produced.
type GitRepositoryStatus struct {
	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, ArtifactInStorage,
	// ArtifactOutdated, FetchFailed and the others of this package.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Artifact is the last artifact stored for this object.
	// +optional
	Artifact *meta.Artifact `json:"artifact,omitempty"`

	// IncludedArtifacts are the artifacts of spec.include last copied in.
	// +optional
	IncludedArtifacts []*meta.Artifact `json:"includedArtifacts,omitempty"`

	// ObservedIgnore is spec.ignore as used for the current artifact.
	// +optional
	ObservedIgnore *string `json:"observedIgnore,omitempty"`

	// ObservedRecurseSubmodules is spec.recurseSubmodules as used for the current artifact.
	// +optional
	ObservedRecurseSubmodules bool `json:"observedRecurseSubmodules,omitempty"`

	// ObservedInclude is spec.include as used for the current artifact.
	// +optional
	ObservedInclude []GitRepositoryInclude `json:"observedInclude,omitempty"`

	// ObservedSparseCheckout is spec.sparseCheckout as used for the current artifact.
	// +optional
	ObservedSparseCheckout []string `json:"observedSparseCheckout,omitempty"`

	// SourceVerificationMode is the verification mode last applied.
	// +optional
	SourceVerificationMode *GitVerificationMode `json:"sourceVerificationMode,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// GitRepository is a Git repository that source-controller fetches at
// spec.interval and packs into a tar.gz artifact.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=gitrepo,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.spec.url`
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
type GitRepository struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec GitRepositorySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status GitRepositoryStatus `json:"status,omitempty"`
}

// GitRepositoryList is a list of GitRepository.
//
// +kubebuilder:object:root=true
type GitRepositoryList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []GitRepository `json:"items"`
}

// GetConditions returns the status conditions of the GitRepository.
func (in *GitRepository) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions of the GitRepository.
func (in *GitRepository) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// GetObservedGeneration returns status.observedGeneration: the generation
// of the spec last reconciled.
func (in *GitRepository) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *GitRepository) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt: the
// last reconcile.fluxcd.io/requestedAt value a reconcile handled.
func (in *GitRepository) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *GitRepository) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended returns spec.suspend.
func (in *GitRepository) IsSuspended() bool { return in.Spec.Suspend }

// GetArtifact returns status.artifact, nil before the first one is stored.
func (in *GitRepository) GetArtifact() *meta.Artifact { return in.Status.Artifact }
