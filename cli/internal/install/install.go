// Package install renders Eddy's install bundle from the kustomize bases in
// config/ (embedded through github.com/eddyops/eddy/config) with the options
// of `flux install`: namespace, registry, version, components, network
// policies, cluster domain, log level, watch-all-namespaces and toleration
// keys. The result has the shape `flux install --export` gives (contract §7,
// §9): Flux's labels on every object, Flux's RBAC names suffixed with the
// namespace, and the controllers' arguments at Flux's positions.
package install

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"

	eddyconfig "github.com/eddyops/eddy/config"
	"github.com/eddyops/eddy/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// DefaultRegistry is where Eddy's controller images are published; an image
// is <registry>/<component>:<version>.
const DefaultRegistry = "ghcr.io/eddyops"

// DefaultImageDigests, when set at build time with
// -ldflags "-X github.com/eddyops/eddy/cli/internal/install.DefaultImageDigests=..."
// in the form "source-controller=sha256:…,kustomize-controller=sha256:…",
// pins DefaultOptions' images to those digests.
var DefaultImageDigests string

// Components are Eddy's controllers: Flux's four in Flux's default order,
// Flux's two image automation controllers, then application-controller
// (Argo CD's Applications), then Flux's source-watcher (ArtifactGenerators).
var Components = []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller",
	ImageReflectorController, ImageAutomationController, ApplicationController, SourceWatcher}

// DefaultComponents are those installed unless --components says otherwise:
// Flux's default four. The image controllers and application-controller
// are extra components, added with --components-extra as flux adds its
// image automation controllers.
var DefaultComponents = []string{"source-controller", "kustomize-controller", "helm-controller", "notification-controller"}

// The image automation components (Flux's extra components): their CRDs,
// image.toolkit.fluxcd.io's ImageRepository and ImagePolicy for the
// reflector, ImageUpdateAutomation for the automation, carry their
// component label.
const (
	ImageReflectorController  = "image-reflector-controller"
	ImageAutomationController = "image-automation-controller"
)

// ApplicationController is the component that reconciles Argo CD's
// Application and AppProject kinds (argoproj.io); its CRDs carry its
// component label.
const ApplicationController = "application-controller"

// ApplicationNamespace is the namespace application-controller reconciles
// Applications in, Argo CD's default (argocd-contract §1.0: Applications
// live in the controller's namespace, argocd): the bundle has it when the
// component is installed, so Argo CD's own YAML applies unchanged.
const ApplicationNamespace = "argocd"

// SourceWatcher is the component that reconciles ArtifactGenerators
// (source.extensions.fluxcd.io), Flux's extra component of that name; its
// CRD carries its component label.
const SourceWatcher = "source-watcher"

// LogLevels are the values --log-level accepts, as flux's.
var LogLevels = []string{"debug", "info", "error"}

// Labels every installed object carries (Flux's names: `flux check` and
// `flux uninstall` select on part-of=flux).
const (
	PartOfLabel    = "app.kubernetes.io/part-of"
	PartOfValue    = "flux"
	InstanceLabel  = "app.kubernetes.io/instance"
	VersionLabel   = "app.kubernetes.io/version"
	ComponentLabel = "app.kubernetes.io/component"
)

// Options are the settings of the rendered bundle, those of `flux install`.
type Options struct {
	Namespace     string
	Version       string
	Registry      string
	ClusterDomain string
	LogLevel      string
	// Components are installed; ComponentsExtra are added to them (Flux's
	// extra components image-reflector-controller and
	// image-automation-controller, and Eddy's own application-controller).
	Components, ComponentsExtra []string
	WatchAllNamespaces          bool
	NetworkPolicy               bool
	// TolerationKeys become tolerations {key, operator: Exists} on every Deployment.
	TolerationKeys []string
	// Shards, when set, add for source-, kustomize- and helm-controller one
	// Deployment per shard (<controller>-<shard>) reconciling only the
	// objects labelled sharding.fluxcd.io/key=<shard>, a Service per
	// source-controller shard for its artifacts, and make the main
	// Deployments skip every labelled object (see Shards in shard.go).
	Shards []string
	// ImageDigests maps a component to its image digest ("sha256:<64 hex>"),
	// when known; the image is then <registry>/<component>:<version>@<digest>.
	ImageDigests map[string]string
	// DigestsVersion, when set, is the version ImageDigests were built for:
	// with any other Version they are left out, since a runtime pulls by
	// digest and would run the old image under the new tag.
	DigestsVersion string

	// defaultsErr is a malformed DefaultImageDigests, reported by Validate.
	defaultsErr error
}

