// Package localcluster runs a real Kubernetes control plane on this machine,
// built from upstream source by `make tools` into bin/k8s, with no container
// runtime: profile "api" is etcd and kube-apiserver (for integration tests);
// profile "full" adds kube-controller-manager, kube-scheduler and kwok with
// fake Ready nodes, so Deployments become Available (for e2e tests and demos);
// profile "node" runs the full control plane with one real node instead of
// kwok's: containerd, kubelet and kube-proxy on this machine, as root, so
// that pods run as real containers (see node.go).
//
// Every component listens on a free loopback port and keeps its state and log
// in one directory; Stop kills every child process, and so does a SIGINT or
// SIGTERM to this process when Options.HandleSignals asks for it.
package localcluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/eddyops/eddy/pkg/process"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Profile selects which components run.
type Profile string

const (
	// ProfileAPI runs etcd and kube-apiserver.
	ProfileAPI Profile = "api"
	// ProfileFull adds kube-controller-manager (with the node lifecycle
	// controller), kube-scheduler, kwok and fake Ready nodes.
	ProfileFull Profile = "full"
	// ProfileNode runs etcd, kube-apiserver, kube-controller-manager and
	// kube-scheduler with one real node, NodeName: containerd, kubelet and
	// kube-proxy on this machine, and CoreDNS answering the cluster's zone on
	// NodeIP:53 (kubelet's clusterDNS). It needs root and Debian's runc,
	// containernetworking-plugins and nftables; one runs per machine.
	ProfileNode Profile = "node"
)

// Defaults of Options.
const (
	DefaultServiceCIDR = "10.96.0.0/16"
	DefaultNodes       = 1
	DefaultTimeout     = 2 * time.Minute
	contextName        = "eddy-local"
)

// Options configure Start. The zero value starts the api profile in a new
// temporary directory with the binaries of <repo>/bin/k8s.
type Options struct {
	// Profile is ProfileAPI (the default), ProfileFull or ProfileNode.
	Profile Profile
	// Node configures the real node of ProfileNode.
	Node NodeOptions
	// Nodes is the number of fake nodes of the full profile; default 1.
	Nodes int
	// BinDir holds the binaries built by `make tools`. Default: $EDDY_K8S_BIN_DIR,
	// else bin/k8s under the nearest directory above the working directory that
	// holds go.work.
	BinDir string
	// Dir keeps the cluster's state, certificates, kubeconfig and logs. Default:
	// a new temporary directory, removed by Stop.
	Dir string
	// ServiceCIDR of Services; at least a /16 so thousands of Services fit.
	ServiceCIDR string
	// Timeout bounds the start-up; default 2 minutes.
	Timeout time.Duration
	// HandleSignals installs a process-wide SIGINT and SIGTERM handler that
	// stops every cluster started with it, then lets the process die of the
	// signal: for a process that owns nothing else to tear down, such as a
	// test binary. By default signals are left to the caller, which calls
	// Stop itself (its children die with it anyway: parent-death signal).
	HandleSignals bool
}

// Cluster is a running local control plane.
type Cluster struct {
	// Dir holds state, certificates, kubeconfig and the per-component logs.
	Dir string
	// KubeconfigPath is an admin kubeconfig (client certificate in group
	// system:masters) with context "eddy-local".
	KubeconfigPath string
	// Config is the admin client configuration.
	Config *rest.Config
	// StartupDuration is the time Start took until the cluster was ready.
	StartupDuration time.Duration
	// Profile that runs.
	Profile Profile
	// DNS is the cluster's DNS server of the node profile (CoreDNS on the
	// node IP, port 53: kubelet's clusterDNS), nil for the other profiles.
	DNS *DNS

	ownDir   bool
	ports    []int
	timeout  time.Duration // Options.Timeout, for restarts
	stopOnce sync.Once

	mu      sync.Mutex // guards procs and stopped: a signal may stop the cluster during Start
	procs   []*process.Process
	stopped bool

	nodeMu  sync.Mutex  // held while the node is claimed or swept: a signal may stop the cluster meanwhile
	node    *nodeRecord // what the node profile changed on the machine; nil after its sweep
	stopErr error       // what Stop could not clean up
}

