package v2

import (
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
)

// CommonMetadata is added to every object a release renders.
type CommonMetadata struct {
	// Annotations added to every object.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`

	// Labels added to every object.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// PostRenderer changes rendered manifests before Helm applies them.
type PostRenderer struct {
	// Kustomize patches and image overrides.
	// +optional
	Kustomize *Kustomize `json:"kustomize,omitempty"`
}

// Kustomize is a kustomize post-renderer: patches, then images.
type Kustomize struct {
	// Patches: strategic merge or JSON 6902 patches, each with an optional
	// target selector.
	// +optional
	Patches []kustomizev1.Patch `json:"patches,omitempty"`

	// Images override container image names, tags or digests.
	// +optional
	Images []kustomizev1.Image `json:"images,omitempty"`
}

// Drift detection modes of spec.driftDetection.mode. Flux compatible.
const (
	DriftDetectionEnabled  = "enabled"
	DriftDetectionWarn     = "warn"
	DriftDetectionDisabled = "disabled"
)

// DriftDetection compares the cluster with the release manifest.
type DriftDetection struct {
	// Mode: disabled (the default), warn (report only) or enabled (report
	// and correct).
	// +kubebuilder:validation:Enum=enabled;warn;disabled
	// +optional
	Mode string `json:"mode,omitempty"`

	// Ignore lists JSON pointers left out of the comparison, optionally only
	// for the objects a target selects.
	// +optional
	Ignore []IgnoreRule `json:"ignore,omitempty"`
}

// IgnoreRule leaves fields out of drift detection.
type IgnoreRule struct {
	// Paths are JSON pointers (RFC 6901), e.g. /spec/replicas.
	// +required
	Paths []string `json:"paths"`

	// Target selects the objects the rule applies to; all when unset.
	// +optional
	Target *kustomizev1.Selector `json:"target,omitempty"`
}
