package render

import (
	"encoding/json"
	"fmt"
	"os"
	"path"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	jsonpatch "github.com/evanphx/json-patch/v5"
	"sigs.k8s.io/yaml"
)

// mergeSourceFiles applies the parameter override files Argo CD reads in
// an app path (argocd-contract §1.2; Argo CD Image Updater writes them):
// `.argocd-source.yaml`, then `.argocd-source-<appName>.yaml`, each a JSON
// merge patch of the source in YAML. Only the tool options change: repoURL,
// path, chart, targetRevision, ref and name stay as the Application says.
// Errors name the file relative to the repository root.
func mergeSourceFiles(root string, src argov1.ApplicationSource, appName string) (argov1.ApplicationSource, error) {
	if src.Plugin != nil {
		return src, nil
	}
	if _, err := appDir(root, src); err != nil {
		return src, err
	}
	names := []string{".argocd-source.yaml"}
	if appName != "" {
		names = append(names, ".argocd-source-"+appName+".yaml")
	}
	merged := *src.DeepCopy()
	for _, n := range names {
		rel := path.Join(appRel(src), n)
		abs, err := inRoot(root, ".", rel)
		if err != nil {
			return src, err
		}
		fi, err := os.Stat(abs)
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		if merged, err = mergeSourceFile(merged, abs); err != nil {
			return src, fmt.Errorf("%s: %s", rel, scrub(err.Error(), root))
		}
	}
	merged.RepoURL, merged.Path, merged.Chart = src.RepoURL, src.Path, src.Chart
	merged.TargetRevision, merged.Ref, merged.Name = src.TargetRevision, src.Ref, src.Name
	return merged, nil
}

// mergeSourceFile merge-patches src with the YAML file at abs.
func mergeSourceFile(src argov1.ApplicationSource, abs string) (argov1.ApplicationSource, error) {
	data, err := os.ReadFile(abs)
	if err != nil {
		return src, err
	}
	patch, err := yaml.YAMLToJSON(data)
	if err != nil {
		return src, err
	}
	doc, err := json.Marshal(src)
	if err != nil {
		return src, err
	}
	if doc, err = jsonpatch.MergePatch(doc, patch); err != nil {
		return src, err
	}
	var out argov1.ApplicationSource
	if err := json.Unmarshal(doc, &out); err != nil {
		return src, err
	}
	return out, nil
}
