package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/eddyops/eddy/pkg/localcluster"
)

// BootstrappedRepo copies the real repository testdata/repos/<name> into
// dir and writes Eddy's CRDs of Flux's groups (config/crd/bases/
// *.toolkit.fluxcd.io_*.yaml but image.toolkit.fluxcd.io's; Argo CD's and
// the image kinds go only with application-controller and the image
// controllers, not among bootstrap's default components) into
// clusters/<cluster>/flux-system/gotk-components.yaml, as `flux bootstrap`
// writes Flux's components there: a real repository that carries CRDs, all
// of them already installed in a test cluster. It returns the CRDs' names.
func BootstrappedRepo(testdata, name, cluster, dir string) ([]string, error) {
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(testdata, "repos", name))); err != nil {
		return nil, err
	}
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		return nil, err
	}
	files, err := filepath.Glob(filepath.Join(root, "config", "crd", "bases", "*.toolkit.fluxcd.io_*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRD files in config/crd/bases (%v)", err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasPrefix(filepath.Base(f), "image.toolkit.fluxcd.io_") })
	sort.Strings(files)
	var docs, names []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		docs = append(docs, strings.TrimPrefix(string(b), "---\n"))
		// config/crd/bases/<group>_<plural>.yaml holds <plural>.<group>.
		group, plural, _ := strings.Cut(strings.TrimSuffix(filepath.Base(f), ".yaml"), "_")
		names = append(names, plural+"."+group)
	}
	components := filepath.Join(dir, "clusters", cluster, "flux-system", "gotk-components.yaml")
	if _, err := os.Stat(components); err != nil {
		return nil, fmt.Errorf("%s has no clusters/%s/flux-system/gotk-components.yaml: %w", name, cluster, err)
	}
	content := "# Eddy's CRDs, as a bootstrap writes them.\n---\n" + strings.Join(docs, "---\n")
	return names, os.WriteFile(components, []byte(content), 0o644)
}
