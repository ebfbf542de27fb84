package v1

import (
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/fluxcd/pkg/apis/meta"
)

// GitSpec is how an automation checks out, commits and pushes.
type GitSpec struct {
	// Checkout is the ref to clone and update; default the GitRepository's
	// spec.ref.
	// +optional
	Checkout *GitCheckoutSpec `json:"checkout,omitempty"`

	// Commit is how commits are authored, signed and described.
	// +required
	Commit CommitSpec `json:"commit"`

	// Push is where commits go; default the checked-out branch.
	// +optional
	Push *PushSpec `json:"push,omitempty"`
}

// HasRefspec is true when spec.git.push.refspec is set.
func (gs GitSpec) HasRefspec() bool { return gs.Push != nil && gs.Push.Refspec != "" }

// HasPullRequest is true when the Eddy extension
// spec.git.push.pullRequest is set.
func (gs GitSpec) HasPullRequest() bool { return gs.Push != nil && gs.Push.PullRequest != nil }

// GitCheckoutSpec is the ref an automation clones.
type GitCheckoutSpec struct {
	// Reference has the shape of a GitRepository's spec.ref (branch, tag,
	// semver, name, commit).
	// +required
	Reference sourcev1.GitRepositoryRef `json:"ref"`
}

// CommitSpec describes the commits an automation makes.
type CommitSpec struct {
	// Author of the commits (also their committer).
	// +required
	Author CommitUser `json:"author"`

	// SigningKey signs the commits.
	// +optional
	SigningKey *SigningKey `json:"signingKey,omitempty"`

	// MessageTemplate is a Go text/template (with sprig's hermetic text
	// functions) for the commit message, over `.AutomationObject`,
	// `.Changed` and `.Values`; default `Update from image update
	// automation`.
	// +optional
	MessageTemplate string `json:"messageTemplate,omitempty"`

	// MessageTemplateValues are offered to MessageTemplate as `.Values`.
	// +optional
	MessageTemplateValues map[string]string `json:"messageTemplateValues,omitempty"`
}

// CommitUser is a Git identity.
type CommitUser struct {
	// Name of the user; may be empty.
	// +optional
	Name string `json:"name,omitempty"`

	// Email of the user.
	// +required
	Email string `json:"email"`
}

// SigningKey names the key commits are signed with.
type SigningKey struct {
	// SecretRef names a Secret in the automation's namespace: for type gpg
	// key `git.asc` (an armored OpenPGP private key) and optionally
	// `passphrase`; for type ssh key `identity` (an OpenSSH private key:
	// ed25519, ecdsa or rsa of 2048 bits or more) and optionally
	// `password`.
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`

	// Type of the key: gpg (default) or ssh.
	// +optional
	Type SigningKeyType `json:"type,omitempty"`
}

// SigningKeyType is the kind of commit signature (spec.git.commit.signingKey.type).
//
// +kubebuilder:validation:Enum=gpg;ssh
type SigningKeyType string

const (
	// SigningKeyTypeGPG signs with OpenPGP.
	SigningKeyTypeGPG SigningKeyType = "gpg"
	// SigningKeyTypeSSH signs with an SSH key (Git's SSH signature format).
	SigningKeyTypeSSH SigningKeyType = "ssh"
)

// PushSpec says where commits are pushed.
//
// +kubebuilder:validation:XValidation:rule="!has(self.pullRequest) || (!has(self.branch) && !has(self.refspec))",message="spec.git.push.pullRequest excludes spec.git.push.branch and spec.git.push.refspec"
type PushSpec struct {
	// Branch to push to; created from the checked-out commit when it
	// differs from the checkout branch. Default the checkout branch.
	// +optional
	Branch string `json:"branch,omitempty"`

	// Refspec is pushed besides (or, without Branch, after the push to the
	// checkout branch), e.g. `refs/heads/auto:refs/for/main`.
	// +optional
	Refspec string `json:"refspec,omitempty"`

	// Options are Git push options, e.g. GitLab's
	// `merge_request.create: ""`.
	// +optional
	Options map[string]string `json:"options,omitempty"`

	// PullRequest is an Eddy extension, not part of Flux: instead of
	// pushing to a branch for someone else to merge, push to a branch named
	// from a template and open (or update) one pull request per automation
	// into the checkout branch through the provider's API; a pull request
	// superseded by a new branch is closed with a comment. Excludes Branch
	// and Refspec. Flux's controllers reject objects using it (unknown
	// field, pruned by their CRD).
	// +optional
	PullRequest *PullRequestSpec `json:"pullRequest,omitempty"`
}

// Pull request providers (spec.git.push.pullRequest.provider).
const (
	PullRequestGitHub = "github"
	PullRequestGitLab = "gitlab"
)

// PullRequestSpec is an Eddy extension, not part of Flux: the pull
// request (GitLab: merge request) an automation opens for its changes.
// The templates are Go text/templates over the commit message template's
// data (`.AutomationObject`, `.Changed`, `.Values`).
type PullRequestSpec struct {
	// Provider is the Git host's API: github or gitlab.
	// +kubebuilder:validation:Enum=github;gitlab
	// +required
	Provider string `json:"provider"`

	// BranchTemplate names the branch the changes are pushed to, e.g.
	// `image-updates/{{ .AutomationObject.Name }}`; the rendered name must
	// be a valid branch name. A rendered name differing from the open pull
	// request's branch supersedes that pull request.
	// +kubebuilder:validation:MinLength=1
	// +required
	BranchTemplate string `json:"branchTemplate"`

	// TitleTemplate renders the pull request's title; default the first
	// line of the commit message.
	// +optional
	TitleTemplate string `json:"titleTemplate,omitempty"`

	// BodyTemplate renders the pull request's body; default a list of each
	// changed image, old → new, with its file and line.
	// +optional
	BodyTemplate string `json:"bodyTemplate,omitempty"`

	// SecretRef names a Secret in the automation's namespace whose key
	// `token` is the API token (GitHub: a token with pull request write
	// access; GitLab: a token with api scope).
	// +required
	SecretRef meta.LocalObjectReference `json:"secretRef"`

	// APIURL is the base URL of the provider's API; default
	// `https://api.github.com` for github, `https://gitlab.com/api/v4` for
	// gitlab (set it for GitHub Enterprise or a self-hosted GitLab).
	// +kubebuilder:validation:Pattern="^https?://"
	// +optional
	APIURL string `json:"apiURL,omitempty"`
}
