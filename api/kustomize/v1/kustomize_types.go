package v1

// Image replaces an image's name, tag or digest in the built objects.
type Image struct {
	// Name is the image name without tag, as written in the manifests.
	// +required
	Name string `json:"name"`

	// NewName replaces the name.
	// +optional
	NewName string `json:"newName,omitempty"`

	// NewTag replaces the tag.
	// +optional
	NewTag string `json:"newTag,omitempty"`

	// Digest replaces the tag with a digest; it wins over NewTag.
	// +optional
	Digest string `json:"digest,omitempty"`
}

// Selector selects objects; an object must match every field that is set.
type Selector struct {
	// Group of the API, e.g. apps.
	// +optional
	Group string `json:"group,omitempty"`

	// Version of the API, e.g. v1.
	// +optional
	Version string `json:"version,omitempty"`

	// Kind, e.g. Deployment.
	// +optional
	Kind string `json:"kind,omitempty"`

	// Namespace of the objects.
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Name of the objects.
	// +optional
	Name string `json:"name,omitempty"`

	// AnnotationSelector is a label-selector expression matched against annotations.
	// +optional
	AnnotationSelector string `json:"annotationSelector,omitempty"`

	// LabelSelector is a label-selector expression matched against labels.
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}

// Patch is an inline strategic-merge or JSON 6902 patch and what it targets.
type Patch struct {
	// Patch is the patch document, YAML or JSON.
	// +required
	Patch string `json:"patch,omitempty"`

	// Target selects the objects patched.
	// +optional
	Target *Selector `json:"target,omitempty"`
}

// CustomHealthCheck decides the health of one kind with CEL expressions
// evaluated against the object: its top-level fields are the variables
// (status, metadata, spec, ...). inProgress, failed and current are tried in
// this order; none true means in progress.
type CustomHealthCheck struct {
	// APIVersion of the kind, e.g. cert-manager.io/v1.
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind checked; empty for every kind of the API group.
	// +optional
	Kind string `json:"kind,omitempty"`

	// Current is true when the object is healthy.
	// +required
	Current string `json:"current"`

	// InProgress is true while the object is still progressing.
	// +optional
	InProgress string `json:"inProgress,omitempty"`

	// Failed is true when the object has failed.
	// +optional
	Failed string `json:"failed,omitempty"`
}

// ResourceInventory lists the objects a Kustomization applied.
type ResourceInventory struct {
	// Entries, one per object.
	Entries []ResourceRef `json:"entries"`
}

// ResourceRef identifies one applied object.
type ResourceRef struct {
	// ID is `<namespace>_<name>_<group>_<kind>`; the namespace is empty for
	// cluster-scoped objects and the group for the core group.
	ID string `json:"id"`

	// Version is the object's API version, e.g. v1.
	Version string `json:"v"`
}
