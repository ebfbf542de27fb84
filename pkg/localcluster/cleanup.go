package localcluster

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The node profile changes the machine outside its directory: network
// devices, nftables tables, cgroups, sysctls, mounts, processes that
// containerd starts in a session of their own. Before it changes anything it
// writes a nodeRecord to nodeRecordPath, naming its directory and the prior
// value of every sysctl it may change; Stop sweeps by that record, and so
// does the next Start when the owner died before it could (a SIGKILL, a test
// binary's timeout). Only one node-profile cluster runs on a machine at a
// time: the network devices, the cgroup root and kube-proxy's nftables
// tables have fixed names.

// nodeRecordPath is where a node-profile cluster records what it changes.
var nodeRecordPath = "/run/eddy-localcluster-node.json"

// nodeRecord is what a sweep needs to undo a node-profile cluster.
type nodeRecord struct {
	// OwnerPID is the process that started the cluster.
	OwnerPID int `json:"ownerPID"`
	// Dir is the cluster's directory: every mount under it is the cluster's.
	Dir string `json:"dir"`
	// RemoveDir says the directory is a temporary one of the owner's.
	RemoveDir bool `json:"removeDir"`
	// Sysctls holds the value of each sysctl (a path under /proc/sys) before
	// the cluster started.
	Sysctls map[string]string `json:"sysctls"`
	// CreatedDirs are directories outside Dir that did not exist before
	// (containerd's shim socket directory): removed when empty.
	CreatedDirs []string `json:"createdDirs,omitempty"`
}

// hostDirs are the directories outside the cluster's where the node writes
// files of its own, parents first, at paths fixed in the code of kubelet
// (container log links, the device plugin socket whatever its root
// directory), libcni (its cache), containerd (shim sockets) and util-linux
// (mount's lock directory). Those that did not exist before are removed
// once empty; kubeletDevicePluginDir, which holds nothing but kubelet's
// socket and checkpoint, with what it holds.
var hostDirs = []string{
	"/var/lib/kubelet", kubeletDevicePluginDir,
	"/var/log/containers",
	"/var/lib/cni", "/var/lib/cni/results",
	"/run/containerd", shimSocketDir,
	"/run/mount",
}

// kubeletDevicePluginDir is where kubelet serves device plugins, fixed in
// its code (k8s.io/kubelet/pkg/apis/deviceplugin DevicePluginPath).
const kubeletDevicePluginDir = "/var/lib/kubelet/device-plugins"

// removeHostFiles removes the node's files in hostDirs: kubelet's links to
// its container logs, and libcni's cached results of its pods (they name
// their network namespace, under dir).
func removeHostFiles(dir string) error {
	var errs []error
	links, _ := filepath.Glob("/var/log/containers/*.log")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, dir+"/") {
			errs = append(errs, os.Remove(l))
		}
	}
	results, _ := filepath.Glob("/var/lib/cni/results/*")
	for _, f := range results {
		if data, err := os.ReadFile(f); err == nil && strings.Contains(string(data), dir+"/") {
			errs = append(errs, os.Remove(f))
		}
	}
	return errors.Join(errs...)
}

// writeNodeRecord stores r, refusing when a live process owns a record.
func writeNodeRecord(r *nodeRecord) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.OpenFile(nodeRecordPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// updateNodeRecord rewrites the record of this process.
func updateNodeRecord(r *nodeRecord) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	tmp := nodeRecordPath + ".new"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, nodeRecordPath)
}

func readNodeRecord() (*nodeRecord, error) {
	data, err := os.ReadFile(nodeRecordPath)
	if err != nil {
		return nil, err
	}
	var r nodeRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", nodeRecordPath, err)
	}
	return &r, nil
}

// sweepStaleNode undoes what a dead owner's node-profile cluster left, and
// fails when a live process runs one.
func sweepStaleNode() error {
	r, err := readNodeRecord()
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if r.OwnerPID != os.Getpid() && processAlive(r.OwnerPID) {
		return fmt.Errorf("a node-profile local cluster already runs on this machine (process %d, directory %s): stop it first", r.OwnerPID, r.Dir)
	}
	return sweepNode(r, r.RemoveDir)
}

// SweepDeadNode undoes what the node-profile cluster of directory dir left
// on this machine after its owner died without Stop (killed outright):
// processes, mounts, network devices, nftables tables, cgroups, sysctls, as
// the next Start would. Nil when no node of dir is recorded; an error when
// its owner still runs, or naming what could not be undone.
func SweepDeadNode(dir string) error {
	r, err := readNodeRecord()
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if filepath.Clean(r.Dir) != filepath.Clean(dir) {
		return nil
	}
	if processAlive(r.OwnerPID) {
		return fmt.Errorf("the node of %s is still run by process %d", dir, r.OwnerPID)
	}
	return sweepNode(r, r.RemoveDir)
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// sweepNode undoes everything r's cluster may have changed, in dependency
// order, removes r.Dir when removeDir says so, and removes the record. It
// goes on after a failed step and returns every failure.
func sweepNode(r *nodeRecord, removeDir bool) error {
	var errs []error
	errs = append(errs, killNodeProcesses(r.Dir))
	errs = append(errs, unmountUnder(r.Dir))
	errs = append(errs, removeNodeLinks())
	errs = append(errs, removeNFTables())
	errs = append(errs, removeCgroupRoot())
	errs = append(errs, restoreSysctls(r.Sysctls))
	errs = append(errs, removeShimSockets(r.Dir), removeHostFiles(r.Dir))
	for i := len(r.CreatedDirs) - 1; i >= 0; i-- {
		if r.CreatedDirs[i] == kubeletDevicePluginDir {
			errs = append(errs, os.RemoveAll(kubeletDevicePluginDir))
			continue
		}
		if err := os.Remove(r.CreatedDirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("removing %s: %w", r.CreatedDirs[i], err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("cleaning up the node: %w", err)
	}
	if err := os.RemoveAll(filepath.Join(r.Dir, "node")); err != nil {
		return err
	}
	if removeDir {
		if err := os.RemoveAll(r.Dir); err != nil {
			return err
		}
	}
	if err := os.Remove(nodeRecordPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// killNodeProcesses kills every process of the node: those in the cgroup
// root (the containers), and any whose command line names a path under
// dir/node (containerd's shims, started in sessions of their own, name its
// socket; kubelet, containerd and kube-proxy name their configuration, and
// die with their owner anyway). It waits until they are gone.
func killNodeProcesses(dir string) error {
	var pids []int
	for _, h := range cgroupHierarchies() {
		_ = filepath.WalkDir(filepath.Join(h, nodeCgroupRoot), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				pids = append(pids, readPids(filepath.Join(path, "cgroup.procs"))...)
			}
			return nil
		})
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(cmdline), filepath.Join(dir, "node")+"/") {
			if pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p))); err == nil && pid != os.Getpid() {
				pids = append(pids, pid)
			}
		}
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for processGone(pid) != nil && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if err := processGone(pid); err != nil {
			return err
		}
	}
	return nil
}

