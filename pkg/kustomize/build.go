// Package kustomize turns a Kustomization's path inside a source artifact into
// Kubernetes objects: it generates a kustomization.yaml where there is none,
// merges the Kustomization's spec overlays, runs kustomize on a filesystem
// confined to the artifact, then applies postBuild substitution and
// commonMetadata. Flux compatible (contract §4.2): the same generation
// rules, overlay merge, load restrictions and substitution syntax.
package kustomize

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/provider"
	"sigs.k8s.io/kustomize/api/resmap"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/yaml"
)

// Options are the parts of a Kustomization spec that shape the build.
type Options struct {
	// Path inside the artifact root; "" and "./" mean the root.
	Path            string
	TargetNamespace string
	NamePrefix      string
	NameSuffix      string
	Patches         []kustomizev1.Patch
	Images          []kustomizev1.Image
	Components      []string
	// IgnoreMissingComponents drops components whose path does not exist.
	IgnoreMissingComponents bool
	CommonMetadata          *kustomizev1.CommonMetadata
	// BuildMetadata are kustomize's buildMetadata options
	// (originAnnotations, transformerAnnotations).
	BuildMetadata []string
	// PostBuild enables substitution with Vars (the merged substitute and
	// substituteFrom variables) per Strategy (WithVariables or Always).
	PostBuild bool
	Vars      map[string]string
	Strategy  string
	// NonStrict substitutes an undefined variable without a default with
	// "" instead of failing: Flux's feature gate
	// StrictPostBuildSubstitutions=false (the gate is on by default).
	NonStrict bool
	// Decryptor, when set, decrypts the build's SOPS-encrypted inputs, in
	// memory: spec.decryption.
	Decryptor Decryptor
}

// Decryptor decrypts the SOPS-encrypted inputs of a build; nothing it
// decrypts is written to disk. Flux compatible (contract §4.2): generator
// and patch sources are decrypted before kustomize runs, built objects
// after, before postBuild substitution. Every error it returns names the
// object (or file) and is returned by Build as it is.
type Decryptor interface {
	// DecryptSources decrypts, before the build, the files that the
	// kustomization at dir (and those it reaches) feed to generators and
	// patches, replacing them in fs with their plaintext.
	DecryptSources(fs filesys.FileSystem, dir string) error
	// DecryptFile is given each artifact file kustomize reads, the first
	// time; it returns the plaintext of a SOPS-encrypted resource file, or
	// nil to leave the file as it is.
	DecryptFile(path string, data []byte) ([]byte, error)
	// DecryptObject decrypts a built object in place.
	DecryptObject(u *unstructured.Unstructured) error
}

// Result is the outcome of a build.
type Result struct {
	// Objects in kustomize's output order.
	Objects []*unstructured.Unstructured
	// Generated is true when the path had no kustomization file.
	Generated bool
	// Kustomization is the kustomization built: generated or read, with the
	// spec's overlays merged.
	Kustomization kustypes.Kustomization
	// YAML is Objects as a multi-document YAML stream, the input of the
	// history digest.
	YAML []byte
}

// ErrPathNotFound is wrapped by Build's error when spec.path is not a
// directory of the artifact; its text starts the message ("kustomization
// path not found: '<path>' is not a directory in the artifact"). Flux
// compatible: Flux reports this case with reason ArtifactFailed, not
// BuildFailed, so callers tell it apart with errors.Is.
var ErrPathNotFound = errors.New("kustomization path not found")

