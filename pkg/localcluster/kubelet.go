package localcluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// nodeCgroupRoot is kubelet's cgroupRoot: every pod's cgroup is under it,
// in every hierarchy, so a sweep finds them all.
const nodeCgroupRoot = "/eddy-node"

// nodePorts are the node's own ports (on NodeIP or loopback).
type nodePorts struct {
	kubelet, kubeletHealthz, proxyHealthz, proxyMetrics int
}

// kubeletConfig is kubelet's configuration file. This machine mounts cgroup
// v1 and runs no systemd: cgroupfs driver, failCgroupV1 off. The eviction
// thresholds are absolute and small, so that a shared disk that is 90% full
// does not evict the test's pods; image garbage collection only at a full
// disk (the imported images cannot be pulled again).
func kubeletConfig(dir, caFile, runtimeSocket string, ports nodePorts) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: cgroupfs
failCgroupV1: false
cgroupRoot: %s
cgroupsPerQOS: true
containerRuntimeEndpoint: unix://%s
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
clusterDNS: [%s]
clusterDomain: cluster.local
podLogsDir: %s
resolvConf: /etc/resolv.conf
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %s}
authorization: {mode: Webhook}
evictionHard: {memory.available: 100Mi, nodefs.available: 512Mi, imagefs.available: 512Mi, nodefs.inodesFree: 1%%}
evictionPressureTransitionPeriod: 10s
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
failSwapOn: false
serializeImagePulls: false
protectKernelDefaults: false
makeIPTablesUtilChains: false
fileCheckFrequency: 0s
syncFrequency: 10s
nodeStatusReportFrequency: 10s
maxPods: 110
`, nodeCgroupRoot, runtimeSocket, NodeIP, ports.kubelet, ports.kubeletHealthz, NodeIP,
		filepath.Join(dir, "pod-logs"), caFile)
}

// kubeProxyConfig is kube-proxy's configuration: nftables mode (this kernel
// has no IPVS; nftables needs no iptables binaries), conntrack left as it is
// (maxPerCore 0 and no timeouts: nothing VM-wide to set).
func kubeProxyConfig(kubeconfig string, ports nodePorts) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection: {kubeconfig: %s}
hostnameOverride: %s
bindAddress: %s
clusterCIDR: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s, udpTimeout: 0s, udpStreamTimeout: 0s}
nodePortAddresses: [%s/32]
`, kubeconfig, NodeName, NodeIP, clusterCIDR, ports.proxyHealthz, ports.proxyMetrics, NodeIP)
}

// startKubelet writes kubelet's files under dir and starts it.
func (c *Cluster) startKubelet(binDir, dir, kubeconfig, caFile, runtimeSocket string, ports nodePorts) error {
	cfg := filepath.Join(dir, "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte(kubeletConfig(dir, caFile, runtimeSocket, ports)), 0o600); err != nil {
		return err
	}
	return c.start("kubelet", binDir, c.Dir,
		"--config="+cfg,
		"--kubeconfig="+kubeconfig,
		"--root-dir="+filepath.Join(dir, "kubelet"),
		"--cert-dir="+filepath.Join(dir, "kubelet-pki"),
		"--hostname-override="+NodeName,
		"--node-ip="+NodeIP,
		"--v=1",
	)
}

// startKubeProxy writes kube-proxy's configuration under dir and starts it.
func (c *Cluster) startKubeProxy(binDir, dir, kubeconfig string, ports nodePorts) error {
	cfg := filepath.Join(dir, "kube-proxy.yaml")
	if err := os.WriteFile(cfg, []byte(kubeProxyConfig(kubeconfig, ports)), 0o600); err != nil {
		return err
	}
	return c.start("kube-proxy", binDir, c.Dir, "--config="+cfg, "--v=1")
}

// waitHealthz polls url until it answers 200.
func (c *Cluster) waitHealthz(ctx context.Context, what, url string) error {
	client := &http.Client{Timeout: 2 * time.Second}
	return c.poll(ctx, what, func() (bool, error) {
		resp, err := client.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

func healthzURL(port int, path string) string {
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/" + strings.TrimPrefix(path, "/")
}
