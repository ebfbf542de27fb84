package v1beta3

import (
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AlertKind is the kind name of Alert.
const AlertKind = "Alert"

// Event severities an Alert filters on (spec.eventSeverity).
const (
	// SeverityInfo accepts info and error events.
	SeverityInfo = "info"
	// SeverityError accepts error events only.
	SeverityError = "error"
)

// AlertSpec selects events and the Provider they are sent to.
// Flux compatible: field names, defaults and validation of
// notification-controller's api/v1beta3 AlertSpec.
type AlertSpec struct {
	// ProviderRef names the Provider, in the Alert's namespace.
	// +required
	ProviderRef meta.LocalObjectReference `json:"providerRef"`

	// EventSeverity: info (info and error events) or error (error only).
	// +kubebuilder:validation:Enum=info;error
	// +kubebuilder:default:=info
	// +optional
	EventSeverity string `json:"eventSeverity,omitempty"`

	// EventSources select events by involved object kind, name (or `*` with
	// matchLabels) and namespace (default the Alert's).
	// +required
	EventSources []notificationv1.CrossNamespaceObjectReference `json:"eventSources"`

	// InclusionList: when set, a message must match one of these Go regexps.
	// +optional
	InclusionList []string `json:"inclusionList,omitempty"`

	// EventMetadata is added to each event's metadata; it never overrides
	// keys the emitter set.
	// +optional
	EventMetadata map[string]string `json:"eventMetadata,omitempty"`

	// ExclusionList: a message matching any of these Go regexps is dropped.
	// +optional
	ExclusionList []string `json:"exclusionList,omitempty"`

	// Summary is deprecated: use eventMetadata.summary.
	// +kubebuilder:validation:MaxLength:=255
	// +optional
	Summary string `json:"summary,omitempty"`

	// Suspend stops this Alert from dispatching events.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// Alert routes matching events to a Provider.
//
// +kubebuilder:object:root=true
// +kubebuilder:deprecatedversion:warning="v1beta3 Alert is deprecated, upgrade to v1"
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
// +kubebuilder:resource:categories=fluxcd;fluxcd-notifications
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
type Alert struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec AlertSpec `json:"spec,omitempty"`
}

// AlertList is a list of Alerts.
//
// +kubebuilder:object:root=true
type AlertList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Alert `json:"items"`
}

// IsSuspended returns spec.suspend.
func (in *Alert) IsSuspended() bool { return in.Spec.Suspend }

// GetConditions returns nil: an Alert has no status (as in Flux), so no
// conditions; it is ready once the API server accepts it.
func (in *Alert) GetConditions() []metav1.Condition { return nil }

// GetObservedGeneration returns 0: an Alert has no status.
func (in *Alert) GetObservedGeneration() int64 { return 0 }

// GetLastHandledReconcileRequest returns "": an Alert has no status, no
// controller answers its reconcile requests.
func (in *Alert) GetLastHandledReconcileRequest() string { return "" }
