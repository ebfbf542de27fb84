package render

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	jsonnet "github.com/google/go-jsonnet"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// evalJsonnet evaluates the jsonnet file at repoRel (slash-separated,
// relative to root) with spec's extVars, TLAs and libs, as Argo CD does
// (argocd-contract §7.3): values are $ARGOCD_APP_* expanded, a var with
// code set is jsonnet code, libs are relative to the repository root and
// come after the app's own directory on the import path. The result must
// be an array of objects or one object.
func evalJsonnet(root, appRel, repoRel string, spec argov1.ApplicationSourceJsonnet, vars map[string]string) ([]*unstructured.Unstructured, error) {
	vm := jsonnet.MakeVM()
	for _, v := range spec.TLAs {
		if v.Code {
			vm.TLACode(v.Name, envsubst(v.Value, vars))
		} else {
			vm.TLAVar(v.Name, envsubst(v.Value, vars))
		}
	}
	for _, v := range spec.ExtVars {
		if v.Code {
			vm.ExtCode(v.Name, envsubst(v.Value, vars))
		} else {
			vm.ExtVar(v.Name, envsubst(v.Value, vars))
		}
	}
	im := &repoImporter{root: root, jpaths: []string{appRel}, cache: map[string]jsonnet.Contents{}}
	for _, lib := range spec.Libs {
		rel := cleanRel(path.Join(".", lib))
		if path.IsAbs(lib) || escapes(rel) {
			return nil, fmt.Errorf("jsonnet library %w", outside(lib))
		}
		im.jpaths = append(im.jpaths, rel)
	}
	vm.Importer(im)
	out, err := vm.EvaluateFile(repoRel)
	if err != nil {
		return nil, fmt.Errorf("failed to evaluate jsonnet '%s': %s", repoRel, err)
	}
	var doc any
	if err := utiljson.Unmarshal([]byte(out), &doc); err != nil {
		return nil, fmt.Errorf("failed to unmarshal the output of jsonnet '%s': %s", repoRel, err)
	}
	docs, ok := doc.([]any)
	if !ok {
		docs = []any{doc}
	}
	var objs []*unstructured.Unstructured
	for _, d := range docs {
		if d == nil {
			continue
		}
		if objs, err = appendObject(objs, d, repoRel); err != nil {
			return nil, err
		}
	}
	return objs, nil
}

// repoImporter is a jsonnet importer confined to a repository: paths are
// slash-separated and relative to root (so jsonnet's messages name files
// relative to the repository), an import is looked up beside the importing
// file, then in each of jpaths, and one that leaves root is refused.
type repoImporter struct {
	root   string
	jpaths []string
	cache  map[string]jsonnet.Contents
}

// Import implements jsonnet.Importer.
func (im *repoImporter) Import(from, p string) (jsonnet.Contents, string, error) {
	if path.IsAbs(p) {
		return jsonnet.Contents{}, "", fmt.Errorf("jsonnet import %w", outside(p))
	}
	candidates := []string{p}
	if from != "" {
		candidates = []string{path.Join(path.Dir(from), p)}
		for _, j := range im.jpaths {
			candidates = append(candidates, path.Join(j, p))
		}
	}
	for _, c := range candidates {
		c = cleanRel(c)
		if escapes(c) {
			return jsonnet.Contents{}, "", fmt.Errorf("jsonnet import %w", outside(p))
		}
		if data, ok := im.cache[c]; ok {
			return data, c, nil
		}
		abs, err := inRoot(im.root, ".", c)
		if err != nil {
			return jsonnet.Contents{}, "", fmt.Errorf("jsonnet import %w", outside(p))
		}
		data, err := os.ReadFile(abs)
		if errors.Is(err, fs.ErrNotExist) || isDirErr(abs) {
			continue
		}
		if err != nil {
			return jsonnet.Contents{}, "", fmt.Errorf("reading jsonnet import '%s': %s", c, scrub(err.Error(), im.root))
		}
		im.cache[c] = jsonnet.MakeContentsRaw(data)
		return im.cache[c], c, nil
	}
	return jsonnet.Contents{}, "", fmt.Errorf("couldn't open import %q: not found beside the importing file or in the library paths", p)
}

// isDirErr reports whether abs is a directory (reading it fails).
func isDirErr(abs string) bool {
	fi, err := os.Stat(abs)
	return err == nil && fi.IsDir()
}
