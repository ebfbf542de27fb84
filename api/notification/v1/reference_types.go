package v1

// CrossNamespaceObjectReference locates a Flux object: the event sources of an
// Alert and the resources of a Receiver.
// Flux compatible: notification-controller api/v1 CrossNamespaceObjectReference.
type CrossNamespaceObjectReference struct {
	// APIVersion of the referent, e.g. kustomize.toolkit.fluxcd.io/v1.
	// +optional
	APIVersion string `json:"apiVersion,omitempty"`

	// Kind of the referent. Beyond Flux: Application (argoproj.io), whose
	// events application-controller posts like any other controller.
	// +kubebuilder:validation:Enum=Bucket;GitRepository;Kustomization;HelmRelease;HelmChart;HelmRepository;ImageRepository;ImagePolicy;ImageUpdateAutomation;OCIRepository;ArtifactGenerator;ExternalArtifact;Application
	// +required
	Kind string `json:"kind"`

	// Name of the referent; `*` selects all objects of the kind (with
	// matchLabels, if set).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace of the referent; defaults to the referring object's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// MatchLabels selects objects by label (ANDed); it requires name `*`.
	// +optional
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
}
