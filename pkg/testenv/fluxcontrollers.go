package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/eddyops/eddy/pkg/localcluster"
)

// FluxController returns the path of Flux's own controller <name> (e.g.
// "kustomize-controller") as tools/flux-controllers.sh builds it, bin/flux-<name>
// of the workspace, for benchmarks that run it beside Eddy's. Without that
// binary tb is skipped with the command that builds it: the benchmarks that
// need it are `make bench`'s, whose prerequisites build it.
func FluxController(tb testing.TB, name string) string {
	tb.Helper()
	path := BuiltFluxController(tb, name)
	if path == "" {
		tb.Skip(fmt.Sprintf("Flux's %s is not built: run `bash tools/flux-controllers.sh %s` (make bench does)", name, name))
	}
	return path
}

// BuiltFluxController is FluxController for a benchmark that runs Flux's
// binary only when it is built: "" when it is not.
func BuiltFluxController(tb testing.TB, name string) string {
	tb.Helper()
	root, err := localcluster.WorkspaceRoot()
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(root, "bin", "flux-"+name)
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	return path
}

// StartFluxController is StartController for Flux's own controller binary
// exe (FluxController), which has no --kubeconfig flag: the cluster is
// given to it in $KUBECONFIG.
func StartFluxController(e *Environment, exe, logPath string, args ...string) (*Process, error) {
	return start(exe, logPath, []string{"KUBECONFIG=" + e.KubeconfigPath}, args)
}
