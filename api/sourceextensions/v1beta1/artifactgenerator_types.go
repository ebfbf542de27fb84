package v1beta1

import (
	"strings"

	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ArtifactGeneratorKind is the kind name of ArtifactGenerator.
const ArtifactGeneratorKind = "ArtifactGenerator"

// Names of Flux's source-watcher, which its users' tooling reads.
const (
	// Finalizer is set on every ArtifactGenerator so that its
	// ExternalArtifacts and their stored files go with it.
	Finalizer = "source.extensions.fluxcd.io/finalizer"
	// GeneratorLabel, on each generated ExternalArtifact, holds the UID of
	// the ArtifactGenerator that owns it.
	GeneratorLabel = "source.extensions.fluxcd.io/generator"
	// OriginRevisionKey is the artifact metadata key of the origin revision
	// (spec.artifacts[].originRevision), as OCI's image annotation.
	OriginRevisionKey = "org.opencontainers.image.revision"
	// ReconcileAnnotation set to "disabled" (any case) pauses an
	// ArtifactGenerator: the kind has no spec.suspend.
	ReconcileAnnotation = "source.extensions.fluxcd.io/reconcile"
	// DisabledValue is ReconcileAnnotation's value that pauses.
	DisabledValue = "disabled"
)

// Condition reasons of ArtifactGenerator, beside meta's (Succeeded,
// Progressing, BuildFailed, ReconciliationFailed). Flux compatible strings.
const (
	// ReconciliationDisabledReason: the reconcile annotation is "disabled".
	ReconciliationDisabledReason = "ReconciliationDisabled"
	// AccessDeniedReason: a cross-namespace source with
	// --no-cross-namespace-refs (Stalled).
	AccessDeniedReason = "AccessDenied"
	// ValidationFailedReason: the spec can never be built, e.g. a duplicate
	// alias or artifact name (Stalled).
	ValidationFailedReason = "ValidationFailed"
	// SourceFetchFailedReason: a source is missing, has no artifact yet, or
	// its artifact could not be downloaded and verified (retried).
	SourceFetchFailedReason = "SourceFetchFailed"
)

// Copy strategies of spec.artifacts[].copy[].strategy.
const (
	// OverwriteStrategy replaces files already in the artifact (default).
	OverwriteStrategy = "Overwrite"
	// MergeStrategy deep-merges a YAML file into one already in the
	// artifact, as Helm merges values files: maps merge, lists are replaced.
	MergeStrategy = "Merge"
	// ExtractStrategy unpacks .tar.gz and .tgz files into the destination.
	ExtractStrategy = "Extract"
)

// CommonMetadata are labels and annotations set on every generated
// ExternalArtifact.
type CommonMetadata struct {
	// Annotations to be added to the object's metadata.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Labels to be added to the object's metadata.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// ArtifactGeneratorSpec says which sources to read and which artifacts to
// compose from them.
// +kubebuilder:validation:XValidation:rule="has(self.pathPattern) && size(self.pathPattern) > 0 || self.artifacts.all(a, a.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$'))",message="artifact names must be valid Kubernetes object names when pathPattern is not set"
type ArtifactGeneratorSpec struct {
	// CommonMetadata specifies labels and annotations set on every generated
	// ExternalArtifact; a key of the controller's own labels is not overridden.
	// +optional
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`

	// Sources are the source objects whose artifacts are read.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	// +required
	Sources []SourceReference `json:"sources"`

	// PathPattern ("@<alias>/<pattern>" with captures such as "{app}")
	// generates one set of artifacts per matched directory. Accepted by the
	// schema for Flux compatibility; Eddy's source-watcher does not implement
	// it and stalls an ArtifactGenerator that sets it.
	// +kubebuilder:validation:Pattern="^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)/(.*)$"
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	PathPattern string `json:"pathPattern,omitempty"`

	// OutputArtifacts are the artifacts to generate, one ExternalArtifact each.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=1000
	// +required
	OutputArtifacts []OutputArtifact `json:"artifacts"`
}

// SourceReference names one source and the alias copy operations use.
type SourceReference struct {
	// Alias of the source within the ArtifactGenerator, unique in it.
	// +kubebuilder:validation:Pattern="^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$"
	// +kubebuilder:validation:MaxLength=63
	// +required
	Alias string `json:"alias"`

	// Name of the source.
	// +kubebuilder:validation:Pattern="^[a-z0-9]([a-z0-9-]*[a-z0-9])?$"
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the source; default the ArtifactGenerator's.
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Kind of the source.
	// +kubebuilder:validation:Enum=Bucket;GitRepository;OCIRepository;HelmChart;ExternalArtifact
	// +required
	Kind string `json:"kind"`
}

// OutputArtifact is one generated ExternalArtifact and how its files are
// composed.
type OutputArtifact struct {
	// Name of the generated ExternalArtifact, in the ArtifactGenerator's
	// namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Revision "@<alias>" gives the artifact that source's revision; unset,
	// the revision is "latest@<digest>" of the artifact's own bytes.
	// +kubebuilder:validation:Pattern="^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)$"
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Revision string `json:"revision,omitempty"`

	// OriginRevision "@<alias>" sets the artifact's metadata
	// 'org.opencontainers.image.revision' to that source's origin revision,
	// else to its revision.
	// +kubebuilder:validation:Pattern="^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)$"
	// +kubebuilder:validation:MaxLength=64
	// +optional
	OriginRevision string `json:"originRevision,omitempty"`

	// Copy operations, applied in order; a later one overwrites files of
	// an earlier one.
	// +kubebuilder:validation:MinItems=1
	// +required
	Copy []CopyOperation `json:"copy"`
}

// CopyOperation copies files of a source into the artifact, with cp's
// semantics.
type CopyOperation struct {
	// From is "@<alias>/<path or glob>".
	// +kubebuilder:validation:Pattern="^@([a-z0-9]([a-z0-9_-]*[a-z0-9])?)/(.*)$"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	From string `json:"from"`

	// To is "@artifact/<path>"; a trailing slash names a directory.
	// +kubebuilder:validation:Pattern="^@(artifact)/(.*)$"
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +required
	To string `json:"to"`

	// Exclude lists glob patterns of files and directories left out of what
	// From selects, matched relative to the source root or to From's part
	// before its first glob; a pattern without '/' matches the file name at
	// any depth.
	// +kubebuilder:validation:MaxItems=100
	// +optional
	Exclude []string `json:"exclude,omitempty"`

	// Strategy is Overwrite (default), Merge (YAML deep merge into an
	// existing file) or Extract (unpack .tar.gz/.tgz files).
	// +kubebuilder:validation:Enum=Overwrite;Merge;Extract
	// +optional
	Strategy string `json:"strategy,omitempty"`
}

// ArtifactGeneratorStatus is the observed state of an ArtifactGenerator.
type ArtifactGeneratorStatus struct {
	meta.ReconcileRequestStatus `json:",inline"`

	// Conditions holds the conditions for the ArtifactGenerator.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Inventory lists the generated ExternalArtifacts.
	// +optional
	Inventory []ExternalArtifactReference `json:"inventory,omitempty"`

	// ObservedSourcesDigest is a digest of the sources' artifacts (digest,
	// revision, URL) last built from.
	// +optional
	ObservedSourcesDigest string `json:"observedSourcesDigest,omitempty"`
}

// ExternalArtifactReference is one generated ExternalArtifact and its
// stored file.
type ExternalArtifactReference struct {
	// Name of the ExternalArtifact.
	// +required
	Name string `json:"name"`

	// Namespace of the ExternalArtifact.
	// +required
	Namespace string `json:"namespace"`

	// Digest of its artifact.
	// +required
	Digest string `json:"digest"`

	// Filename is the name of its artifact file in storage.
	// +required
	Filename string `json:"filename"`
}

// GetConditions returns status.conditions.
func (in *ArtifactGenerator) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets status.conditions.
func (in *ArtifactGenerator) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// GetObservedGeneration is the Ready condition's observedGeneration: the
// kind's status has no observedGeneration of its own (Flux's neither).
func (in *ArtifactGenerator) GetObservedGeneration() int64 {
	for _, c := range in.Status.Conditions {
		if c.Type == meta.ReadyCondition {
			return c.ObservedGeneration
		}
	}
	return 0
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt.
func (in *ArtifactGenerator) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetObservedGeneration does nothing: the kind's status has no
// observedGeneration field (Flux's neither), Ready's observedGeneration
// records the generation reconciled.
func (in *ArtifactGenerator) SetObservedGeneration(int64) {}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *ArtifactGenerator) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended tells whether the reconcile annotation is "disabled" (any
// case): the kind's way to suspend.
func (in *ArtifactGenerator) IsSuspended() bool {
	v, ok := in.GetAnnotations()[ReconcileAnnotation]
	return ok && strings.EqualFold(v, DisabledValue)
}

// InInventory tells whether the ExternalArtifact namespace/name with digest
// is in status.inventory.
func (in *ArtifactGenerator) InInventory(name, namespace, digest string) bool {
	for _, r := range in.Status.Inventory {
		if r.Name == name && r.Namespace == namespace && r.Digest == digest {
			return true
		}
	}
	return false
}

// ArtifactGenerator composes ExternalArtifacts from the artifacts of
// sources (source-controller's kinds and other ExternalArtifacts), or
// splits one source into several. Reconciled by source-watcher.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ag,categories=all;fluxcd;fluxcd-sources
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
type ArtifactGenerator struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ArtifactGeneratorSpec   `json:"spec,omitempty"`
	Status ArtifactGeneratorStatus `json:"status,omitempty"`
}

// ArtifactGeneratorList is a list of ArtifactGenerators.
//
// +kubebuilder:object:root=true
type ArtifactGeneratorList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ArtifactGenerator `json:"items"`
}
