package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// The node's addresses. The node IP sits on a bridge of its own with no
// ports (this kernel has no dummy devices): a local address that is not
// loopback, as the apiserver's advertised address and the endpoints of the
// kubernetes Service must be. Pods get addresses from podSubnet on the CNI
// bridge, whose address is their gateway.
const (
	// NodeIP is the real node's address, where the node profile's apiserver,
	// kubelet and kube-proxy listen.
	NodeIP = "10.243.0.1"
	// NodeName is the real node's name.
	NodeName    = "eddy-node"
	podSubnet   = "10.244.0.0/24"
	clusterCIDR = "10.244.0.0/16"
	hostBridge  = "eddy-node0"
	cniBridge   = "eddy-cni0"
	cniNetwork  = "eddy-node"
	// CNI plugins from Debian's containernetworking-plugins.
	cniBinDir = "/usr/lib/cni"
)

// nodeSysctls are the sysctls the node changes (itself, kubelet and the CNI
// plugins), recorded before it starts and restored after it stops. The
// values are the ones the node profile sets itself.
var nodeSysctls = map[string]string{
	"net/ipv4/ip_forward":                "1",   // pod traffic through the bridge
	"fs/inotify/max_user_instances":      "512", // kubelet and containerd watch many files
	"vm/overcommit_memory":               "",    // set by kubelet
	"vm/panic_on_oom":                    "",
	"kernel/panic":                       "",
	"kernel/panic_on_oops":               "",
	"kernel/keys/root_maxkeys":           "",
	"kernel/keys/root_maxbytes":          "",
	"net/bridge/bridge-nf-call-iptables": "", // kube-proxy and the bridge plugin may set it
}

// readSysctls returns the current value of each of nodeSysctls that exists.
func readSysctls() map[string]string {
	out := map[string]string{}
	for key := range nodeSysctls {
		if data, err := os.ReadFile(filepath.Join("/proc/sys", key)); err == nil {
			out[key] = strings.TrimSpace(string(data))
		}
	}
	return out
}

// setNodeSysctls sets the sysctls the node profile needs itself (never
// lowering a limit).
func setNodeSysctls(before map[string]string) error {
	for key, want := range nodeSysctls {
		if want == "" {
			continue
		}
		if key == "fs/inotify/max_user_instances" {
			if have, err := strconv.Atoi(before[key]); err == nil && have >= 512 {
				continue
			}
		}
		if err := os.WriteFile(filepath.Join("/proc/sys", key), []byte(want), 0o644); err != nil {
			return fmt.Errorf("setting sysctl %s: %w", key, err)
		}
	}
	return nil
}

// setupHostNetwork creates the bridge holding the node IP.
func setupHostNetwork() error {
	for _, args := range [][]string{
		{"link", "add", hostBridge, "type", "bridge"},
		{"addr", "add", NodeIP + "/32", "dev", hostBridge},
		{"link", "set", hostBridge, "up"},
	} {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// cniConfig is the CNI network of the pods: a bridge with host-local
// addresses and no masquerading (nothing leaves the machine), stored under
// ipamDir.
func cniConfig(ipamDir string) string {
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": %q,
  "plugins": [
    {"type": "bridge", "bridge": %q, "isGateway": true, "ipMasq": false, "hairpinMode": true,
     "ipam": {"type": "host-local", "dataDir": %q, "ranges": [[{"subnet": %q}]], "routes": [{"dst": "0.0.0.0/0"}]}},
    {"type": "loopback"}
  ]
}
`, cniNetwork, cniBridge, ipamDir, podSubnet)
}