// ErrBinariesMissing is returned (wrapped) when bin/k8s lacks a binary.
var ErrBinariesMissing = errors.New("local cluster binaries are missing: run `make tools`")

// errPortTaken means a component found its port taken: the ports are picked
// free, released, and bound by the component moments later, so another
// process can take one in between. Start then tries again with new ports.
var errPortTaken = errors.New("a port was taken before the component bound it")

// Start starts a cluster and waits until it is ready: the apiserver answers
// /readyz and, for the full profile, every fake node is Ready without the
// not-ready taint and the default ServiceAccount exists. On error nothing is
// left running, and the error carries the tail of each component's log.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	for attempt := 1; ; attempt++ {
		c, err := start(ctx, opts)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == 3 {
			return c, err
		}
	}
}

func start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	begin := time.Now()
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	binDir, err := findBinDir(opts.BinDir)
	if err != nil {
		return nil, err
	}
	if err := checkBinaries(binDir, opts.Profile); err != nil {
		return nil, err
	}
	if opts.Profile == ProfileNode {
		if err := checkNodeHost(binDir); err != nil {
			return nil, err
		}
	}
	serviceIP, err := serviceIPOf(opts.ServiceCIDR)
	if err != nil {
		return nil, err
	}
	c, err := newCluster(opts)
	if err != nil {
		return nil, err
	}
	if opts.HandleSignals {
		handleSignals(c)
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, c.Logs(40))
			c.Stop()
		}
	}()

	apiHost := "127.0.0.1"
	var extraIPs []net.IP
	if opts.Profile == ProfileNode {
		if err := c.claimNode(); err != nil {
			return nil, err
		}
		apiHost = NodeIP
		extraIPs = append(extraIPs, net.ParseIP(NodeIP))
	}
	p, err := newPKI(serviceIP, extraIPs...)
	if err != nil {
		return nil, fmt.Errorf("generating certificates: %w", err)
	}
	files, err := p.write(filepath.Join(c.Dir, "pki"))
	if err != nil {
		return nil, err
	}
	ports, err := FreePorts(6)
	if err != nil {
		return nil, err
	}
	c.ports = ports
	apiPort, kcmPort, schedPort, kwokPort := ports[2], ports[3], ports[4], ports[5]
	c.KubeconfigPath = filepath.Join(c.Dir, "kubeconfig")
	apiServer := "https://" + net.JoinHostPort(apiHost, strconv.Itoa(apiPort))
	if err := writeKubeconfig(c.KubeconfigPath, apiServer, p); err != nil {
		return nil, err
	}
	if c.Config, err = clientcmd.BuildConfigFromFlags("", c.KubeconfigPath); err != nil {
		return nil, err
	}
	c.Config.QPS, c.Config.Burst = 200, 400
	if err := c.startAPI(ctx, binDir, files, opts, ports[0], ports[1], apiPort); err != nil {
		return nil, err
	}
	switch opts.Profile {
	case ProfileFull:
		if err := c.startFull(ctx, binDir, files, opts, kcmPort, schedPort, kwokPort); err != nil {
			return nil, err
		}
	case ProfileNode:
		if err := c.startControllers(binDir, files, opts, kcmPort, schedPort); err != nil {
			return nil, err
		}
		// DNS before the node: the first pods get a resolv.conf that answers.
		if c.DNS, err = c.startDNS(ctx, DNSOptions{Addr: net.JoinHostPort(NodeIP, "53"), BinDir: binDir}); err != nil {
			return nil, err
		}
		if err := c.startNode(ctx, binDir, p, files, apiServer, opts); err != nil {
			return nil, err
		}
	}
	c.StartupDuration = time.Since(begin)
	return c, nil
}

