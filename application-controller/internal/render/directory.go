package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// skipMarker in a file makes Argo CD skip it in a directory source.
const skipMarker = "+argocd:skip-file-rendering"

// manifestExt are the extensions a directory source reads unless
// disableExtensionFilter is set.
var manifestExt = regexp.MustCompile(`^.*\.(yaml|yml|json|jsonnet)$`)

// renderDirectory reads a directory source (argocd-contract §1.6, §7.3):
// files in lexical order, sub-directories only with recurse; include and
// exclude globs on the path relative to the app path; `.yaml`/`.yml` as
// multi-document YAML, `.json` as one object, `.jsonnet` evaluated. A YAML
// file that fails to decode and does not look like a manifest (apiVersion,
// kind and metadata) is skipped, as Argo CD skips it; errors name the file
// relative to the repository root.
func renderDirectory(in Input) ([]*unstructured.Unstructured, error) {
	var spec argov1.ApplicationSourceDirectory
	if in.Source.Directory != nil {
		spec = *in.Source.Directory
	}
	var include, exclude *regexp.Regexp
	var err error
	if spec.Include != "" {
		if include, err = compileGlob(spec.Include); err != nil {
			return nil, fmt.Errorf("directory include: %w", err)
		}
	}
	if spec.Exclude != "" {
		if exclude, err = compileGlob(spec.Exclude); err != nil {
			return nil, fmt.Errorf("directory exclude: %w", err)
		}
	}
	dir, err := appDir(in.Root, in.Source)
	if err != nil {
		return nil, err
	}
	app := appRel(in.Source)
	vars := env(in)
	var objs []*unstructured.Unstructured
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && (!spec.Recurse || d.Name() == ".git") {
				return filepath.SkipDir
			}
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(p, dir+string(filepath.Separator)))
		if !spec.DisableExtensionFilter && !manifestExt.MatchString(d.Name()) {
			return nil
		}
		if (exclude != nil && exclude.MatchString(rel)) || (include != nil && !include.MatchString(rel)) {
			return nil
		}
		repoRel := path.Join(app, rel)
		more, err := readManifest(in.Root, app, repoRel, spec, vars)
		objs = append(objs, more...)
		return err
	})
	if err != nil {
		return nil, err
	}
	return objs, nil
}

// readManifest reads the objects of one directory file, repoRel relative
// to the repository root; a link is followed inside the repository only,
// and a link to something that is not a regular file is skipped.
func readManifest(root, app, repoRel string, spec argov1.ApplicationSourceDirectory, vars map[string]string) ([]*unstructured.Unstructured, error) {
	abs, err := inRoot(root, ".", repoRel)
	if err != nil {
		return nil, fmt.Errorf("illegal symlink at '%s': %w", repoRel, err)
	}
	fi, err := os.Stat(abs)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, nil
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		return nil, fmt.Errorf("failed to read '%s'", repoRel)
	}
	if bytes.Contains(data, []byte(skipMarker)) {
		return nil, nil
	}
	switch {
	case strings.HasSuffix(repoRel, ".jsonnet"):
		return evalJsonnet(root, app, repoRel, spec.Jsonnet, vars)
	case strings.HasSuffix(repoRel, ".json"):
		return decodeJSONFile(data, repoRel)
	}
	objs, err := decodeStream(data, repoRel)
	if err != nil && len(objs) == 0 && !looksLikeManifest(data) {
		return nil, nil
	}
	return objs, err
}

// decodeJSONFile decodes a `.json` file of a directory source: exactly one
// object.
func decodeJSONFile(data []byte, repoRel string) ([]*unstructured.Unstructured, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("failed to unmarshal '%s': %s", repoRel, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("found multiple objects in '%s': a JSON file holds one object", repoRel)
	}
	var doc any
	if err := utiljson.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("failed to unmarshal '%s': %s", repoRel, err)
	}
	if doc == nil {
		return nil, nil
	}
	return appendObject(nil, doc, repoRel)
}

// looksLikeManifest reports whether a file that did not decode was meant
// as a Kubernetes manifest, so that its error is reported.
func looksLikeManifest(data []byte) bool {
	return bytes.Contains(data, []byte("apiVersion:")) && bytes.Contains(data, []byte("kind:")) && bytes.Contains(data, []byte("metadata:"))
}
