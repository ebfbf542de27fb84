package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ReceiverKind is the kind name of Receiver.
const ReceiverKind = "Receiver"

// ReceiverWebhookPath prefixes every receiver's path:
// `/hook/<hex sha256(token + name + namespace)>`. Flux compatible.
const ReceiverWebhookPath = "/hook/"

// Receiver types (spec.type).
const (
	GenericReceiver     = "generic"
	GenericHMACReceiver = "generic-hmac"
	GenericOIDCReceiver = "generic-oidc"
	GitHubReceiver      = "github"
	GitLabReceiver      = "gitlab"
	BitbucketReceiver   = "bitbucket"
	HarborReceiver      = "harbor"
	DockerHubReceiver   = "dockerhub"
	QuayReceiver        = "quay"
	GCRReceiver         = "gcr"
	NexusReceiver       = "nexus"
	ACRReceiver         = "acr"
	CDEventsReceiver    = "cdevents"
)

// Condition reasons of a Receiver's Ready condition besides meta.SucceededReason.
// Flux compatible.
const (
	// TokenNotFoundReason: spec.secretRef is not set, or its Secret or the
	// Secret's `token` key is missing (Ready=False, status.webhookPath
	// cleared; retried with the work queue's back-off).
	TokenNotFoundReason = "TokenNotFound"
	// ValidationFailedReason: the spec asks for a receiver type Eddy does
	// not serve (generic-oidc) (Ready=False, status.webhookPath cleared;
	// checked again at spec.interval).
	ValidationFailedReason = "ValidationFailed"
	// InvalidCELExpressionReason: spec.resourceFilter or a
	// resources[].filter does not compile (Ready=False, Stalled=True).
	InvalidCELExpressionReason = "InvalidCELExpression"
)

// ReceiverSpec is a webhook endpoint that requests reconciles of Flux objects.
// Flux compatible: field names, defaults and validation of
// notification-controller's api/v1 ReceiverSpec.
//
// +kubebuilder:validation:XValidation:rule="self.type != 'generic-oidc' || (has(self.oidcProviders) && size(self.oidcProviders) > 0)",message="generic-oidc receivers must define at least one oidcProvider"
// +kubebuilder:validation:XValidation:rule="self.type == 'generic-oidc' || !has(self.oidcProviders) || size(self.oidcProviders) == 0",message="oidcProviders can only be set when type is generic-oidc"
// +kubebuilder:validation:XValidation:rule="self.type == 'generic-oidc' || has(self.secretRef)",message="secretRef is required when type is not generic-oidc"
type ReceiverSpec struct {
	// Type of the webhook sender; it selects how a request is verified.
	// +kubebuilder:validation:Enum=generic;generic-hmac;generic-oidc;github;gitlab;bitbucket;harbor;dockerhub;quay;gcr;nexus;acr;cdevents
	// +required
	Type string `json:"type"`

	// Interval at which the Receiver is reconciled with its secret; default 10m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:default:="10m"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Events lists the event types handled (case-insensitive), e.g. `push`
	// for GitHub or `Push Hook` for GitLab; empty means all.
	// +optional
	Events []string `json:"events,omitempty"`

	// Resources whose reconcile is requested when a webhook is accepted.
	// +required
	Resources []ReceiverResource `json:"resources"`

	// ResourceFilter is a CEL expression over `res` and `req` that must
	// return true for a resource to be notified.
	// +optional
	ResourceFilter string `json:"resourceFilter,omitempty"`

	// SecretRef names a Secret in the same namespace with key `token`
	// (gcr also `email` and `audience`); required except for generic-oidc.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`

	// OIDCProviders authenticate generic-oidc requests.
	// +listType=map
	// +listMapKey=issuerURL
	// +optional
	OIDCProviders []OIDCProvider `json:"oidcProviders,omitempty"`

	// Suspend stops handling webhooks (they are answered 503).
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ReceiverResource is a resource to notify, with an optional CEL filter.
type ReceiverResource struct {
	CrossNamespaceObjectReference `json:",inline"`

	// Filter is a CEL expression over `res` and `req`, ANDed with resourceFilter.
	// +optional
	Filter string `json:"filter,omitempty"`
}

// OIDCProvider is an OIDC issuer trusted by a generic-oidc Receiver.
type OIDCProvider struct {
	// IssuerURL must equal the token's `iss` claim.
	// +kubebuilder:validation:Pattern="^https?://"
	// +required
	IssuerURL string `json:"issuerURL"`

	// Audience expected in the token's `aud` claim; default `notification-controller`.
	// +optional
	Audience string `json:"audience,omitempty"`

	// Variables are named CEL expressions over `claims`, exposed as `vars.<name>`.
	// +optional
	Variables []OIDCVariable `json:"variables,omitempty"`

	// Validations must all return true for a request to be accepted.
	// +kubebuilder:validation:MinItems=1
	// +required
	Validations []OIDCValidation `json:"validations"`
}

// OIDCVariable is a named CEL expression.
type OIDCVariable struct {
	// Name is a CEL identifier.
	// +required
	Name string `json:"name"`

	// Expression computes the variable's value.
	// +required
	Expression string `json:"expression"`
}

// OIDCValidation is a CEL boolean expression with the message returned when false.
type OIDCValidation struct {
	// Expression must return a boolean.
	// +required
	Expression string `json:"expression"`

	// Message is returned to the caller when the expression is false.
	// +required
	Message string `json:"message"`
}

// ReceiverStatus is the observed state of a Receiver.
type ReceiverStatus struct {
	meta.ReconcileRequestStatus `json:",inline"`

	// Conditions: Ready.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// WebhookPath is `/hook/<hex sha256(token + name + namespace)>`.
	// +optional
	WebhookPath string `json:"webhookPath,omitempty"`

	// ObservedGeneration is the last generation reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// Receiver turns webhooks into reconcile requests.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
// +kubebuilder:resource:categories=fluxcd;fluxcd-notifications
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
type Receiver struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ReceiverSpec `json:"spec,omitempty"`
	// +kubebuilder:default:={"observedGeneration":-1}
	Status ReceiverStatus `json:"status,omitempty"`
}

// ReceiverList is a list of Receivers.
//
// +kubebuilder:object:root=true
type ReceiverList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Receiver `json:"items"`
}

// GetConditions returns the status conditions of the Receiver.
func (in *Receiver) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions of the Receiver.
func (in *Receiver) SetConditions(conditions []metav1.Condition) { in.Status.Conditions = conditions }

// GetObservedGeneration returns status.observedGeneration: the generation
// of the spec last reconciled.
func (in *Receiver) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *Receiver) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt: the
// last reconcile.fluxcd.io/requestedAt value a reconcile handled.
func (in *Receiver) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *Receiver) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended returns spec.suspend.
func (in *Receiver) IsSuspended() bool { return in.Spec.Suspend }
