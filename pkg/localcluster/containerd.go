package localcluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// shimSocketDir is where containerd's runc shims put their sockets: fixed
// for root, whatever the state directory (containerd
// core/runtime/v2/shim_unix.go defaultSocketDir).
const shimSocketDir = "/run/containerd/s"

// containerdConfig is the configuration (version 4, containerd 2.4) of
// the node's containerd: every path under dir, so nothing of the machine's
// is used (no /var/lib/containerd, /opt/containerd, /run/containerd/runc,
// /etc/containerd/conf.d or /etc/cni), no plugin that listens or writes
// elsewhere (NRI, CDI, tracing, the image verifier, snapshotters other than
// overlayfs), and the settings this machine needs: restrict_oom_score_adj
// (no CAP_SYS_RESOURCE: runc may not lower an OOM score below containerd's
// own), cgroupfs (no systemd), network namespaces under the state
// directory, and the shim built beside containerd (not one found in $PATH,
// such as Debian's containerd package's).
func containerdConfig(binDir, dir, sandboxImage string) string {
	return fmt.Sprintf(`version = 4
root = %[1]q
state = %[2]q
imports = []
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs",
  "io.containerd.differ.v1.erofs", "io.containerd.mount-handler.v1.erofs", "io.containerd.image-verifier.v1.bindir",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing", "io.containerd.server.v1.grpc-tcp",
  "io.containerd.server.v1.debug", "io.containerd.server.v1.metrics"]

[plugins]
  [plugins."io.containerd.server.v1.grpc"]
    address = %[3]q
  [plugins."io.containerd.server.v1.ttrpc"]
    address = %[4]q
  [plugins."io.containerd.internal.v1.opt"]
    path = %[5]q
  [plugins."io.containerd.cri.v1.images"]
    snapshotter = "overlayfs"
    [plugins."io.containerd.cri.v1.images".pinned_images]
      sandbox = %[6]q
  [plugins."io.containerd.cri.v1.runtime"]
    enable_selinux = false
    cdi_spec_dirs = []
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    [plugins."io.containerd.cri.v1.runtime".cni]
      bin_dirs = [%[7]q]
      conf_dir = %[8]q
    [plugins."io.containerd.cri.v1.runtime".containerd]
      default_runtime_name = "runc"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        runtime_path = %[10]q
        [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
          BinaryName = "/usr/sbin/runc"
          SystemdCgroup = false
          Root = %[9]q
  [plugins."io.containerd.grpc.v1.cri"]
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "containerd.sock"),
		filepath.Join(dir, "containerd.sock.ttrpc"), filepath.Join(dir, "opt"), sandboxImage, cniBinDir,
		filepath.Join(dir, "cni"), filepath.Join(dir, "runc"), filepath.Join(binDir, "containerd-shim-runc-v2"))
}

// startContainerd writes containerd's configuration and CNI network under
// nodeDir, starts it, waits for its socket and imports the images. It
// returns the socket's path.
func (c *Cluster) startContainerd(ctx context.Context, binDir, nodeDir string, opts NodeOptions) (string, error) {
	dir := filepath.Join(nodeDir, "containerd")
	if err := os.MkdirAll(filepath.Join(dir, "cni"), 0o700); err != nil {
		return "", err
	}
	netConf := cniConfig(filepath.Join(dir, "ipam"))
	if err := os.WriteFile(filepath.Join(dir, "cni", "10-eddy.conflist"), []byte(netConf), 0o600); err != nil {
		return "", err
	}
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(binDir, dir, opts.SandboxImage)), 0o600); err != nil {
		return "", err
	}
	if err := c.start("containerd", binDir, c.Dir, "--config="+cfg, "--log-level=warn"); err != nil {
		return "", err
	}
	socket := filepath.Join(dir, "containerd.sock")
	if err := c.poll(ctx, "containerd's socket", func() (bool, error) {
		conn, err := net.DialTimeout("unix", socket, time.Second)
		if err != nil {
			return false, nil
		}
		conn.Close()
		return true, nil
	}); err != nil {
		return "", err
	}
	for _, archive := range opts.ImageArchives {
		cmd := exec.CommandContext(ctx, filepath.Join(binDir, "ctr"), "--address", socket, "--namespace", "k8s.io",
			"images", "import", archive)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("importing %s into containerd: %v: %s", archive, err, strings.TrimSpace(string(out)))
		}
	}
	return socket, nil
}

// removeShimSockets removes the shim sockets of the containerd under
// clusterDir that a killed shim left in shimSocketDir: each is named by
// the hash of containerd's address, the namespace and the task's (or its
// pod's) ID (containerd pkg/shim CreateSocketAddress).
func removeShimSockets(clusterDir string) error {
	dir := filepath.Join(clusterDir, "node", "containerd")
	address := filepath.Join(dir, "containerd.sock")
	tasks, _ := filepath.Glob(filepath.Join(dir, "state", "io.containerd.runtime.v2.task", "*", "*"))
	for _, t := range tasks {
		ns, id := filepath.Base(filepath.Dir(t)), filepath.Base(t)
		for _, p := range []string{filepath.Join(address, ns, id), filepath.Join(address, ns, id, "debug")} {
			sock := filepath.Join(shimSocketDir, fmt.Sprintf("%x", sha256.Sum256([]byte(p))))
			if err := os.Remove(sock); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	return nil
}
