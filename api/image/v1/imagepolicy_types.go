package v1

import (
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ImagePolicyKind is the kind name of ImagePolicy.
const ImagePolicyKind = "ImagePolicy"

// DefaultDigestReflectionInterval is the interval of an ImagePolicy with
// digestReflectionPolicy Always whose spec.interval is unset or zero (the
// CRD's rules require one; the code default is Flux's).
const DefaultDigestReflectionInterval = 10 * time.Minute

// ImagePolicySpec selects one tag of an ImageRepository's scanned tags.
// Flux compatible: field names, defaults and validation (the two CEL
// rules on interval) of image-reflector-controller's api/v1.
//
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || (has(self.digestReflectionPolicy) && self.digestReflectionPolicy == 'Always')", message="spec.interval is only accepted when spec.digestReflectionPolicy is set to 'Always'"
// +kubebuilder:validation:XValidation:rule="has(self.interval) || !has(self.digestReflectionPolicy) || self.digestReflectionPolicy != 'Always'", message="spec.interval must be set when spec.digestReflectionPolicy is set to 'Always'"
type ImagePolicySpec struct {
	// ImageRepositoryRef names the ImageRepository whose tags are read;
	// another namespace only where its spec.accessFrom allows it.
	// +required
	ImageRepositoryRef meta.NamespacedObjectReference `json:"imageRepositoryRef"`

	// Policy is how the latest tag is chosen; exactly one of its fields.
	// +required
	Policy ImagePolicyChoice `json:"policy"`

	// FilterTags narrows the tags before the policy sees them, and may
	// extract the part of each tag the policy compares.
	// +optional
	FilterTags *TagFilter `json:"filterTags,omitempty"`

	// DigestReflectionPolicy says when the selected tag's manifest digest
	// is looked up into status.latestRef.digest: Never (default),
	// IfNotPresent (when the selected image changes or has no digest yet)
	// or Always (also every spec.interval, to follow a re-pushed tag).
	// +kubebuilder:default:=Never
	DigestReflectionPolicy ReflectionPolicy `json:"digestReflectionPolicy,omitempty"`

	// Interval between two digest lookups; accepted, and required, only
	// with digestReflectionPolicy Always.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// Suspend stops the policy from selecting; status.latestRef stays.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ReflectionPolicy is when a policy looks up the digest of its selected
// tag (spec.digestReflectionPolicy).
//
// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
type ReflectionPolicy string

const (
	// ReflectAlways looks the digest up every spec.interval.
	ReflectAlways ReflectionPolicy = "Always"
	// ReflectIfNotPresent looks the digest up when the selected image
	// changes or has none yet.
	ReflectIfNotPresent ReflectionPolicy = "IfNotPresent"
	// ReflectNever never looks the digest up (latestRef.digest empty).
	ReflectNever ReflectionPolicy = "Never"
)

// ImagePolicyChoice holds one way of ordering tags; exactly one field is
// set.
type ImagePolicyChoice struct {
	// SemVer picks the highest tag that is a semantic version (a leading
	// `v` allowed) inside Range.
	// +optional
	SemVer *SemVerPolicy `json:"semver,omitempty"`

	// Alphabetical orders tags as strings.
	// +optional
	Alphabetical *AlphabeticalPolicy `json:"alphabetical,omitempty"`

	// Numerical orders tags as numbers; every candidate must parse as one.
	// +optional
	Numerical *NumericalPolicy `json:"numerical,omitempty"`
}

// SemVerPolicy selects by semantic version.
type SemVerPolicy struct {
	// Range is a Masterminds semver v3 constraint, e.g. `^1.x` or
	// `>=1.0.0-0 <2.0.0-0`.
	// +required
	Range string `json:"range"`
}

// AlphabeticalPolicy selects by string order.
type AlphabeticalPolicy struct {
	// Order asc (default) selects the last tag in ascending order, desc the
	// first.
	// +kubebuilder:default:="asc"
	// +kubebuilder:validation:Enum=asc;desc
	// +optional
	Order string `json:"order,omitempty"`
}

// NumericalPolicy selects by numeric order.
type NumericalPolicy struct {
	// Order asc (default) selects the greatest number, desc the least.
	// +kubebuilder:default:="asc"
	// +kubebuilder:validation:Enum=asc;desc
	// +optional
	Order string `json:"order,omitempty"`
}

// Orders of the alphabetical and numerical policies.
const (
	OrderAsc  = "asc"
	OrderDesc = "desc"
)

// TagFilter keeps the tags matching a regular expression and optionally
// rewrites each into the value the policy compares.
type TagFilter struct {
	// Pattern is a Go regular expression; a tag is kept when it matches.
	// +optional
	Pattern string `json:"pattern"`

	// Extract is a template over Pattern's capture groups (e.g. `$ts` for
	// `(?P<ts>[0-9]+)`): the policy compares its expansion instead of the
	// tag, and the selected value maps back to its tag.
	// +optional
	Extract string `json:"extract"`
}

// ImagePolicyStatus is what image-reflector-controller selected.
type ImagePolicyStatus struct {
	// LatestRef is the selected image: name, tag and, when reflected,
	// digest.
	// +optional
	LatestRef *ImageRef `json:"latestRef,omitempty"`

	// ObservedPreviousRef is the latestRef before the last change.
	// +optional
	ObservedPreviousRef *ImageRef `json:"observedPreviousRef,omitempty"`

	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	meta.ReconcileRequestStatus `json:",inline"`
}

// ImagePolicy selects the latest image of an ImageRepository by a policy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:storageversion
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
// +kubebuilder:resource:shortName=imgpol;imagepol,categories=all;fluxcd;fluxcd-images
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.status.latestRef.name`
// +kubebuilder:printcolumn:name="Tag",type=string,JSONPath=`.status.latestRef.tag`
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
type ImagePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ImagePolicySpec `json:"spec,omitempty"`
	// +kubebuilder:default={"observedGeneration":-1}
	Status ImagePolicyStatus `json:"status,omitempty"`
}

// ImagePolicyList is a list of ImagePolicies.
//
// +kubebuilder:object:root=true
type ImagePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ImagePolicy `json:"items"`
}

// GetDigestReflectionPolicy is spec.digestReflectionPolicy, else
// ReflectNever.
func (in *ImagePolicy) GetDigestReflectionPolicy() ReflectionPolicy {
	if in.Spec.DigestReflectionPolicy != "" {
		return in.Spec.DigestReflectionPolicy
	}
	return ReflectNever
}

// GetInterval is the time between two digest lookups: with
// ReflectAlways, spec.interval or DefaultDigestReflectionInterval when
// unset or zero; otherwise 0 (no periodic reconcile).
func (in *ImagePolicy) GetInterval() time.Duration {
	if in.GetDigestReflectionPolicy() != ReflectAlways {
		return 0
	}
	if in.Spec.Interval == nil || in.Spec.Interval.Duration == 0 {
		return DefaultDigestReflectionInterval
	}
	return in.Spec.Interval.Duration
}

// GetRequeueAfter is GetInterval.
func (in *ImagePolicy) GetRequeueAfter() time.Duration { return in.GetInterval() }

// GetConditions returns the status conditions of the ImagePolicy.
func (in *ImagePolicy) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions of the ImagePolicy.
func (in *ImagePolicy) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// GetObservedGeneration returns status.observedGeneration: the generation
// of the spec last reconciled.
func (in *ImagePolicy) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *ImagePolicy) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt: the
// last reconcile.fluxcd.io/requestedAt value a reconcile handled.
func (in *ImagePolicy) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *ImagePolicy) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended returns spec.suspend.
func (in *ImagePolicy) IsSuspended() bool { return in.Spec.Suspend }
