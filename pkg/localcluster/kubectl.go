package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// Kubectl returns the path of kubectl in the directory of the binaries that
// `make tools` builds ($EDDY_K8S_BIN_DIR, else <workspace root>/bin/k8s;
// tools/kubectl.sh builds it, of the cluster's Kubernetes release). The
// error wraps ErrBinariesMissing when it is not there.
func Kubectl() (string, error) {
	dir, err := findBinDir("")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubectl")
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%w (no kubectl in %s)", ErrBinariesMissing, dir)
	}
	return path, nil
}