// DefaultOptions returns flux install's defaults with Eddy's registry and
// the given version (the CLI's own), and the digests of DefaultImageDigests.
func DefaultOptions(version string) Options {
	o := Options{
		Namespace:          "flux-system",
		Version:            version,
		Registry:           DefaultRegistry,
		ClusterDomain:      "cluster.local",
		LogLevel:           "info",
		Components:         slices.Clone(DefaultComponents),
		WatchAllNamespaces: true,
		NetworkPolicy:      true,
	}
	d, err := ParseImageDigests(DefaultImageDigests)
	if err != nil {
		o.defaultsErr = fmt.Errorf("this eddy was built with a malformed image digest list: %w", err)
	}
	o.ImageDigests, o.DigestsVersion = d, version
	return o
}

var (
	digestRE = regexp.MustCompile(`^sha256:[a-f0-9]{64}$`)
	// tagRE is an OCI image tag.
	tagRE = regexp.MustCompile(`^[\w][\w.-]{0,127}$`)
)

// ParseImageDigests parses "component=sha256:…,component=sha256:…" (empty
// gives nil). Errors name the bad entry.
func ParseImageDigests(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		name, digest, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || !slices.Contains(Components, name) || !digestRE.MatchString(digest) {
			return nil, fmt.Errorf("image digest %q: want <component>=sha256:<64 hex digits>", kv)
		}
		out[name] = digest
	}
	return out, nil
}

// AllComponents returns Components and ComponentsExtra, without repeats,
// after checking each is one of Eddy's controllers.
func (o Options) AllComponents() ([]string, error) {
	var out []string
	for _, c := range append(slices.Clone(o.Components), o.ComponentsExtra...) {
		c = strings.TrimSpace(c)
		switch {
		case !slices.Contains(Components, c):
			return nil, fmt.Errorf("component %q is not available (available: %s)", c, strings.Join(Components, ", "))
		case !slices.Contains(out, c):
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no components to install: --components needs at least one of %s", strings.Join(Components, ", "))
	}
	return out, nil
}

// Validate checks every option, one error naming the option and the fix.
func (o Options) Validate() error {
	if o.defaultsErr != nil {
		return o.defaultsErr
	}
	if _, err := o.AllComponents(); err != nil {
		return err
	}
	if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
		return fmt.Errorf("namespace %q is not valid: %s", o.Namespace, errs[0])
	}
	if errs := validation.IsDNS1123Subdomain(o.ClusterDomain); len(errs) > 0 {
		return fmt.Errorf("--cluster-domain %q is not valid: %s", o.ClusterDomain, errs[0])
	}
	if !slices.Contains(LogLevels, o.LogLevel) {
		return fmt.Errorf("--log-level %q is not supported, must be one of: %s", o.LogLevel, strings.Join(LogLevels, ", "))
	}
	if o.Registry == "" || strings.ContainsAny(o.Registry, " \t\n@") || strings.HasSuffix(o.Registry, "/") {
		return fmt.Errorf("--registry %q is not valid: want a registry host and path such as %s", o.Registry, DefaultRegistry)
	}
	if !tagRE.MatchString(o.Version) {
		return fmt.Errorf("--version %q is not a valid image tag", o.Version)
	}
	for _, k := range o.TolerationKeys {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("--toleration-keys %q is not a valid taint key: %s", k, errs[0])
		}
	}
	for c, d := range o.ImageDigests {
		if !slices.Contains(Components, c) || !digestRE.MatchString(d) {
			return fmt.Errorf("image digest %s=%s: want <component>=sha256:<64 hex digits>", c, d)
		}
	}
	return ValidateShards(o.Shards)
}

// Header is the comment the rendered bundle starts with (flux's
// GetGenWarning, with Eddy's name).
func Header(o Options) string {
	comps, _ := o.AllComponents()
	return fmt.Sprintf("---\n# This manifest was generated by eddy. DO NOT EDIT.\n# Eddy Version: %s\n# Components: %s\n", o.Version, strings.Join(comps, ","))
}

// Render returns the bundle as multi-document YAML: Header, then the
// objects of Objects in their order, separated by "---" lines. The same
// options give the same bytes.
func Render(o Options) ([]byte, error) {
	objs, err := Objects(o)
	if err != nil {
		return nil, err
	}
	return Manifest(o, objs)
}

