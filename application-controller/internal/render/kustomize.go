package render

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"github.com/eddyops/eddy/pkg/kustomize"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/kustomize/api/krusty"
	kustypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// renderKustomize builds a kustomize source as Argo CD's `kustomize build
// <path>` does (argocd-contract §1.5, §7.2), with krusty on an in-memory
// copy of the repository: kustomize's defaults otherwise (no Helm
// inflation, no plugins), a kustomization may reach any directory of the
// repository (`../base`) and nothing outside it, and a remote base is
// refused. The source's kustomize overrides are applied to the copy of the
// kustomization as `kustomize edit` would write them. Errors name paths
// from the repository root ("/").
func renderKustomize(in Input) ([]*unstructured.Unstructured, error) {
	dir, err := appDir(in.Root, in.Source)
	if err != nil {
		return nil, err
	}
	fsys, err := copyRepo(in.Root)
	if err != nil {
		return nil, err
	}
	vdir := "/" + appRel(in.Source)
	if vdir == "/." {
		vdir = "/"
	}
	if opts := in.Source.Kustomize; opts != nil && hasOverrides(opts) {
		kfile := kustomizationFile(dir)
		if kfile == "" {
			return nil, fmt.Errorf("kustomization file not found in '%s'", in.Source.Path)
		}
		if err := editKustomization(fsys, path.Join(vdir, kfile), vdir, opts, env(in)); err != nil {
			return nil, err
		}
	}
	if err := kustomize.RefuseRemote(fsys, vdir); err != nil {
		return nil, err
	}
	if err := refuseOutside(fsys, vdir, map[string]bool{}); err != nil {
		return nil, err
	}
	resMap, err := kustomize.RunOrdered(fsys, vdir, krusty.ReorderOptionUnspecified)
	if err != nil {
		return nil, fmt.Errorf("kustomize build failed: %s", err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		js, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("kustomize build failed: %s", err)
		}
		var doc any
		if err := utiljson.Unmarshal(js, &doc); err != nil {
			return nil, fmt.Errorf("decoding built object %s: %s", r.CurId(), err)
		}
		if objs, err = appendObject(objs, doc, r.CurId().String()); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// copyRepo copies the repository's files (not .git) into a kustomize
// in-memory filesystem rooted at "/". Links were checked to stay inside the
// repository (checkSymlinks; an unpacked artifact holds none, its links
// were resolved by source-controller): a link to a file is copied as that
// file, a link to a directory is left out.
func copyRepo(root string) (filesys.FileSystem, error) {
	fsys := filesys.MakeFsInMemory()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := relTo(root, p)
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return fsys.MkdirAll("/" + rel)
		}
		fi, err := os.Stat(p)
		if err != nil || !fi.Mode().IsRegular() {
			return nil //nolint:nilerr // a dangling link or a special file is not part of a build
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("reading '%s': %s", rel, scrub(err.Error(), root))
		}
		return fsys.WriteFile("/"+rel, data)
	})
	return fsys, err
}

// refuseOutside walks the kustomizations reachable from dir (on fsys,
// rooted at the repository root) and refuses a resource, base, component
// or patch file whose path climbs above the repository root: in memory it
// would silently resolve to the root, so it is named here as written.
func refuseOutside(fsys filesys.FileSystem, dir string, seen map[string]bool) error {
	if seen[dir] {
		return nil
	}
	seen[dir] = true
	kfile := kustomize.FindKustomizationFile(fsys, dir)
	if kfile == "" {
		return nil
	}
	data, err := fsys.ReadFile(kfile)
	if err != nil {
		return err
	}
	var k kustypes.Kustomization
	if err := yaml.Unmarshal(data, &k); err != nil {
		return fmt.Errorf("%s: %s", kfile, err)
	}
	entries := append(append(append([]string{}, k.Resources...), k.Bases...), k.Components...)
	files := []string{}
	for _, p := range k.Patches {
		files = append(files, p.Path)
	}
	for _, p := range k.PatchesStrategicMerge {
		files = append(files, string(p))
	}
	for _, e := range append(entries, files...) {
		if e == "" || path.IsAbs(e) {
			continue
		}
		if escapes(path.Join(dir[1:], e)) {
			return fmt.Errorf("'%s' in %s: %w", e, kfile[1:], outside(e))
		}
	}
	for _, e := range entries {
		if p := path.Join(dir, e); fsys.IsDir(p) {
			if err := refuseOutside(fsys, p, seen); err != nil {
				return err
			}
		}
	}
	return nil
}

// hasOverrides reports whether the kustomize block changes the
// kustomization (a kustomize block of only versions does not).
func hasOverrides(o *argov1.ApplicationSourceKustomize) bool {
	return o.NamePrefix != "" || o.NameSuffix != "" || len(o.Images) > 0 || len(o.Replicas) > 0 ||
		len(o.CommonLabels) > 0 || len(o.CommonAnnotations) > 0 || o.Namespace != "" ||
		len(o.Patches) > 0 || len(o.Components) > 0
}