// Build builds the Kustomization at opts.Path inside the artifact t. A
// generated or merged kustomization.yaml is written to a layer private to
// this build, so t can be shared. Errors name paths inside the artifact,
// from its root "/".
//
// opts.Path is taken under the artifact root, as Flux's SecureJoin takes
// it: "/apps" and "./apps" both mean apps. A relative path that climbs out
// of the root ("../x", "a/../../x") is refused with "spec.path '<path>'
// points outside the artifact"; a path that is not a directory fails with
// ErrPathNotFound. A kustomization reaching a remote base or URL is refused
// before kustomize runs (see refuseRemote): unlike Flux, Eddy does not
// support remote bases yet.
func Build(t *Tree, opts Options) (*Result, error) {
	if p := path.Clean(filepath.ToSlash(opts.Path)); p == ".." || strings.HasPrefix(p, "../") {
		return nil, fmt.Errorf("spec.path '%s' points outside the artifact", opts.Path)
	}
	fs := newLayerFS(t)
	dir := clean(opts.Path)
	if !fs.IsDir(dir) {
		return nil, fmt.Errorf("%w: '%s' is not a directory in the artifact", ErrPathNotFound, opts.Path)
	}
	kfile, kus, generated, err := readKustomization(fs, dir)
	if err != nil {
		return nil, err
	}
	if err := mergeSpec(fs, &kus, dir, opts); err != nil {
		return nil, err
	}
	res := &Result{Generated: generated, Kustomization: kus}
	data, err := yaml.Marshal(&kus)
	if err != nil {
		return nil, err
	}
	if err := fs.WriteFile(kfile, data); err != nil {
		return nil, err
	}
	if err := refuseRemote(fs, dir); err != nil {
		return nil, err
	}
	if res.Objects, err = runDecrypting(fs, dir, opts.Decryptor); err != nil {
		return nil, err
	}
	if opts.PostBuild {
		if err := substitute(res.Objects, opts.Vars, opts.Strategy, !opts.NonStrict); err != nil {
			return nil, err
		}
	}
	if m := opts.CommonMetadata; m != nil {
		for _, u := range res.Objects {
			u.SetLabels(merge(u.GetLabels(), m.Labels))
			u.SetAnnotations(merge(u.GetAnnotations(), m.Annotations))
		}
	}
	if res.YAML, err = YAMLStream(res.Objects); err != nil {
		return nil, err
	}
	return res, nil
}

// readKustomization reads the kustomization file of dir, or generates one
// (generated true) whose resources are the manifests under dir; kfile is
// where it is (to be) written.
func readKustomization(fs *layerFS, dir string) (kfile string, kus kustypes.Kustomization, generated bool, err error) {
	kfile = FindKustomizationFile(fs, dir)
	if kfile == "" {
		kfile = path.Join(dir, konfig.DefaultKustomizationFileName())
		resources, err := generateResources(fs, dir)
		if err != nil {
			return "", kus, false, err
		}
		kus = kustypes.Kustomization{
			TypeMeta:  kustypes.TypeMeta{APIVersion: kustypes.KustomizationVersion, Kind: kustypes.KustomizationKind},
			Resources: resources,
		}
		if len(resources) == 0 {
			// Flux compatible: an empty directory builds nothing (and so
			// prunes everything) rather than failing as an empty kustomization.
			kus.Namespace = "_placeholder"
		}
		return kfile, kus, true, nil
	}
	data, err := fs.ReadFile(kfile)
	if err != nil {
		return "", kus, false, err
	}
	if err := yaml.Unmarshal(data, &kus); err != nil {
		return "", kus, false, fmt.Errorf("%s: %w", kfile, err)
	}
	if len(kus.Resources) == 0 && !slices.Contains(kus.BuildMetadata, kustypes.OriginAnnotations) {
		// Flux compatible: a kustomization without resources is not an
		// "empty kustomization" error.
		kus.BuildMetadata = append(kus.BuildMetadata, kustypes.OriginAnnotations)
	}
	return kfile, kus, false, nil
}

