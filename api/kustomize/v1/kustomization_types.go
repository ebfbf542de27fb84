package v1

import (
	"github.com/fluxcd/pkg/apis/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KustomizationKind is the kind name of Kustomization.
const KustomizationKind = "Kustomization"

// Values of spec.deletionPolicy. MirrorPrune (the default) deletes the
// inventory on deletion when spec.prune is true and orphans it otherwise.
const (
	DeletionPolicyMirrorPrune        = "MirrorPrune"
	DeletionPolicyDelete             = "Delete"
	DeletionPolicyWaitForTermination = "WaitForTermination"
	DeletionPolicyOrphan             = "Orphan"
)

// KustomizationSpec is how to build a source's manifests and apply them.
// Flux compatible: field names, defaults and validation of kustomize-controller's
// api/v1 KustomizationSpec.
type KustomizationSpec struct {
	// CommonMetadata labels and annotations are set on every applied object,
	// overriding keys the object already has.
	// +optional
	CommonMetadata *CommonMetadata `json:"commonMetadata,omitempty"`

	// DependsOn lists Kustomizations that must be Ready before this one is
	// applied; a readyExpr (CEL over self and dep) replaces the Ready check.
	// +optional
	DependsOn []meta.DependencyReference `json:"dependsOn,omitempty"`

	// Decryption of SOPS-encrypted Secrets before apply.
	// +optional
	Decryption *Decryption `json:"decryption,omitempty"`

	// Interval between reconciles, e.g. 10m.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +required
	Interval metav1.Duration `json:"interval"`

	// RetryInterval between attempts after a failure; default spec.interval.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	RetryInterval *metav1.Duration `json:"retryInterval,omitempty"`

	// KubeConfig of a remote cluster to apply to instead of this one
	// (secretRef; configMapRef is refused).
	// +optional
	KubeConfig *meta.KubeConfigReference `json:"kubeConfig,omitempty"`

	// Path inside the artifact of the kustomization.yaml, or of the plain
	// manifests one is generated for; default the artifact's root.
	// +optional
	Path string `json:"path,omitempty"`

	// PostBuild variable substitution.
	// +optional
	PostBuild *PostBuild `json:"postBuild,omitempty"`

	// Prune deletes objects that were applied before and left the source.
	// +required
	Prune bool `json:"prune"`

	// DeletionPolicy decides what happens to applied objects when the
	// Kustomization is deleted: MirrorPrune (default), Delete,
	// WaitForTermination or Orphan.
	// +kubebuilder:validation:Enum=MirrorPrune;Delete;WaitForTermination;Orphan
	// +optional
	DeletionPolicy string `json:"deletionPolicy,omitempty"`

	// HealthChecks lists objects whose health is awaited after apply.
	// +optional
	HealthChecks []meta.NamespacedObjectKindReference `json:"healthChecks,omitempty"`

	// NamePrefix is prepended to the names of all built objects.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Optional
	// +optional
	NamePrefix string `json:"namePrefix,omitempty"`

	// NameSuffix is appended to the names of all built objects.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:Optional
	// +optional
	NameSuffix string `json:"nameSuffix,omitempty"`

	// Patches, strategic-merge or JSON 6902, applied to the objects the target selects.
	// +optional
	Patches []Patch `json:"patches,omitempty"`

	// Images overrides image names, tags or digests.
	// +optional
	Images []Image `json:"images,omitempty"`

	// ServiceAccountName to impersonate when applying.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// SourceRef is the source whose artifact holds the manifests.
	// +required
	SourceRef CrossNamespaceSourceReference `json:"sourceRef"`

	// Suspend stops reconciliation until set back to false.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// TargetNamespace sets the namespace of every namespaced built object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Optional
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// Timeout for build, apply and health checks. Flux compatible: unset means
	// spec.interval minus 30s, and never less than 30s.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Force recreates objects whose update fails on an immutable field.
	// +kubebuilder:default:=false
	// +optional
	Force bool `json:"force,omitempty"`

	// Wait health-checks every applied object; spec.healthChecks is then ignored.
	// +optional
	Wait bool `json:"wait,omitempty"`

	// BuildMetadata adds kustomize's build annotations to the built objects.
	// +optional
	BuildMetadata []BuildMetadataOption `json:"buildMetadata,omitempty"`

	// Components are relative paths of kustomize Components added to the build.
	// +optional
	Components []string `json:"components,omitempty"`

	// IgnoreMissingComponents drops components whose path is absent instead of failing.
	// +optional
	IgnoreMissingComponents bool `json:"ignoreMissingComponents,omitempty"`

	// HealthCheckExprs are CEL expressions deciding the health of the objects
	// of a kind (or of every kind of an API group) in the health checks of
	// spec.wait and spec.healthChecks, in place of kstatus.
	// +optional
	HealthCheckExprs []CustomHealthCheck `json:"healthCheckExprs,omitempty"`

	// Ignore rules exclude fields from drift detection and correction.
	// +optional
	Ignore []IgnoreRule `json:"ignore,omitempty"`
}

// BuildMetadataOption is a kustomize build-metadata option.
// +kubebuilder:validation:Enum=originAnnotations;transformerAnnotations
type BuildMetadataOption string

// CommonMetadata holds labels and annotations set on every applied object.
type CommonMetadata struct {
	// Annotations added to each object's metadata.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Labels added to each object's metadata.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// IgnoreRule names fields that drift detection leaves alone.
type IgnoreRule struct {
	// Paths are RFC 6901 JSON pointers into the object, e.g. /spec/replicas.
	// +required
	Paths []string `json:"paths"`

	// Target selects the objects the rule applies to; unset means all.
	// +optional
	Target *Selector `json:"target,omitempty"`
}

// Decryption configures SOPS decryption.
type Decryption struct {
	// Provider of decryption; only sops.
	// +kubebuilder:validation:Enum=sops
	// +required
	Provider string `json:"provider"`

	// ServiceAccountName whose workload identity reaches a cloud KMS.
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// SecretRef names a Secret with the decryption keys.
	// +optional
	SecretRef *meta.LocalObjectReference `json:"secretRef,omitempty"`
}

// PostBuild configures variable substitution in the built manifests.
type PostBuild struct {
	// SubstituteStrategy: WithVariables (default) substitutes only when
	// variables are defined; Always substitutes even with none.
	// +kubebuilder:validation:Enum=WithVariables;Always
	// +optional
	SubstituteStrategy string `json:"substituteStrategy,omitempty"`

	// Substitute maps variable names to values for ${var} references.
	// +optional
	Substitute map[string]string `json:"substitute,omitempty"`

	// SubstituteFrom reads variables from ConfigMaps and Secrets, in order.
	// +optional
	SubstituteFrom []SubstituteReference `json:"substituteFrom,omitempty"`
}

// SubstituteReference names a ConfigMap or Secret whose keys are variables.
type SubstituteReference struct {
	// Kind: Secret or ConfigMap.
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	// +required
	Kind string `json:"kind"`

	// Name of the object, in the Kustomization's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Optional makes a missing object count as empty instead of an error.
	// +kubebuilder:default:=false
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// CrossNamespaceSourceReference points at a source object.
type CrossNamespaceSourceReference struct {
	// APIVersion of the source.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the source.
	// ExternalArtifact needs the ExternalArtifact feature gate, as in Flux.
	// +kubebuilder:validation:Enum=OCIRepository;GitRepository;Bucket;ExternalArtifact
	// +required
	Kind string `json:"kind"`

	// Name of the source.
	// +required
	Name string `json:"name"`

	// Namespace of the source; default the Kustomization's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// KustomizationStatus is what kustomize-controller observed and applied.
type KustomizationStatus struct {
	meta.ReconcileRequestStatus `json:",inline"`

	// ObservedGeneration is the generation of the spec last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, Healthy.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastAppliedRevision is the source revision last applied successfully,
	// e.g. main@sha1:<hex>.
	// +optional
	LastAppliedRevision string `json:"lastAppliedRevision,omitempty"`

	// LastAppliedOriginRevision is the origin revision from the artifact's
	// metadata last applied successfully.
	// +optional
	LastAppliedOriginRevision string `json:"lastAppliedOriginRevision,omitempty"`

	// LastAttemptedRevision is the source revision of the last attempt.
	// +optional
	LastAttemptedRevision string `json:"lastAttemptedRevision,omitempty"`

	// Inventory lists the objects applied by the last successful reconcile.
	// +optional
	Inventory *ResourceInventory `json:"inventory,omitempty"`

	// History holds snapshots of the last reconciles, newest first.
	// +optional
	History meta.History `json:"history,omitempty"`
}

// Kustomization builds manifests from a source artifact with kustomize and
// applies them to the cluster with server-side apply.
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:resource:shortName=ks,categories=all;fluxcd;fluxcd-appliers
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",description=""
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].status",description=""
// +kubebuilder:printcolumn:name="Status",type="string",JSONPath=".status.conditions[?(@.type==\"Ready\")].message",description=""
// +kubebuilder:metadata:annotations="kustomize.toolkit.fluxcd.io/substitute=disabled"
type Kustomization struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec KustomizationSpec `json:"spec,omitempty"`
	// +kubebuilder:default:={"observedGeneration":-1}
	Status KustomizationStatus `json:"status,omitempty"`
}

// KustomizationList is a list of Kustomization.
//
// +kubebuilder:object:root=true
type KustomizationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Kustomization `json:"items"`
}

// GetConditions returns the status conditions of the Kustomization.
func (in *Kustomization) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions of the Kustomization.
func (in *Kustomization) SetConditions(conditions []metav1.Condition) {
	in.Status.Conditions = conditions
}

// GetObservedGeneration returns status.observedGeneration: the generation
// of the spec last reconciled.
func (in *Kustomization) GetObservedGeneration() int64 { return in.Status.ObservedGeneration }

// SetObservedGeneration sets status.observedGeneration.
func (in *Kustomization) SetObservedGeneration(generation int64) {
	in.Status.ObservedGeneration = generation
}

// GetLastHandledReconcileRequest returns status.lastHandledReconcileAt: the
// last reconcile.fluxcd.io/requestedAt value a reconcile handled.
func (in *Kustomization) GetLastHandledReconcileRequest() string {
	return in.Status.GetLastHandledReconcileRequest()
}

// SetLastHandledReconcileRequest sets status.lastHandledReconcileAt.
func (in *Kustomization) SetLastHandledReconcileRequest(token string) {
	in.Status.SetLastHandledReconcileRequest(token)
}

// IsSuspended returns spec.suspend.
func (in *Kustomization) IsSuspended() bool { return in.Spec.Suspend }
