package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ProviderKind is the kind name of Provider.
const ProviderKind = "Provider"

// Provider types (spec.type). The enum admits every Flux type; Eddy delivers
// to those its notification-controller implements (its notifier.Supported)
// and reports the others on the Alert.
const (
	SlackProvider           = "slack"
	DiscordProvider         = "discord"
	MSTeamsProvider         = "msteams"
	RocketProvider          = "rocket"
	GenericProvider         = "generic"
	GenericHMACProvider     = "generic-hmac"
	GitHubProvider          = "github"
	GitLabProvider          = "gitlab"
	GiteaProvider           = "gitea"
	BitbucketServerProvider = "bitbucketserver"
	BitbucketProvider       = "bitbucket"
	AzureDevOpsProvider     = "azuredevops"
	MastodonProvider        = "mastodon"
)

// DefaultProviderTimeoutSeconds applies when spec.timeout is unset: 15s. Flux compatible.
const DefaultProviderTimeoutSeconds = 15

// ProviderSpec is where and how alerts are sent.
// Flux compatible: field names and validation of notification-controller's
// api/v1 ProviderSpec (v1.10): v1beta3's without the deprecated `interval`
// and `proxy`.
//
// +kubebuilder:validation:XValidation:rule="self.type == 'github' || self.type == 'gitlab' || self.type == 'gitea' || self.type == 'bitbucketserver' || self.type == 'bitbucket' || self.type == 'azuredevops' || !has(self.commitStatusExpr)",message="spec.commitStatusExpr is only supported for the 'github', 'gitlab', 'gitea', 'bitbucketserver', 'bitbucket', 'azuredevops' provider types"
type ProviderSpec struct {
	// Type of the provider.
	// +kubebuilder:validation:Enum=slack;discord;msteams;rocket;generic;generic-hmac;github;gitlab;gitea;giteapullrequestcomment;bitbucketserver;bitbucket;azuredevops;googlechat;googlepubsub;webex;sentry;azureeventhub;telegram;lark;matrix;opsgenie;alertmanager;grafana;githubdispatch;githubpullrequestcomment;gitlabmergerequestcomment;pagerduty;datadog;nats;zulip;otel;zoom;incident.io;mastodon
	// +required
	Type string `json:"type"`

	// Channel to post to (slack: overrides the webhook's default channel).
	// +kubebuilder:validation:MaxLength:=2048
	// +optional
	Channel string `json:"channel,omitempty"`

	// Username to post as; default the reporting controller's name.
	// +kubebuilder:validation:MaxLength:=2048
	// +optional
	Username string `json:"username,omitempty"`

	// Address is the endpoint: a webhook URL, or for github/gitlab the
	// repository URL (https://host/owner/repo). The secret's `address` key
	// takes precedence.
	// +kubebuilder:validation:MaxLength:=2048
	// +optional
	Address string `json:"address,omitempty"`

	// Timeout of one delivery attempt; default 15s.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// ProxySecretRef names a Secret with `address` and optional
	// `username`/`password` of an HTTP proxy.
	// +optional
	ProxySecretRef *meta.LocalObjectReference `json:"proxySecretRef,omitempty"`

	// SecretRef names a Secret with keys `address`, `token`,
	// `username`/`password`, `headers` (a YAML map) and legacy `proxy`.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// ServiceAccountName for workload identity (azureeventhub, azuredevops, googlepubsub).
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// CertSecretRef names a Secret with `ca.crt`, `tls.crt`, `tls.key`.
	// +optional
	CertSecretRef *meta.LocalObjectReference `json:"certSecretRef,omitempty"`

	// Suspend stops delivery through this provider.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// CommitStatusExpr is a CEL expression for the commit status id of git providers.
	// +optional
	CommitStatusExpr string `json:"commitStatusExpr,omitempty"`
}

// Provider is an alert destination.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
// +kubebuilder:resource:categories=fluxcd;fluxcd-notifications
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
type Provider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ProviderSpec `json:"spec,omitempty"`
}

// ProviderList is a list of Providers.
//
// +kubebuilder:object:root=true
type ProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Provider `json:"items"`
}

// IsSuspended returns spec.suspend.
func (in *Provider) IsSuspended() bool { return in.Spec.Suspend }

// GetConditions returns nil: a Provider has no status (as in Flux), so no
// conditions; it is ready once the API server accepts it.
func (in *Provider) GetConditions() []metav1.Condition { return nil }

// GetObservedGeneration returns 0: a Provider has no status.
func (in *Provider) GetObservedGeneration() int64 { return 0 }

// GetLastHandledReconcileRequest returns "": a Provider has no status, no
// controller answers its reconcile requests.
func (in *Provider) GetLastHandledReconcileRequest() string { return "" }