// processGone is nil once pid has exited (a zombie counts as exited: its
// parent may not be this process).
func processGone(pid int) error {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	if i := strings.LastIndexByte(string(data), ')'); i > 0 && len(data) > i+2 && data[i+2] == 'Z' {
		return nil
	}
	return fmt.Errorf("process %d survived SIGKILL", pid)
}

func readPids(path string) []int {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// mountsUnder returns the mount points at or under dir, deepest first.
func mountsUnder(dir string) ([]string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if mp == dir || strings.HasPrefix(mp, dir+"/") {
			out = append(out, mp)
		}
	}
	// Deepest first; a path mounted twice appears twice and is unmounted twice.
	sort.SliceStable(out, func(i, j int) bool { return strings.Count(out[i], "/") > strings.Count(out[j], "/") })
	return out, sc.Err()
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unmountUnder detaches every mount at or under dir (pod volumes, container
// root filesystems, network namespaces, kubelet's shared bind mount of its
// root) and checks that none is left.
func unmountUnder(dir string) error {
	if dir == "" || dir == "/" {
		return fmt.Errorf("refusing to unmount under %q", dir)
	}
	for range 3 {
		mps, err := mountsUnder(dir)
		if err != nil || len(mps) == 0 {
			return err
		}
		for _, mp := range mps {
			_ = syscall.Unmount(mp, syscall.MNT_DETACH)
		}
	}
	mps, err := mountsUnder(dir)
	if err == nil && len(mps) > 0 {
		err = fmt.Errorf("still mounted: %s", strings.Join(mps, ", "))
	}
	return err
}

// removeNodeLinks deletes the pods' veth devices (ports of the CNI bridge)
// and the two bridges. A veth usually goes with its pod's network namespace.
func removeNodeLinks() error {
	var errs []error
	if ports, err := filepath.Glob("/sys/class/net/" + cniBridge + "/brif/*"); err == nil {
		for _, p := range ports {
			errs = append(errs, deleteLink(filepath.Base(p)))
		}
	}
	errs = append(errs, deleteLink(cniBridge), deleteLink(hostBridge))
	return errors.Join(errs...)
}

func deleteLink(name string) error {
	if _, err := os.Stat("/sys/class/net/" + name); err != nil {
		return nil
	}
	if out, err := exec.Command("ip", "link", "delete", name).CombinedOutput(); err != nil {
		if _, serr := os.Stat("/sys/class/net/" + name); serr != nil {
			return nil // gone meanwhile, with its peer
		}
		return fmt.Errorf("ip link delete %s: %v: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// nodeNFTables are the nftables tables of the node: kube-proxy's.
var nodeNFTables = [][2]string{{"ip", "kube-proxy"}, {"ip6", "kube-proxy"}}

func removeNFTables() error {
	var errs []error
	for _, t := range nodeNFTables {
		if exec.Command("nft", "list", "table", t[0], t[1]).Run() != nil {
			continue
		}
		if out, err := exec.Command("nft", "delete", "table", t[0], t[1]).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("nft delete table %s %s: %v: %s", t[0], t[1], err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}

// cgroupHierarchies returns the mount points of the cgroup hierarchies
// (v1 controllers, and the v2 tree where one is mounted).
func cgroupHierarchies() []string {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		_, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		if fs := strings.Fields(post); len(fs) > 0 && (fs[0] == "cgroup" || fs[0] == "cgroup2") {
			out = append(out, unescapeMountPath(strings.Fields(line)[4]))
		}
	}
	return out
}

// removeCgroupRoot removes the node's cgroup tree in every hierarchy,
// deepest first; a cgroup whose last task is still exiting is busy for a
// moment.
func removeCgroupRoot() error {
	var errs []error
	for _, h := range cgroupHierarchies() {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, nodeCgroupRoot), func(path string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, path)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			var err error
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if err = syscall.Rmdir(dirs[i]); err == nil || errors.Is(err, syscall.ENOENT) || time.Now().After(deadline) {
					break
				}
			}
			if err != nil && !errors.Is(err, syscall.ENOENT) {
				errs = append(errs, fmt.Errorf("removing cgroup %s: %w", dirs[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// restoreSysctls writes back each recorded value that differs.
func restoreSysctls(values map[string]string) error {
	var errs []error
	for key, want := range values {
		path := filepath.Join("/proc/sys", key)
		if got, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(got)) == want {
			continue
		}
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}
