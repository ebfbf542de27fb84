package v1

import (
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImageUpdateAutomationKind is the kind name of ImageUpdateAutomation.
const ImageUpdateAutomationKind = "ImageUpdateAutomation"

// DefaultMessageTemplate is the commit message of an automation without
// spec.git.commit.messageTemplate. Flux compatible.
const DefaultMessageTemplate = "Update from image update automation"

// ImageUpdateAutomationSpec writes the images its policies selected into
// a Git repository. Flux compatible: field names, defaults and validation
// of image-automation-controller's api/v1 (v2.10), plus the Eddy extension
// spec.git.push.pullRequest.
type ImageUpdateAutomationSpec struct {
	// SourceRef names the GitRepository to update; its URL, credentials,
	// proxy and timeout are used to clone and push.
	// +required
	SourceRef CrossNamespaceSourceReference `json:"sourceRef"`

	// GitSpec is how to check out, commit and push; required in practice
	// (without it the automation stalls).
	// +optional
	GitSpec *GitSpec `json:"git,omitempty"`

	// Interval between two runs, e.g. `30m`.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required
	Interval metav1.Duration `json:"interval"`

	// PolicyChangeDelay, new in Flux v2.10, batches policy changes: after
	// an ImagePolicy's selection changes the run waits this long so that
	// changes arriving meanwhile land in one commit. Unset or zero: run at
	// once.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	PolicyChangeDelay *metav1.Duration `json:"policyChangeDelay,omitempty"`

	// PolicySelector selects the ImagePolicies, in the automation's
	// namespace, whose selections are written; default all of them.
	// +optional
	PolicySelector *metav1.LabelSelector `json:"policySelector,omitempty"`

	// Update is how files are updated; default the Setters strategy over
	// the whole repository.
	// +kubebuilder:default={"strategy":"Setters"}
	Update *UpdateStrategy `json:"update,omitempty"`

	// Suspend stops the automation.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// UpdateStrategyName names an update strategy (spec.update.strategy).
//
// +kubebuilder:validation:Enum=Setters
type UpdateStrategyName string

// UpdateStrategySetters rewrites the fields marked with
// `# {"$imagepolicy": "<namespace>:<name>[:tag|:name|:digest]"}` comments.
const UpdateStrategySetters UpdateStrategyName = "Setters"

// UpdateStrategy is how and where files are updated.
type UpdateStrategy struct {
	// Strategy is Setters (the only one, the default).
	// +kubebuilder:default=Setters
	// +optional
	Strategy UpdateStrategyName `json:"strategy,omitempty"`

	// Path, relative to the repository root, below which files are
	// updated; default the root.
	// +optional
	Path string `json:"path,omitempty"`
}

// ImageUpdateAutomationStatus is what image-automation-controller did.
type ImageUpdateAutomationStatus struct {
	// LastAutomationRunTime is when the automation last ran to the end.
	// +optional
	LastAutomationRunTime *metav1.Time `json:"lastAutomationRunTime,omitempty"`

	// LastPushCommit is the full SHA-1 of the last commit pushed.
	// +optional
	LastPushCommit string `json:"lastPushCommit,omitempty"`

	// LastPushTime is when LastPushCommit was pushed.
	// +optional
	LastPushTime *metav1.Time `json:"lastPushTime,omitempty"`

	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedPolicies are the selections of the policies last applied,
	// by policy name.
	// +optional
	ObservedPolicies ObservedPolicies `json:"observedPolicies,omitempty"`

	// ObservedSourceRevision is the checkout branch's commit last seen,
	// `<branch>@sha1:<sha>`.
	// +optional
	ObservedSourceRevision string `json:"observedSourceRevision,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// ObservedPolicies maps an ImagePolicy's name to its selected image.
type ObservedPolicies map[string]ImageRef

// ImageUpdateAutomation commits the latest images of ImagePolicies into a
// Git repository.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
// +kubebuilder:resource:shortName=iua;imgupd;imgauto,categories=all;fluxcd;fluxcd-images
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:printcolumn:name="Last run",type="string",JSONPath=".status.lastAutomationRunTime",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
type ImageUpdateAutomation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ImageUpdateAutomationSpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status ImageUpdateAutomationStatus `json:"status,omitempty"`
}

// ImageUpdateAutomationList is a list of ImageUpdateAutomations.
//
// +kubebuilder:object:root=true
type ImageUpdateAutomationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImageUpdateAutomation `json:"items"`
}

// GetRequeueAfter is spec.interval: the time between two runs.
func (in *ImageUpdateAutomation) GetRequeueAfter() time.Duration {
	return in.Spec.Interval.Duration
}

// GetPolicyChangeDelay is spec.policyChangeDelay, 0 when unset.
func (in *ImageUpdateAutomation) GetPolicyChangeDelay() time.Duration {
	if in.Spec.PolicyChangeDelay == nil {
		return 0
	}
	return in.Spec.PolicyChangeDelay.Duration
}

// GetConditions returns the status conditions of the ImageUpdateAutomation.
func (in *ImageUpdateAutomation) GetConditions() []metav1.Condition {
	return in.Status.Conditions
}

// SetConditions replaces the status conditions of the ImageUpdateAutomation.
func (in *ImageUpdateAutomation) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// GetObservedGeneration returns status.observedGeneration: the generation
// of the spec last reconciled.
func (in *ImageUpdateAutomation) GetObservedGeneration() int64 {
	return in.Status.ObservedGeneration
}

// SetObservedGeneration sets status.observedGeneration.
func (in *ImageUpdateAutomation) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt: the
// last reconcile.fluxcd.io/requestedAt value a reconcile handled.
func (in *ImageUpdateAutomation) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *ImageUpdateAutomation) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended returns spec.suspend.
func (in *ImageUpdateAutomation) IsSuspended() bool { return in.Spec.Suspend }
