package localcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/process"
)

// CoreDNS is the name of the DNS component (the binary tools/coredns.sh builds into bin/k8s).
const CoreDNS = "coredns"

// DefaultClusterDomain is the DNS zone of Services, as in every Kubernetes cluster.
const DefaultClusterDomain = "cluster.local"

// CoreDNSBinary returns the path of coredns in the directory of the binaries that `make
// tools` builds ($EDDY_K8S_BIN_DIR, else <workspace root>/bin/k8s; tools/coredns.sh
// builds it). The error wraps ErrBinariesMissing when it is not there.
func CoreDNSBinary() (string, error) {
	dir, err := findBinDir("")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, CoreDNS)
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("%w (no %s in %s)", ErrBinariesMissing, CoreDNS, dir)
	}
	return path, nil
}

// DNSOptions configure StartDNS.
type DNSOptions struct {
	// Addr is the IP:port the DNS server listens on, UDP and TCP (the node profile: the
	// node IP and port 53). Default: 127.0.0.1 on a free port.
	Addr string
	// Domain is the cluster's zone; default DefaultClusterDomain.
	Domain string
	// Upstreams receive every query outside the cluster's zone (IP or IP:port). Default:
	// the nameservers of /etc/resolv.conf. With none, such queries are refused.
	Upstreams []string
	// BinDir holds the coredns binary. Default: the directory the cluster's own
	// binaries were started from.
	BinDir string
	// LogQueries logs every query to the component's log (CoreDNS's log plugin).
	LogQueries bool
}

// DNS is the cluster's running DNS server: CoreDNS answering the cluster's zone from the
// API (the admin kubeconfig) and forwarding the rest.
type DNS struct {
	// Addr is the IP:port it answers on.
	Addr string
	// Domain is the cluster's zone, e.g. cluster.local.
	Domain string
	// Corefile is the path of its generated configuration, under the cluster's Dir.
	Corefile string
	// HealthURL and ReadyURL are CoreDNS's health and ready endpoints on loopback;
	// ready means its view of the API is synced.
	HealthURL, ReadyURL string
}

// StartDNS starts the cluster's DNS server as one of its components (stopped by Stop,
// logged to coredns.log in Dir) and waits until it is ready: its Service and EndpointSlice
// informers have synced, so it answers <svc>.<ns>.svc.<domain> with the Service's
// ClusterIP. The error wraps ErrBinariesMissing when there is no coredns binary (`make
// tools` builds it). With no Addr a taken port is retried, as Start does.
func (c *Cluster) StartDNS(ctx context.Context, opts DNSOptions) (*DNS, error) {
	for attempt := 1; ; attempt++ {
		d, err := c.startDNS(ctx, opts)
		if err == nil || !errors.Is(err, errPortTaken) || opts.Addr != "" || attempt == 3 {
			return d, err
		}
	}
}

func (c *Cluster) startDNS(ctx context.Context, opts DNSOptions) (*DNS, error) {
	binDir, err := c.dnsBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join(binDir, CoreDNS)); err != nil {
		return nil, fmt.Errorf("%w (no %s in %s)", ErrBinariesMissing, CoreDNS, binDir)
	}
	if opts.Domain == "" {
		opts.Domain = DefaultClusterDomain
	}
	if opts.Upstreams == nil {
		opts.Upstreams = resolvConfNameservers("/etc/resolv.conf")
	}
	addr := opts.Addr
	if addr == "" {
		port, err := freeDNSPort()
		if err != nil {
			return nil, err
		}
		addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	ports, err := FreePorts(2)
	if err != nil {
		return nil, err
	}
	d := &DNS{Addr: addr, Domain: opts.Domain, Corefile: filepath.Join(c.Dir, "Corefile"),
		HealthURL: "http://127.0.0.1:" + strconv.Itoa(ports[0]) + "/health",
		ReadyURL:  "http://127.0.0.1:" + strconv.Itoa(ports[1]) + "/ready"}
	corefile, err := d.corefile(c.KubeconfigPath, opts.Upstreams, opts.LogQueries)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(d.Corefile, corefile, 0o600); err != nil {
		return nil, err
	}
	p, err := c.startProcess(process.Spec{Name: CoreDNS, Bin: filepath.Join(binDir, CoreDNS),
		Args: []string{"-conf", d.Corefile}, Dir: c.Dir, LogPath: filepath.Join(c.Dir, CoreDNS+".log"),
		HealthURL: d.HealthURL})
	if err != nil {
		return nil, err
	}
	timeout := c.timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := c.poll(wctx, "CoreDNS ready", func() (bool, error) { return httpOK(d.ReadyURL), nil }); err != nil {
		p.Kill()
		<-p.Done()
		c.forget(p)
		return nil, fmt.Errorf("%w\n----- %s -----\n%s", err, CoreDNS, p.Tail(40))
	}
	return d, nil
}

