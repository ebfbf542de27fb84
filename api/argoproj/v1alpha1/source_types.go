package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Source types, as status.sourceType reports them.
const (
	SourceTypeHelm      = "Helm"
	SourceTypeKustomize = "Kustomize"
	SourceTypeDirectory = "Directory"
	SourceTypePlugin    = "Plugin"
)

// ApplicationSource is where manifests come from: a Git repository's Path,
// a Helm repository's Chart, or an OCI artifact, and how to render them.
type ApplicationSource struct {
	// RepoURL is a Git URL, a Helm repository URL, or oci://...
	RepoURL string `json:"repoURL"`
	// Path is a directory in a Git repository.
	// +optional
	Path string `json:"path,omitempty"`
	// TargetRevision is a branch, tag, commit, HEAD or a semver
	// constraint (Git tags; Helm chart versions); empty means HEAD.
	// +optional
	TargetRevision string `json:"targetRevision,omitempty"`
	// +optional
	Helm *ApplicationSourceHelm `json:"helm,omitempty"`
	// +optional
	Kustomize *ApplicationSourceKustomize `json:"kustomize,omitempty"`
	// +optional
	Directory *ApplicationSourceDirectory `json:"directory,omitempty"`
	// Plugin is a config management plugin (not run by Eddy).
	// +optional
	Plugin *ApplicationSourcePlugin `json:"plugin,omitempty"`
	// Chart is a Helm chart's name in the repository at RepoURL.
	// +optional
	Chart string `json:"chart,omitempty"`
	// Ref names this source for other sources' $ref/ value files.
	// +optional
	Ref string `json:"ref,omitempty"`
	// Name labels the source in a multi-source Application.
	// +optional
	Name string `json:"name,omitempty"`
	// TagPrefix filters Git tags before a semver constraint is matched.
	// +optional
	TagPrefix string `json:"tagPrefix,omitempty"`
}

