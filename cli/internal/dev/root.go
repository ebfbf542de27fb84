package dev

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"

	"github.com/eddyops/eddy/cli/internal/ui"
	"github.com/eddyops/eddy/pkg/localcluster"
)

// FindRoot returns the Eddy checkout that holds bin/ and config/: $EDDY_ROOT,
// else the parent of the directory of this executable (bin/eddy), else the
// nearest directory above the working directory with go.work.
func FindRoot() (string, error) {
	ok := func(d string) bool { return fileExists(filepath.Join(d, "config", "crd", "bases")) }
	if d := os.Getenv("EDDY_ROOT"); d != "" {
		if !ok(d) {
			return "", fmt.Errorf("EDDY_ROOT=%s has no config/crd/bases", d)
		}
		return filepath.Abs(d)
	}
	if exe, err := os.Executable(); err == nil {
		if exe, err = filepath.EvalSymlinks(exe); err == nil {
			if d := filepath.Dir(filepath.Dir(exe)); ok(d) {
				return d, nil
			}
		}
	}
	if d, err := localcluster.WorkspaceRoot(); err == nil && ok(d) {
		return d, nil
	}
	return "", errors.New("cannot find the Eddy checkout (bin/ and config/): run bin/eddy of a checkout, or set EDDY_ROOT")
}

// K8sBinDir is where the local cluster's binaries are: $EDDY_K8S_BIN_DIR,
// else root/bin/k8s.
func K8sBinDir(root string) string {
	if d := os.Getenv("EDDY_K8S_BIN_DIR"); d != "" {
		return d
	}
	return filepath.Join(root, "bin", "k8s")
}

// Helpers are the controllers' helper binaries, by package, built into
// bin/ beside them (kustomize-controller runs its SOPS helper eddy-sops
// from its own directory).
var Helpers = []string{"./kustomize-controller/cmd/eddy-sops"}

// EnsureBinaries builds what is missing: bin/k8s (once, about 15 minutes)
// and the controller binaries, with the build's output shown.
func EnsureBinaries(root string, u *ui.UI, out io.Writer) error {
	k8s := K8sBinDir(root)
	complete := true
	for _, b := range []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"} {
		if !fileExists(filepath.Join(k8s, b)) {
			complete = false
		}
	}
	if !complete {
		u.Action("building the local cluster's binaries into %s: this happens once and takes about 15 minutes on 2 cores", k8s)
		cmd := exec.Command("bash", filepath.Join(root, "tools", "build.sh"))
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, out, out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building the local cluster's binaries (tools/build.sh): %w", err)
		}
	}
	var missing []string
	for _, c := range Controllers {
		if !fileExists(filepath.Join(root, "bin", c)) {
			missing = append(missing, "./"+c)
		}
	}
	for _, h := range Helpers {
		if !fileExists(filepath.Join(root, "bin", path.Base(h))) {
			missing = append(missing, h)
		}
	}
	if len(missing) > 0 {
		u.Action("building %s into bin/", strings.Join(missing, ", "))
		cmd := exec.Command("go", append([]string{"build", "-o", "bin/"}, missing...)...)
		cmd.Dir, cmd.Stdout, cmd.Stderr = root, out, out
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("building the controllers: %w", err)
		}
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