// Manifest is Render for objects already built by Objects(o), for callers
// that need both without building the bundle twice.
func Manifest(o Options, objs []*unstructured.Unstructured) ([]byte, error) {
	docs, err := kustomize.YAMLStream(objs)
	if err != nil {
		return nil, err
	}
	return append([]byte(Header(o)), docs...), nil
}

// Objects builds the bundle's objects with kustomize from the embedded
// config/ bases, in kustomize's order (Namespace, ResourceQuota, CRDs,
// ServiceAccounts, RBAC, Services, Deployments, NetworkPolicies). Invalid
// options give Validate's error.
func Objects(o Options) ([]*unstructured.Unstructured, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	comps, _ := o.AllComponents()
	fsys := filesys.MakeFsInMemory()
	if err := copyConfig(fsys); err != nil {
		return nil, err
	}
	if err := writeOverlay(fsys, o, comps); err != nil {
		return nil, err
	}
	kopts := krusty.MakeDefaultOptions()
	kopts.Reorder = krusty.ReorderOptionLegacy // flux's order: Namespace, CRDs, RBAC, ..., Deployments
	resMap, err := krusty.MakeKustomizer(kopts).Run(fsys, "/install")
	if err != nil {
		return nil, fmt.Errorf("building the install bundle: %w", err)
	}
	var out []*unstructured.Unstructured
	for _, res := range resMap.Resources() {
		data, err := res.MarshalJSON()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			return nil, err
		}
		// The CRDs (and anything else) of a component not installed are left
		// out, as flux install leaves out their bases.
		if c, ok := u.GetLabels()[ComponentLabel]; ok && !slices.Contains(comps, c) {
			continue
		}
		if err := finish(u, o); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return addShards(withApplicationNamespace(out, o, comps), o)
}

// withApplicationNamespace adds the Namespace ApplicationNamespace after
// the install namespace when comps has application-controller, labelled as
// the bundle's objects are, with the component's label (uninstall deletes
// it by those labels).
func withApplicationNamespace(objs []*unstructured.Unstructured, o Options, comps []string) []*unstructured.Unstructured {
	if !slices.Contains(comps, ApplicationController) || o.Namespace == ApplicationNamespace {
		return objs
	}
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName(ApplicationNamespace)
	ns.SetLabels(map[string]string{PartOfLabel: PartOfValue, InstanceLabel: o.Namespace, VersionLabel: o.Version,
		ComponentLabel: ApplicationController})
	at := slices.IndexFunc(objs, func(u *unstructured.Unstructured) bool { return u.GetKind() == "Namespace" }) + 1
	return slices.Insert(objs, at, ns)
}

// finish sets what kustomize cannot: ServiceAccount subjects of bindings in
// the install namespace (the bases name flux-system, as Flux's do), and the
// controllers' images with tag and digest.
func finish(u *unstructured.Unstructured, o Options) error {
	switch u.GetKind() {
	case "ClusterRoleBinding", "RoleBinding":
		subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
		for _, s := range subjects {
			if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" {
				m["namespace"] = o.Namespace
			}
		}
		if subjects != nil {
			return unstructured.SetNestedSlice(u.Object, subjects, "subjects")
		}
	case "Deployment":
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			if m, ok := c.(map[string]any); ok && m["name"] == "manager" {
				img := fmt.Sprintf("%s/%s:%s", o.Registry, u.GetName(), o.Version)
				if d := o.ImageDigests[u.GetName()]; d != "" && (o.DigestsVersion == "" || o.DigestsVersion == o.Version) {
					img += "@" + d
				}
				m["image"] = img
			}
		}
		return unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
	}
	return nil
}

// copyConfig writes the embedded config/ tree under /config.
func copyConfig(fsys filesys.FileSystem) error {
	return fs.WalkDir(eddyconfig.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := eddyconfig.FS.ReadFile(p)
		if err != nil {
			return err
		}
		return fsys.WriteFile(path.Join("/config", p), data)
	})
}