// setDefaults fills the options left zero with their defaults and refuses
// an unknown profile.
func (o *Options) setDefaults() error {
	if o.Profile == "" {
		o.Profile = ProfileAPI
	}
	if o.Profile != ProfileAPI && o.Profile != ProfileFull && o.Profile != ProfileNode {
		return fmt.Errorf("unknown profile %q: use %q, %q or %q", o.Profile, ProfileAPI, ProfileFull, ProfileNode)
	}
	if o.Nodes <= 0 {
		o.Nodes = DefaultNodes
	}
	if o.ServiceCIDR == "" {
		o.ServiceCIDR = DefaultServiceCIDR
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return nil
}

// checkBinaries fails with ErrBinariesMissing when binDir lacks a binary
// that profile runs.
func checkBinaries(binDir string, profile Profile) error {
	need := []string{"etcd", "kube-apiserver"}
	switch profile {
	case ProfileFull:
		need = append(need, "kube-controller-manager", "kube-scheduler", "kwok")
	case ProfileNode:
		need = append(need, "kube-controller-manager", "kube-scheduler")
	}
	for _, b := range need {
		if _, err := os.Stat(filepath.Join(binDir, b)); err != nil {
			return fmt.Errorf("%w (no %s in %s)", ErrBinariesMissing, b, binDir)
		}
	}
	return nil
}

// serviceIPOf is the first address of the service CIDR cidr (the
// kubernetes Service's), which must be IPv4 and at least a /16.
func serviceIPOf(cidr string) (net.IP, error) {
	_, serviceNet, err := net.ParseCIDR(cidr)
	if err != nil {
		return nil, fmt.Errorf("service CIDR %q: %w", cidr, err)
	}
	if serviceNet.IP.To4() == nil {
		return nil, fmt.Errorf("service CIDR %q: only IPv4 is supported", cidr)
	}
	if ones, _ := serviceNet.Mask.Size(); ones > 16 {
		return nil, fmt.Errorf("service CIDR %q is smaller than a /16", cidr)
	}
	return firstIP(serviceNet), nil
}

// newCluster is the Cluster of opts with its directory: opts.Dir, created
// if need be, else a new temporary one owned by this process.
func newCluster(opts Options) (*Cluster, error) {
	c := &Cluster{Dir: opts.Dir, Profile: opts.Profile, timeout: opts.Timeout}
	if c.Dir != "" {
		return c, os.MkdirAll(c.Dir, 0o700)
	}
	sweepStaleDirs()
	var err error
	if c.Dir, err = os.MkdirTemp("", dirPrefix); err != nil {
		return nil, err
	}
	c.ownDir = true
	return c, os.WriteFile(filepath.Join(c.Dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600)
}

// startAPI starts etcd (client and peer ports) and kube-apiserver (on
// apiPort, with the certificates files and opts' service CIDR), and waits
// for the apiserver to be ready.
func (c *Cluster) startAPI(ctx context.Context, binDir string, files map[string]string, opts Options, etcdClient, etcdPeer, apiPort int) error {
	logDir := c.Dir
	etcdURL := func(port int) string { return "http://127.0.0.1:" + strconv.Itoa(port) }
	if err := c.start("etcd", binDir, logDir,
		"--name=eddy",
		"--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+etcdURL(etcdClient),
		"--advertise-client-urls="+etcdURL(etcdClient),
		"--listen-peer-urls="+etcdURL(etcdPeer),
		"--initial-advertise-peer-urls="+etcdURL(etcdPeer),
		"--initial-cluster=eddy="+etcdURL(etcdPeer),
		"--unsafe-no-fsync=true", // throw-away data: durability costs start-up and test time
		"--log-level=warn",
	); err != nil {
		return err
	}
	args := []string{
		"--etcd-servers=" + etcdURL(etcdClient),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--endpoint-reconciler-type=none", // loopback cannot be the endpoint of the kubernetes Service
	}
	if opts.Profile == ProfileNode {
		// Pods reach the apiserver through the kubernetes Service, whose
		// endpoint is the node IP; it calls kubelet for logs and exec.
		args = []string{"--etcd-servers=" + etcdURL(etcdClient), "--bind-address=" + NodeIP, "--advertise-address=" + NodeIP,
			"--kubelet-client-certificate=" + files["admin.crt"], "--kubelet-client-key=" + files["admin.key"],
			"--kubelet-preferred-address-types=InternalIP"}
	}
	if err := c.start("kube-apiserver", binDir, logDir, append(args,
		"--secure-port="+strconv.Itoa(apiPort),
		"--cert-dir="+filepath.Join(c.Dir, "apiserver-certs"),
		"--tls-cert-file="+files["apiserver.crt"],
		"--tls-private-key-file="+files["apiserver.key"],
		"--client-ca-file="+files["ca.crt"],
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file="+files["sa.key"],
		"--service-account-signing-key-file="+files["sa.key"],
		"--service-cluster-ip-range="+opts.ServiceCIDR,
		"--authorization-mode=Node,RBAC",
		"--allow-privileged=true",
		"--profiling=false",
		"--v=1",
	)...); err != nil {
		return err
	}
	return c.waitAPIReady(ctx)
}

func (c *Cluster) startFull(ctx context.Context, binDir string, files map[string]string, opts Options, kcmPort, schedPort, kwokPort int) error {
	if err := c.startControllers(binDir, files, opts, kcmPort, schedPort); err != nil {
		return err
	}
	return c.startKwok(ctx, binDir, opts, kwokPort)
}

// startControllers starts kube-controller-manager and kube-scheduler.
func (c *Cluster) startControllers(binDir string, files map[string]string, opts Options, kcmPort, schedPort int) error {
	kc := c.KubeconfigPath
	// What kube-controller-manager and kube-scheduler share: the admin
	// kubeconfig, a loopback port of their own, no leader election.
	common := func(port int, certDir string, args ...string) []string {
		return append([]string{"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
			"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(port), "--cert-dir=" + filepath.Join(c.Dir, certDir),
			"--leader-elect=false", "--v=1"}, args...)
	}
	if err := c.start("kube-controller-manager", binDir, c.Dir, common(kcmPort, "kcm-certs",
		"--use-service-account-credentials=false",
		"--service-account-private-key-file="+files["sa.key"],
		"--root-ca-file="+files["ca.crt"],
		"--cluster-signing-cert-file="+files["ca.crt"],
		"--cluster-signing-key-file="+files["ca.key"],
		"--service-cluster-ip-range="+opts.ServiceCIDR,
		"--controllers=*", // includes the node lifecycle controller, which clears the not-ready taint
	)...); err != nil {
		return err
	}
	return c.start("kube-scheduler", binDir, c.Dir, common(schedPort, "scheduler-certs")...)
}

// startKwok starts kwok, creates opts.Nodes fake nodes and waits for them.
func (c *Cluster) startKwok(ctx context.Context, binDir string, opts Options, kwokPort int) error {
	kc := c.KubeconfigPath
	kwokArgs := []string{
		"--kubeconfig=" + kc,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
		"--disregard-status-with-annotation-selector=kwok.x-k8s.io/status=custom",
		"--server-address=127.0.0.1:" + strconv.Itoa(kwokPort),
		"--node-ip=127.0.0.1",
		"--cidr=10.244.0.0/16",
		"--node-lease-duration-seconds=40",
	}
	stages, err := filepath.Glob(filepath.Join(binDir, "stages", "*", "*.yaml"))
	if err != nil || len(stages) == 0 {
		return fmt.Errorf("%w (no kwok stages in %s)", ErrBinariesMissing, filepath.Join(binDir, "stages"))
	}
	for _, s := range stages {
		kwokArgs = append(kwokArgs, "--config="+s)
	}
	if err := c.start("kwok", binDir, c.Dir, kwokArgs...); err != nil {
		return err
	}

	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	for i := 1; i <= opts.Nodes; i++ {
		if _, err := cs.CoreV1().Nodes().Create(ctx, fakeNode(fmt.Sprintf("eddy-node-%d", i)), metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating fake node: %w", err)
		}
	}
	return c.poll(ctx, "fake nodes Ready and the default ServiceAccount", func() (bool, error) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		ready := 0
		for _, n := range nodes.Items {
			if nodeSchedulable(&n) {
				ready++
			}
		}
		if ready < opts.Nodes {
			return false, nil
		}
		_, err = cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
}

const kwokNodeAnnotation = "kwok.x-k8s.io/node"

func fakeNode(name string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:        name,
		Annotations: map[string]string{kwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"},
		Labels: map[string]string{
			"type": "kwok", "kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
			"kubernetes.io/arch": "amd64", "node-role.kubernetes.io/agent": "",
		},
	}}
}

func nodeSchedulable(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == corev1.TaintNodeNotReady || t.Key == corev1.TaintNodeUnreachable {
			return false
		}
	}
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

func (c *Cluster) start(name, binDir, logDir string, args ...string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return errors.New("the cluster was stopped while starting")
	}
	p, err := process.Start(process.Spec{Name: name, Bin: filepath.Join(binDir, name), Args: args,
		Dir: logDir, LogPath: filepath.Join(logDir, name+".log")})
	if err != nil {
		return err
	}
	c.procs = append(c.procs, p)
	return nil
}

// processes returns a snapshot of the started components.
func (c *Cluster) processes() []*process.Process {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*process.Process(nil), c.procs...)
}