// ApplicationSourceHelm is `helm template`'s options.
type ApplicationSourceHelm struct {
	// +optional
	ValueFiles []string `json:"valueFiles,omitempty"`
	// +optional
	Parameters []HelmParameter `json:"parameters,omitempty"`
	// ReleaseName defaults to the Application's name.
	// +optional
	ReleaseName string `json:"releaseName,omitempty"`
	// Values is inline YAML, after ValueFiles.
	// +optional
	Values string `json:"values,omitempty"`
	// +optional
	FileParameters []HelmFileParameter `json:"fileParameters,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	PassCredentials bool `json:"passCredentials,omitempty"`
	// +optional
	IgnoreMissingValueFiles bool `json:"ignoreMissingValueFiles,omitempty"`
	// +optional
	SkipCrds bool `json:"skipCrds,omitempty"`
	// ValuesObject is Values as an object; it wins over Values.
	// +optional
	ValuesObject *apiextensionsv1.JSON `json:"valuesObject,omitempty"`
	// Namespace is the template's namespace; default the destination's.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	KubeVersion string `json:"kubeVersion,omitempty"`
	// +optional
	APIVersions []string `json:"apiVersions,omitempty"`
	// +optional
	SkipTests bool `json:"skipTests,omitempty"`
	// +optional
	SkipSchemaValidation bool `json:"skipSchemaValidation,omitempty"`
}

// HelmParameter is a --set (--set-string with ForceString).
type HelmParameter struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Value string `json:"value,omitempty"`
	// +optional
	ForceString bool `json:"forceString,omitempty"`
}

// HelmFileParameter is a --set-file.
type HelmFileParameter struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Path string `json:"path,omitempty"`
}

// ApplicationSourceKustomize is the `kustomize edit` overrides applied
// before `kustomize build`.
type ApplicationSourceKustomize struct {
	// +optional
	NamePrefix string `json:"namePrefix,omitempty"`
	// +optional
	NameSuffix string `json:"nameSuffix,omitempty"`
	// Images are `[old=]name[:tag][@digest]`.
	// +optional
	Images []string `json:"images,omitempty"`
	// +optional
	CommonLabels map[string]string `json:"commonLabels,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	CommonAnnotations map[string]string `json:"commonAnnotations,omitempty"`
	// +optional
	ForceCommonLabels bool `json:"forceCommonLabels,omitempty"`
	// +optional
	ForceCommonAnnotations bool `json:"forceCommonAnnotations,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	CommonAnnotationsEnvsubst bool `json:"commonAnnotationsEnvsubst,omitempty"`
	// +optional
	Replicas []KustomizeReplica `json:"replicas,omitempty"`
	// +optional
	Patches []KustomizePatch `json:"patches,omitempty"`
	// +optional
	Components []string `json:"components,omitempty"`
	// +optional
	IgnoreMissingComponents bool `json:"ignoreMissingComponents,omitempty"`
	// +optional
	LabelWithoutSelector bool `json:"labelWithoutSelector,omitempty"`
	// +optional
	KubeVersion string `json:"kubeVersion,omitempty"`
	// +optional
	APIVersions []string `json:"apiVersions,omitempty"`
	// +optional
	LabelIncludeTemplates bool `json:"labelIncludeTemplates,omitempty"`
}

// KustomizeReplica sets the replicas of the workload Name.
type KustomizeReplica struct {
	Name  string             `json:"name"`
	Count intstr.IntOrString `json:"count"`
}

// KustomizePatch is a patch added to the kustomization's patches.
type KustomizePatch struct {
	// +optional
	Path string `json:"path,omitempty"`
	// +optional
	Patch string `json:"patch,omitempty"`
	// +optional
	Target *KustomizeSelector `json:"target,omitempty"`
	// +optional
	Options map[string]bool `json:"options,omitempty"`
}

// KustomizeSelector selects the objects a patch applies to.
type KustomizeSelector struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	// +optional
	Kind string `json:"kind,omitempty"`
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// +optional
	AnnotationSelector string `json:"annotationSelector,omitempty"`
	// +optional
	LabelSelector string `json:"labelSelector,omitempty"`
}

// ApplicationSourceDirectory is how a directory of plain manifests and
// jsonnet is read.
type ApplicationSourceDirectory struct {
	// Recurse descends into sub-directories.
	// +optional
	Recurse bool `json:"recurse,omitempty"`
	// +optional
	Jsonnet ApplicationSourceJsonnet `json:"jsonnet,omitempty"`
	// Exclude and Include are globs (with {a,b}) on paths relative to the
	// source path.
	// +optional
	Exclude string `json:"exclude,omitempty"`
	// +optional
	Include string `json:"include,omitempty"`
	// DisableExtensionFilter reads files of every extension.
	// +optional
	DisableExtensionFilter bool `json:"disableExtensionFilter,omitempty"`
}

// ApplicationSourceJsonnet is jsonnet's external variables, top-level
// arguments and library paths.
type ApplicationSourceJsonnet struct {
	// +optional
	ExtVars []JsonnetVar `json:"extVars,omitempty"`
	// +optional
	TLAs []JsonnetVar `json:"tlas,omitempty"`
	// +optional
	Libs []string `json:"libs,omitempty"`
}

// JsonnetVar is a jsonnet variable: a string, or code with Code.
type JsonnetVar struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// +optional
	Code bool `json:"code,omitempty"`
}

// ApplicationSourcePlugin names a config management plugin. Eddy runs no
// plugins: an Application using one gets a ComparisonError.
type ApplicationSourcePlugin struct {
	// +optional
	Name string `json:"name,omitempty"`
	// +optional
	Env []EnvEntry `json:"env,omitempty"`
	// Parameters are kept as written.
	// +optional
	Parameters *apiextensionsv1.JSON `json:"parameters,omitempty"`
}

// EnvEntry is an environment variable for a plugin.
type EnvEntry struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}