// corefile is CoreDNS's configuration for d: one server on d.Addr, the cluster's zone
// (and reverse lookups of its addresses) from the API, the rest forwarded.
func (d *DNS) corefile(kubeconfig string, upstreams []string, logQueries bool) ([]byte, error) {
	host, port, err := net.SplitHostPort(d.Addr)
	if err != nil || net.ParseIP(host) == nil {
		return nil, fmt.Errorf("DNS address %q: want IP:port", d.Addr)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, ".:%s {\n\tbind %s\n\terrors\n", port, host)
	if logQueries {
		b.WriteString("\tlog\n")
	}
	fmt.Fprintf(&b, "\thealth %s\n\tready %s\n", strings.TrimPrefix(strings.TrimSuffix(d.HealthURL, "/health"), "http://"),
		strings.TrimPrefix(strings.TrimSuffix(d.ReadyURL, "/ready"), "http://"))
	fmt.Fprintf(&b, "\tkubernetes %s in-addr.arpa ip6.arpa {\n\t\tkubeconfig %s %s\n\t\tpods insecure\n"+
		"\t\tfallthrough in-addr.arpa ip6.arpa\n\t\tttl 30\n\t}\n", d.Domain, kubeconfig, contextName)
	if len(upstreams) > 0 {
		fmt.Fprintf(&b, "\tforward . %s\n", strings.Join(upstreams, " "))
	}
	b.WriteString("\tcache 30\n\tloop\n}\n")
	return b.Bytes(), nil
}

// dnsBinDir is dir, else the directory of the cluster's first component's binary.
func (c *Cluster) dnsBinDir(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	procs := c.processes()
	if len(procs) == 0 {
		return "", errors.New("the cluster runs no component: start it first")
	}
	return filepath.Dir(procs[0].Spec().Bin), nil
}

// startProcess starts spec as a component of c, as start does, and returns it.
func (c *Cluster) startProcess(spec process.Spec) (*process.Process, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, errors.New("the cluster was stopped")
	}
	p, err := process.Start(spec)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// forget removes the exited component p, so that the cluster's later waits do not take
// its exit for a failure of the cluster.
func (c *Cluster) forget(p *process.Process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, q := range c.procs {
		if q == p {
			c.procs = append(c.procs[:i], c.procs[i+1:]...)
			return
		}
	}
}

// freeDNSPort is a port of FreePorts that UDP on 127.0.0.1 has free too.
func freeDNSPort() (int, error) {
	for range 10 {
		ports, err := FreePorts(1)
		if err != nil {
			return 0, err
		}
		if pc, err := net.ListenPacket("udp", "127.0.0.1:"+strconv.Itoa(ports[0])); err == nil {
			pc.Close()
			return ports[0], nil
		}
	}
	return 0, errors.New("no port free for both TCP and UDP")
}

// resolvConfNameservers returns the nameservers of a resolv.conf file (none when it
// cannot be read); link-local IPv6 ones, which need a zone CoreDNS cannot take, are left out.
func resolvConfNameservers(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 2 || fields[0] != "nameserver" || strings.Contains(fields[1], "%") {
			continue
		}
		if ip := net.ParseIP(fields[1]); ip != nil {
			out = append(out, ip.String())
		}
	}
	return out
}

func httpOK(url string) bool {
	client := http.Client{Timeout: 2 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}