func (c *Cluster) waitAPIReady(ctx context.Context) error {
	cfg := rest.CopyConfig(c.Config)
	cfg.Timeout = 2 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return c.poll(ctx, "kube-apiserver /readyz", func() (bool, error) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// poll calls check every 100ms until it is true, a child process exits, or ctx ends.
func (c *Cluster) poll(ctx context.Context, what string, check func() (bool, error)) error {
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		if ok, err := check(); ok || err != nil {
			return ok, err
		}
		for _, p := range c.processes() {
			if done, perr := p.Exited(); done {
				if strings.Contains(p.Tail(20), "address already in use") {
					return false, fmt.Errorf("%s exited: %w", p.Name(), errPortTaken)
				}
				return false, fmt.Errorf("%s exited: %v", p.Name(), perr)
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// Stop kills every child process (SIGTERM, then SIGKILL after 5s), waits for
// them to exit and, when Start made the directory, removes it. It is safe to
// call more than once.
func (c *Cluster) Stop() {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.stopped = true
		procs := append([]*process.Process(nil), c.procs...)
		c.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].Stop(5 * time.Second)
		}
		if err := c.stopNode(); err != nil {
			c.stopErr = err
			fmt.Fprintf(os.Stderr, "localcluster: %v\n", err)
			unregister(c)
			return // the directory may still hold mounts: never remove it then
		}
		if c.ownDir && os.Getenv("EDDY_KEEP_CLUSTER_DIR") == "" {
			_ = os.RemoveAll(c.Dir)
		}
		unregister(c)
	})
}

// StopError returns what Stop could not clean up of the node profile's
// changes to the machine, or nil.
func (c *Cluster) StopError() error { return c.stopErr }

// Pids returns the process IDs of the cluster's components.
func (c *Cluster) Pids() []int {
	procs := c.processes()
	pids := make([]int, 0, len(procs))
	for _, p := range procs {
		pids = append(pids, p.PID())
	}
	return pids
}

// Ports returns the loopback ports the cluster's components listen on.
func (c *Cluster) Ports() []int { return append([]int(nil), c.ports...) }

// Component is one running process of the cluster.
type Component struct {
	// Name is the binary's name, e.g. kube-apiserver.
	Name string
	// PID is its process ID.
	PID int
	// LogPath is the file its output goes to.
	LogPath string
}

// Components returns the cluster's processes in start order.
func (c *Cluster) Components() []Component {
	var out []Component
	for _, p := range c.processes() {
		out = append(out, Component{Name: p.Name(), PID: p.PID(), LogPath: p.LogPath()})
	}
	return out
}

// Logs returns the last n lines of each component's log, headed by its name.
func (c *Cluster) Logs(n int) string {
	var b strings.Builder
	for _, p := range c.processes() {
		fmt.Fprintf(&b, "----- %s (last %d lines of %s) -----\n%s\n", p.Name(), n, filepath.Base(p.LogPath()), p.Tail(n))
	}
	return b.String()
}
