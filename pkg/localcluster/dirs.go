package localcluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

const (
	dirPrefix = "eddy-localcluster-"
	ownerFile = "owner.pid"
)

// sweepStaleDirs removes the temporary directories of clusters whose owning
// process is gone: a process killed outright, or a test binary that timed
// out, cannot remove its own (etcd's preallocated log makes each ~120 MB).
// Their components died with the owner (parent-death signal).
func sweepStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), dirPrefix+"*"))
	for _, d := range dirs {
		data, err := os.ReadFile(filepath.Join(d, ownerFile))
		if err != nil {
			continue // not ours, or still being created
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			// A node-profile cluster's directory may hold mounts (pod volumes,
			// container root filesystems): the node's own sweep unmounts them
			// first, at the next node-profile Start.
			if mps, err := mountsUnder(d); err != nil || len(mps) > 0 {
				continue
			}
			_ = os.RemoveAll(d)
		}
	}
}

func writeKubeconfig(path, server string, p *pki) error {
	return writeKubeconfigFor(path, server, p.caCert, p.adminCert, p.adminKey)
}

// writeKubeconfigFor writes a kubeconfig for server (trusting the CA caCert)
// with the client certificate cert and key, with context "eddy-local".
func writeKubeconfigFor(path, server string, caCert, cert, key []byte) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caCert}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName, Namespace: "default"}
	cfg.CurrentContext = contextName
	return clientcmd.WriteToFile(*cfg, path)
}

// findBinDir resolves Options.BinDir as documented there.
func findBinDir(dir string) (string, error) {
	if dir == "" {
		dir = os.Getenv("EDDY_K8S_BIN_DIR")
	}
	if dir != "" {
		return filepath.Abs(dir)
	}
	root, err := WorkspaceRoot()
	if err != nil {
		return "", fmt.Errorf("%w (%v; or set EDDY_K8S_BIN_DIR)", ErrBinariesMissing, err)
	}
	return filepath.Join(root, "bin", "k8s"), nil
}

// WorkspaceRoot returns the nearest directory at or above the working
// directory that holds go.work: the root of an Eddy checkout, where bin/ and
// config/ are. Tests run in their package's directory, so this finds the
// checkout they belong to.
func WorkspaceRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.work")); err == nil {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.work at or above %s", wd)
		}
	}
}

func firstIP(n *net.IPNet) net.IP {
	ip := append(net.IP(nil), n.IP.To4()...)
	ip[3]++
	return ip
}