// writeOverlay writes /install, the overlay flux install generates: the
// namespace, Flux's labels, RBAC with the -<namespace> suffix, network
// policies, the components, a node selector and tolerations, and the
// controllers' arguments replaced at Flux's positions.
func writeOverlay(fsys filesys.FileSystem, o Options, comps []string) error {
	resources := []string{"namespace.yaml"}
	if o.NetworkPolicy {
		resources = append(resources, "../config/policies")
	}
	resources = append(resources, "roles", "../config/crd")
	for _, c := range comps {
		resources = append(resources, "../config/"+c)
	}
	eventsAddr := ""
	if slices.Contains(comps, "notification-controller") {
		// A fully qualified name, so that a proxy's no_proxy of .cluster.local applies.
		eventsAddr = fmt.Sprintf("http://notification-controller.$(RUNTIME_NAMESPACE).svc.%s./", o.ClusterDomain)
	}
	watch := fmt.Sprintf("--watch-all-namespaces=%t", o.WatchAllNamespaces)
	logLevel := "--log-level=" + o.LogLevel
	patches := []map[string]any{{
		"path":   "node-selector.yaml",
		"target": map[string]any{"kind": "Deployment"},
	}}
	for _, c := range comps {
		var args []string
		switch c {
		case "notification-controller":
			args = []string{watch, logLevel}
		case ApplicationController:
			// It always watches every namespace: the objects Applications
			// render can be anywhere (it refuses =false).
			args = []string{"--events-addr=" + eventsAddr, "--watch-all-namespaces=true", logLevel}
		case "source-controller", SourceWatcher:
			args = []string{"--events-addr=" + eventsAddr, watch, logLevel, "", "", "",
				fmt.Sprintf("--storage-adv-addr=%s.$(RUNTIME_NAMESPACE).svc.%s.", c, o.ClusterDomain)}
		default:
			args = []string{"--events-addr=" + eventsAddr, watch, logLevel}
		}
		var ops []map[string]any
		for i, a := range args {
			if a != "" {
				ops = append(ops, map[string]any{"op": "replace", "path": fmt.Sprintf("/spec/template/spec/containers/0/args/%d", i), "value": a})
			}
		}
		patch, err := json.Marshal(ops)
		if err != nil {
			return err
		}
		patches = append(patches, map[string]any{
			"target": map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "name": c},
			"patch":  string(patch),
		})
	}
	files := map[string]any{
		"/install/kustomization.yaml": map[string]any{
			"apiVersion":   "kustomize.config.k8s.io/v1beta1",
			"kind":         "Kustomization",
			"namespace":    o.Namespace,
			"transformers": []string{"labels.yaml"},
			"resources":    resources,
			"patches":      patches,
		},
		"/install/namespace.yaml": map[string]any{
			"apiVersion": "v1",
			"kind":       "Namespace",
			"metadata": map[string]any{"name": o.Namespace, "labels": map[string]string{
				"pod-security.kubernetes.io/warn":         "restricted",
				"pod-security.kubernetes.io/warn-version": "latest",
			}},
		},
		"/install/labels.yaml": map[string]any{
			"apiVersion": "builtin",
			"kind":       "LabelTransformer",
			"metadata":   map[string]any{"name": "labels"},
			"labels":     map[string]string{InstanceLabel: o.Namespace, VersionLabel: o.Version, PartOfLabel: PartOfValue},
			"fieldSpecs": []map[string]any{
				{"path": "metadata/labels", "create": true},
				{"kind": "Deployment", "path": "spec/template/metadata/labels", "create": true},
			},
		},
		"/install/node-selector.yaml": nodeSelector(o),
		"/install/roles/kustomization.yaml": map[string]any{
			"apiVersion": "kustomize.config.k8s.io/v1beta1",
			"kind":       "Kustomization",
			"namespace":  o.Namespace,
			"resources":  []string{"../../config/rbac"},
			"nameSuffix": "-" + o.Namespace,
		},
	}
	for name, v := range files {
		data, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		if err := fsys.WriteFile(name, data); err != nil {
			return err
		}
	}
	return nil
}

// nodeSelector is the strategic merge patch flux install applies to every
// Deployment: Linux nodes, and a toleration per key.
func nodeSelector(o Options) map[string]any {
	spec := map[string]any{"nodeSelector": map[string]string{"kubernetes.io/os": "linux"}}
	if len(o.TolerationKeys) > 0 {
		var tol []map[string]string
		for _, k := range o.TolerationKeys {
			tol = append(tol, map[string]string{"key": k, "operator": "Exists"})
		}
		spec["tolerations"] = tol
	}
	return map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata":   map[string]any{"name": "all"},
		"spec":       map[string]any{"template": map[string]any{"spec": spec}},
	}
}
