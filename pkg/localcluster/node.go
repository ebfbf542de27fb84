package localcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// NodeOptions configure the real node of ProfileNode.
type NodeOptions struct {
	// SandboxImage is the pod sandbox ("pause") image: imported by
	// ImageArchives or pullable from a registry the node reaches.
	SandboxImage string
	// ImageArchives are tar files of OCI image layouts, imported into the
	// node's containerd (namespace k8s.io) before kubelet starts; an image's
	// name is its io.containerd.image.name annotation.
	ImageArchives []string
}

// ErrNodeUnsupported is returned (wrapped) when this machine cannot run the
// node profile; the message says in one line what is missing.
var ErrNodeUnsupported = errors.New("the node profile cannot run here")

// Debian's packages the node profile runs, and a file each installs.
var nodePackages = []struct{ pkg, file string }{
	{"runc", "/usr/sbin/runc"},
	{"containernetworking-plugins", cniBinDir + "/bridge"},
	{"nftables", "/usr/sbin/nft"},
	{"iproute2", "/usr/sbin/ip"},
}

// CheckNodeProfile returns nil when this machine can run the node profile
// with the binaries of binDir (resolved as Options.BinDir), else the error
// Start would return: ErrNodeUnsupported or ErrBinariesMissing, wrapped,
// in one line.
func CheckNodeProfile(binDir string) error {
	dir, err := findBinDir(binDir)
	if err != nil {
		return err
	}
	if err := checkNodeHost(dir); err != nil {
		return err
	}
	return checkBinaries(dir, ProfileNode)
}

// checkNodeHost fails with ErrNodeUnsupported unless this process is root
// and the packages are installed; and with ErrBinariesMissing unless binDir
// has kubelet, kube-proxy, containerd and coredns.
func checkNodeHost(binDir string) error {
	var missing []string
	if os.Geteuid() != 0 {
		missing = append(missing, "root")
	}
	var pkgs []string
	for _, p := range nodePackages {
		if _, err := os.Stat(p.file); err != nil {
			pkgs = append(pkgs, p.pkg)
		}
	}
	if len(pkgs) > 0 {
		missing = append(missing, "Debian packages "+strings.Join(pkgs, " ")+" (apt-get install -y "+strings.Join(pkgs, " ")+")")
	}
	if _, err := os.Stat("/sys/fs/cgroup/memory/cgroup.procs"); err != nil {
		missing = append(missing, "cgroup v1 memory hierarchy at /sys/fs/cgroup/memory")
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: needs %s", ErrNodeUnsupported, strings.Join(missing, "; "))
	}
	for _, b := range []string{"kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", CoreDNS} {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return fmt.Errorf("%w (no %s in %s)", ErrBinariesMissing, b, binDir)
		}
	}
	return nil
}

// claimNode sweeps what a dead node-profile cluster left, records this one
// (before anything changes), and prepares the host: sysctls, the node IP's
// bridge, the cgroup root.
func (c *Cluster) claimNode() error {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return errors.New("the cluster was stopped while starting")
	}
	// The record is created exclusively: another process may claim the
	// node between the sweep and the write; then the sweep says who. The
	// machine's state is read after the sweep restored it.
	var rec *nodeRecord
	for attempt := 1; ; attempt++ {
		if err := sweepStaleNode(); err != nil {
			return err
		}
		rec = &nodeRecord{OwnerPID: os.Getpid(), Dir: c.Dir, RemoveDir: c.ownDir, Sysctls: readSysctls()}
		for _, d := range hostDirs {
			if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
				rec.CreatedDirs = append(rec.CreatedDirs, d)
			}
		}
		err := writeNodeRecord(rec)
		if err == nil {
			break
		}
		if !errors.Is(err, os.ErrExist) || attempt == 3 {
			return fmt.Errorf("recording the node: %w", err)
		}
	}
	c.node = rec
	if err := setNodeSysctls(c.node.Sysctls); err != nil {
		return err
	}
	// Devices and tables of a node whose record was lost (no live owner
	// holds one, or writeNodeRecord would have failed): recreated anew.
	if err := errors.Join(removeNodeLinks(), removeNFTables()); err != nil {
		return err
	}
	if err := setupHostNetwork(); err != nil {
		return err
	}
	return makeCgroupRoot()
}

// makeCgroupRoot creates kubelet's cgroupRoot in every v1 hierarchy
// (kubelet requires it to exist), with the parent's CPUs and memory nodes.
func makeCgroupRoot() error {
	for _, h := range cgroupHierarchies() {
		dir := filepath.Join(h, nodeCgroupRoot)
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			if data, err := os.ReadFile(filepath.Join(h, f)); err == nil {
				if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
					return fmt.Errorf("writing %s: %w", filepath.Join(dir, f), err)
				}
			}
		}
	}
	return nil
}

// startNode starts the real node after the control plane: containerd, the
// images, kubelet and kube-proxy; it returns once the node is Ready and
// kube-proxy has synced its rules.
func (c *Cluster) startNode(ctx context.Context, binDir string, p *pki, files map[string]string, apiServer string, opts Options) error {
	dir := filepath.Join(c.Dir, "node")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	ports, err := FreePorts(4)
	if err != nil {
		return err
	}
	np := nodePorts{kubelet: ports[0], kubeletHealthz: ports[1], proxyHealthz: ports[2], proxyMetrics: ports[3]}
	c.ports = append(c.ports, ports...)
	kubeletKC, proxyKC := filepath.Join(dir, "kubelet.kubeconfig"), filepath.Join(dir, "kube-proxy.kubeconfig")
	for _, k := range []struct{ path, user, group string }{
		{kubeletKC, "system:node:" + NodeName, "system:nodes"},
		{proxyKC, "system:kube-proxy", ""},
	} {
		var groups []string
		if k.group != "" {
			groups = append(groups, k.group)
		}
		cert, key, err := p.issueClient(k.user, groups...)
		if err != nil {
			return err
		}
		if err := writeKubeconfigFor(k.path, apiServer, p.caCert, cert, key); err != nil {
			return err
		}
	}
	socket, err := c.startContainerd(ctx, binDir, dir, opts.Node)
	if err != nil {
		return err
	}
	if err := c.startKubelet(binDir, dir, kubeletKC, files["ca.crt"], socket, np); err != nil {
		return err
	}
	if err := c.startKubeProxy(binDir, dir, proxyKC, np); err != nil {
		return err
	}
	return c.waitNode(ctx, np)
}

// waitNode waits for the real node to be Ready and schedulable, kube-proxy
// to have synced, and the default ServiceAccount to exist.
func (c *Cluster) waitNode(ctx context.Context, np nodePorts) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	if err := c.poll(ctx, "node "+NodeName+" Ready and the default ServiceAccount", func() (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, NodeName, metav1.GetOptions{})
		if err != nil || !nodeSchedulable(n) {
			return false, nil
		}
		_, err = cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return err
	}
	return c.waitHealthz(ctx, "kube-proxy /healthz", healthzURL(np.proxyHealthz, "healthz"))
}

// stopNode undoes the node once its processes were stopped.
func (c *Cluster) stopNode() error {
	c.nodeMu.Lock()
	defer c.nodeMu.Unlock()
	if c.node == nil {
		return nil
	}
	err := sweepNode(c.node, false)
	c.node = nil
	return err
}