// runDecrypting runs kustomize at dir of fs and returns the built objects,
// with dec (when not nil) decrypting the sources first, each resource file
// as kustomize reads it and each built object.
func runDecrypting(fs *layerFS, dir string, dec Decryptor) ([]*unstructured.Unstructured, error) {
	if dec != nil {
		if err := dec.DecryptSources(fs, dir); err != nil {
			return nil, err
		}
		fs.mu.Lock()
		fs.onRead = dec.DecryptFile
		fs.mu.Unlock()
	}
	resMap, err := Run(fs, dir)
	fs.mu.Lock()
	readErr := fs.readErr
	fs.mu.Unlock()
	if readErr != nil {
		return nil, readErr
	}
	if err != nil {
		return nil, fmt.Errorf("kustomize build failed: %s", err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		js, err := r.MarshalJSON()
		if err != nil {
			return nil, err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("decoding built object %s: %w", r.CurId(), err)
		}
		if dec != nil {
			if err := dec.DecryptObject(u); err != nil {
				return nil, err
			}
		}
		objs = append(objs, u)
	}
	return objs, nil
}

// YAMLStream is objs as a multi-document YAML stream: each object's YAML,
// "---" between two. nil for no objects.
func YAMLStream(objs []*unstructured.Unstructured) ([]byte, error) {
	var out bytes.Buffer
	for i, u := range objs {
		doc, err := yaml.Marshal(u.Object)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(doc)
	}
	return out.Bytes(), nil
}

// kustomizeMu serialises krusty runs: kustomize keeps process-wide state
// (kyaml's OpenAPI schema, set by a kustomization's openapi field; maps
// not safe for concurrent builds) that one build would otherwise change
// under another. Flux compatible: fluxcd/pkg's kustomize.Build holds a
// package mutex too.
var kustomizeMu sync.Mutex

// Run builds the kustomization at dir of fs as Flux does: without load
// restrictions, plugins disabled, one build at a time in the process (see
// kustomizeMu), kyaml's OpenAPI schema reset afterwards, a panic inside
// kustomize returned as "recovered from kustomize build panic: ...". Shared
// with helm-controller's post-renderer.
func Run(fs filesys.FileSystem, dir string) (res resmap.ResMap, err error) {
	return RunOrdered(fs, dir, krusty.MakeDefaultOptions().Reorder)
}

// RunOrdered is Run with kustomize's output order: krusty's
// ReorderOptionUnspecified is the kustomize command's default (legacy kind
// order unless the kustomization sets sortOptions), which Argo CD's
// `kustomize build` produces; Run keeps krusty's library default.
func RunOrdered(fs filesys.FileSystem, dir string, reorder krusty.ReorderOption) (res resmap.ResMap, err error) {
	kustomizeMu.Lock()
	defer kustomizeMu.Unlock()
	defer openapi.ResetOpenAPI()
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("recovered from kustomize build panic: %v", r)
		}
	}()
	kopts := krusty.MakeDefaultOptions()
	kopts.Reorder = reorder
	kopts.LoadRestrictions = kustypes.LoadRestrictionsNone // Flux builds without load restrictions; only the artifact is reachable
	kopts.PluginConfig = kustypes.DisabledPluginConfig()
	return krusty.MakeKustomizer(kopts).Run(fs, dir)
}

// FindKustomizationFile is the path of dir's kustomization file on fs (the
// first of the names kustomize recognises, in its order:
// kustomization.yaml, kustomization.yml, Kustomization), "" when it has
// none.
func FindKustomizationFile(fs filesys.FileSystem, dir string) string {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		p := path.Join(dir, name)
		if fs.Exists(p) && !fs.IsDir(p) {
			return p
		}
	}
	return ""
}

// generateResources lists what a generated kustomization.yaml holds, the
// way Flux generates it: the directory is walked in lexical order; a
// sub-directory with a kustomization file of its own is added as a resource
// and not descended into; every *.yaml / *.yml file that decodes as
// Kubernetes YAML is added (a file that does not is an error).
func generateResources(fs *layerFS, dir string) ([]string, error) {
	rf := provider.NewDefaultDepProvider().GetResourceFactory()
	var resources []string
	err := fs.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel := "./" + strings.TrimPrefix(p, strings.TrimSuffix(dir, "/")+"/")
		if info.IsDir() {
			if FindKustomizationFile(fs, p) != "" {
				resources = append(resources, rel)
				return filepath.SkipDir
			}
			return nil
		}
		if ext := path.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := fs.ReadFile(p)
		if err != nil {
			return err
		}
		if _, err := rf.SliceFromBytes(data); err != nil {
			return fmt.Errorf("failed to decode Kubernetes YAML from %s: %v", rel, err)
		}
		resources = append(resources, rel)
		return nil
	})
	return resources, err
}

