package v1

import "fmt"

// ImageRef is an image reference split in its parts: what an ImagePolicy
// selected (status.latestRef) and what an automation observed
// (status.observedPolicies).
type ImageRef struct {
	// Name is the image repository as the ImageRepository's spec.image
	// spells it (not canonicalised), e.g. `ghcr.io/org/app`.
	// +required
	Name string `json:"name"`
	// Tag is the selected tag, e.g. `1.2.3`.
	// +required
	Tag string `json:"tag"`
	// Digest is the manifest digest of Name:Tag, `sha256:<hex>`; set only
	// when the policy reflects digests.
	// +optional
	Digest string `json:"digest,omitempty"`
}

// String is `name:tag`, or `name:tag@digest` with a digest: the value an
// `$imagepolicy` marker without suffix writes.
func (in *ImageRef) String() string {
	s := in.Name + ":" + in.Tag
	if in.Digest != "" {
		s += "@" + in.Digest
	}
	return s
}

// CrossNamespaceSourceReference names the Git source of an automation,
// possibly in another namespace.
type CrossNamespaceSourceReference struct {
	// APIVersion of the source, e.g. `source.toolkit.fluxcd.io/v1`.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the source; GitRepository only.
	// +kubebuilder:validation:Enum=GitRepository
	// +kubebuilder:default=GitRepository
	// +required
	Kind string `json:"kind"`

	// Name of the source.
	// +required
	Name string `json:"name"`

	// Namespace of the source; default the automation's namespace.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// String is `Kind/namespace/name`, or `Kind/name` without a namespace.
func (s *CrossNamespaceSourceReference) String() string {
	if s.Namespace != "" {
		return fmt.Sprintf("%s/%s/%s", s.Kind, s.Namespace, s.Name)
	}
	return fmt.Sprintf("%s/%s", s.Kind, s.Name)
}
