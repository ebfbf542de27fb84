package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// HostState describes what a node-profile cluster may change on the
// machine, one section per kind: mounts (findmnt), network devices (ip
// link), nftables tables, the node's cgroups, the sysctls kubelet and the
// profile set, the host directories kubelet, CNI and containerd write to,
// and the live containerd shims. Two calls with no node in between return
// the same text: tests compare it before Start and after Stop.
func HostState() (string, error) {
	var b strings.Builder
	for _, c := range []struct{ title, name string }{
		{"mounts", "findmnt -rn -o TARGET,FSTYPE"},
		{"links", "ip -o link show | cut -d' ' -f2"},
		{"nft", "nft list tables"},
	} {
		out, err := exec.Command("sh", "-c", c.name).CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("%s: %v: %s", c.name, err, out)
		}
		fmt.Fprintf(&b, "%s:\n%s", c.title, out)
	}
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/" + strings.TrimPrefix(nodeCgroupRoot, "/"))
	fmt.Fprintf(&b, "cgroups: %v\n", cgroups)
	for _, k := range []string{"net/ipv4/ip_forward", "vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops",
		"fs/inotify/max_user_instances", "vm/panic_on_oom", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"} {
		v, _ := os.ReadFile(filepath.Join("/proc/sys", k))
		fmt.Fprintf(&b, "sysctl %s=%s", k, v)
	}
	for _, d := range []string{"/var/lib/kubelet", "/var/log/containers", "/var/lib/cni", "/run/containerd", "/run/mount", "/opt/containerd", "/var/lib/containerd"} {
		entries, err := os.ReadDir(d)
		fmt.Fprintf(&b, "%s: %d entries (%v)\n", d, len(entries), errors.Is(err, os.ErrNotExist))
	}
	fmt.Fprintf(&b, "live shims: %d\n", LiveShims())
	return b.String(), nil
}

// LiveShims counts the containerd shims running on the machine (an exited
// one may wait a moment for init to reap it).
func LiveShims() int {
	n := 0
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range stats {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		// pid (comm) state ...: comm is the first 15 bytes of the name.
		s := string(data)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open || len(s) < end+3 {
			continue
		}
		if strings.HasPrefix(s[open+1:end], "containerd-shim") && s[end+2] != 'Z' {
			n++
		}
	}
	return n
}