// mergeSpec adds the Kustomization's overlays to a kustomization. Flux
// compatible: targetNamespace sets the namespace, prefix and suffix are set,
// patches, images and components are appended.
func mergeSpec(fs *layerFS, kus *kustypes.Kustomization, dir string, opts Options) error {
	if opts.TargetNamespace != "" {
		kus.Namespace = opts.TargetNamespace
	}
	if opts.NamePrefix != "" {
		kus.NamePrefix = opts.NamePrefix
	}
	if opts.NameSuffix != "" {
		kus.NameSuffix = opts.NameSuffix
	}
	for _, m := range opts.BuildMetadata {
		if !slices.Contains(kus.BuildMetadata, m) {
			kus.BuildMetadata = append(kus.BuildMetadata, m)
		}
	}
	kus.Patches = append(kus.Patches, Patches(opts.Patches)...)
	kus.Images = mergeImages(kus.Images, Images(opts.Images))
	for _, c := range opts.Components {
		if path.IsAbs(c) || strings.Contains(c, "://") {
			return fmt.Errorf("component '%s' must be a relative local path", c)
		}
		if opts.IgnoreMissingComponents && !fs.Exists(path.Join(dir, c)) {
			continue
		}
		kus.Components = append(kus.Components, c)
	}
	return nil
}

// Patches converts Flux patches (a Kustomization's, a HelmRelease
// post-renderer's) to kustomize's, targets included.
func Patches(patches []kustomizev1.Patch) []kustypes.Patch {
	var out []kustypes.Patch
	for _, p := range patches {
		kp := kustypes.Patch{Patch: p.Patch}
		if t := p.Target; t != nil {
			kp.Target = &kustypes.Selector{
				ResId:              resIDSelector(t.Group, t.Version, t.Kind, t.Name, t.Namespace),
				AnnotationSelector: t.AnnotationSelector, LabelSelector: t.LabelSelector,
			}
		}
		out = append(out, kp)
	}
	return out
}

// Images converts Flux image overrides to kustomize's.
func Images(images []kustomizev1.Image) []kustypes.Image {
	var out []kustypes.Image
	for _, img := range images {
		out = append(out, kustypes.Image{Name: img.Name, NewName: img.NewName, NewTag: img.NewTag, Digest: img.Digest})
	}
	return out
}

// mergeImages adds the spec's image overrides to the kustomization's.
// Flux compatible (fluxcd/pkg/kustomize's generator): an override of an
// image the kustomization already names keeps the declared newName unless
// it gives one, and replaces newTag and digest together when it gives
// either, as kustomize's images transformer replaces an image's tag and
// digest together; so the result is what a kustomize overlay of the spec's
// entry over the kustomization's would render (a declared newTag kept next
// to a spec digest would render "name:tag@digest").
func mergeImages(declared, spec []kustypes.Image) []kustypes.Image {
	for _, img := range spec {
		i := slices.IndexFunc(declared, func(d kustypes.Image) bool { return d.Name == img.Name })
		if i < 0 {
			declared = append(declared, img)
			continue
		}
		d := &declared[i]
		if img.NewName != "" {
			d.NewName = img.NewName
		}
		if img.NewTag != "" || img.Digest != "" {
			d.NewTag, d.Digest = img.NewTag, img.Digest
		}
	}
	return declared
}

func merge(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = map[string]string{}
	}
	for k, v := range src {
		dst[k] = v
	}
	return dst
}
