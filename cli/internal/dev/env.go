// Package dev runs Eddy on this machine for `eddy dev`: the full local
// cluster, Eddy's CRDs, each controller as its own supervised process from
// bin/, a Git HTTP server for local repositories and an event endpoint, with
// the environment's state in a per-user directory.
//
// Layout of the state directory:
//
//	state.json   the running environment (State)
//	cluster/     the local cluster: certificates, etcd data, kubeconfig, component logs
//	git/         the Git server's root: symlinks to served work trees, snapshots of plain directories
//	storage/     source-controller's artifacts
//	logs/        controller logs, events.log (events posted to --events-addr), supervise.log
package dev

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/localcluster"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Controllers are the controller binaries `eddy dev` runs, in start order.
var Controllers = []string{"source-controller", "kustomize-controller"}

// Options configure Start.
type Options struct {
	// Root is an Eddy checkout: bin/ (controllers) and config/crd/bases.
	Root string
	// K8sBinDir holds the local cluster's binaries (`make tools`).
	K8sBinDir string
	// StateDir is the environment's directory (see the package doc).
	StateDir string
	// Nodes is the number of fake nodes; default 1.
	Nodes int
	// Progress receives one line per step; may be nil.
	Progress func(string)
	// Fast shortens controller retry delays and leader-election leases, so a
	// killed controller's successor takes over in seconds (demo and tests).
	Fast bool
}

// Env is a running dev environment.
type Env struct {
	Opts    Options
	Cluster *localcluster.Cluster
	Git     *gitserver.Server
	Sup     *Supervisor
	// Client is an admin client with Eddy's kinds and CRDs in its scheme.
	Client client.Client
	Scheme *runtime.Scheme

	events   *http.Server
	lock     *os.File   // flock of <state dir>/lock, held while the environment runs
	mu       sync.Mutex // guards state
	state    State
	stopOnce sync.Once
}

// NewScheme returns a scheme with Kubernetes' kinds, CRDs and Eddy's kinds.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		sourcev1.AddToScheme, kustomizev1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}

// ErrRunning is returned by Start when the state directory's environment runs.
var ErrRunning = errors.New("an eddy dev environment is already running")

func (e *Env) progress(format string, args ...any) {
	if e.Opts.Progress != nil {
		e.Opts.Progress(fmt.Sprintf(format, args...))
	}
}

// Start starts the cluster, installs the CRDs and the flux-system namespace,
// and starts the Git server, the event endpoint and the controllers; the
// caller then points it at a repository with PrepareSource and ApplySync.
// The state file records the environment from the first step, so `eddy dev
// down` can stop one that is starting. On error everything started is
// stopped again.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	if s := Running(opts.StateDir); s != nil && s.PID != os.Getpid() {
		return nil, fmt.Errorf("%w (pid %d): run `eddy dev down` first", ErrRunning, s.PID)
	}
	for _, d := range []string{"logs", "storage", "git"} {
		if err := os.MkdirAll(filepath.Join(opts.StateDir, d), 0o700); err != nil {
			return nil, err
		}
	}
	// One environment per state directory, even when two start at once.
	lock, err := os.OpenFile(filepath.Join(opts.StateDir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		lock.Close()
		return nil, fmt.Errorf("%w in %s: run `eddy dev down` first", ErrRunning, opts.StateDir)
	}
	_ = os.RemoveAll(filepath.Join(opts.StateDir, "cluster")) // a previous run killed outright
	e := &Env{Opts: opts, Sup: &Supervisor{}, Scheme: NewScheme(), lock: lock}
	e.state = State{PID: os.Getpid(), Phase: PhaseStarting, StartedAt: time.Now()}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if err := e.save(); err != nil {
		return nil, err
	}
	e.Sup.OnChange = func() { _ = e.save() }

	e.progress("starting the local cluster (etcd, kube-apiserver, controller-manager, scheduler, kwok, %d fake node(s))", opts.Nodes)
	e.Cluster, err = localcluster.Start(ctx, localcluster.Options{
		Profile: localcluster.ProfileFull, Nodes: opts.Nodes, BinDir: opts.K8sBinDir,
		Dir: filepath.Join(opts.StateDir, "cluster"), NoSignalHandler: true,
	})
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.state.Kubeconfig = e.Cluster.KubeconfigPath
	e.state.Ports = append(e.state.Ports, e.Cluster.Ports()...)
	for _, c := range e.Cluster.Components() {
		e.state.Cluster = append(e.state.Cluster, ClusterProc{Name: c.Name, PID: c.PID, Log: c.LogPath})
	}
	e.mu.Unlock()
	_ = e.save()
	e.progress("cluster ready in %s", e.Cluster.StartupDuration.Round(100*time.Millisecond))

	if e.Client, err = client.New(e.Cluster.Config, client.Options{Scheme: e.Scheme}); err != nil {
		return nil, err
	}
	e.progress("installing the CRDs from config/crd/bases")
	if err := InstallCRDs(ctx, e.Client, filepath.Join(opts.Root, "config", "crd", "bases")); err != nil {
		return nil, err
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}

	if e.Git, err = gitserver.Start(gitserver.Options{Root: filepath.Join(opts.StateDir, "git")}); err != nil {
		return nil, err
	}
	eventsPort, err := e.startEventSink()
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.state.GitServer = e.Git.URL
	e.state.EventsAddr = fmt.Sprintf("http://127.0.0.1:%d/", eventsPort)
	e.state.Ports = append(e.state.Ports, portOf(e.Git.URL), eventsPort)
	e.mu.Unlock()

	for _, name := range Controllers {
		spec, ports, err := e.controllerSpec(name)
		if err != nil {
			return nil, err
		}
		e.mu.Lock()
		e.state.Ports = append(e.state.Ports, ports...)
		e.mu.Unlock()
		if err := e.Sup.Start(spec); err != nil {
			return nil, err
		}
		e.progress("started %s (pid %d, log %s)", name, e.Sup.find(name).pid, spec.LogPath)
	}
	if err := e.waitControllersReady(ctx, 60*time.Second); err != nil {
		return nil, err
	}
	return e, nil
}

// SetRunning records the phase running, with the served work tree (empty
// for a remote repository), in the state file.
func (e *Env) SetRunning(workTree string) error {
	e.mu.Lock()
	e.state.Phase, e.state.WorkTree = PhaseRunning, workTree
	e.mu.Unlock()
	return e.save()
}

// State returns a copy of the environment's state.
func (e *Env) State() State {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// controllerSpec returns the process of a controller with the flags it gets
// in a cluster (contract §9) and loopback ports picked free.
func (e *Env) controllerSpec(name string) (ProcSpec, []int, error) {
	ports, err := freePorts(3)
	if err != nil {
		return ProcSpec{}, nil, err
	}
	health, metrics := ports[0], ports[1]
	args := []string{
		"--kubeconfig=" + e.Cluster.KubeconfigPath,
		"--watch-all-namespaces",
		"--log-level=info", "--log-encoding=json",
		"--enable-leader-election",
		"--events-addr=" + e.state.EventsAddr,
		fmt.Sprintf("--health-addr=127.0.0.1:%d", health),
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", metrics),
	}
	// Shorter leases than Flux's 35s: a restarted controller of a local
	// environment takes over within seconds, not half a minute.
	if e.Opts.Fast {
		args = append(args, "--leader-election-lease-duration=6s", "--leader-election-renew-deadline=4s",
			"--leader-election-retry-period=1s", "--min-retry-delay=200ms", "--max-retry-delay=5s")
	} else {
		args = append(args, "--leader-election-lease-duration=15s", "--leader-election-renew-deadline=10s",
			"--leader-election-retry-period=2s")
	}
	used := []int{health, metrics}
	if name == "source-controller" {
		storage := ports[2]
		args = append(args, "--storage-path="+filepath.Join(e.Opts.StateDir, "storage"),
			fmt.Sprintf("--storage-addr=127.0.0.1:%d", storage),
			fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", storage))
		used = append(used, storage)
	}
	return ProcSpec{
		Name: name, Bin: filepath.Join(e.Opts.Root, "bin", name), Args: args,
		Env:       []string{"RUNTIME_NAMESPACE=" + Namespace},
		LogPath:   filepath.Join(e.Opts.StateDir, "logs", name+".log"),
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/readyz", health),
	}, used, nil
}

func (e *Env) waitControllersReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ready := true
		for _, p := range e.Sup.Status() {
			if !Healthy(p.HealthURL) {
				ready = false
			}
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("controllers not ready after %s: see %s", timeout, filepath.Join(e.Opts.StateDir, "logs"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startEventSink serves the controllers' --events-addr until
// notification-controller runs in `eddy dev`: it accepts each event and
// appends it, one JSON document a line, to logs/events.log.
func (e *Env) startEventSink() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	f, err := os.OpenFile(filepath.Join(e.Opts.StateDir, "logs", "events.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		l.Close()
		return 0, err
	}
	var mu sync.Mutex
	e.events = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST an event", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 3<<20))
		if err != nil || !json.Valid(body) {
			http.Error(w, "invalid event", http.StatusBadRequest)
			return
		}
		mu.Lock()
		_, _ = f.Write(append(body, '\n'))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	})}
	e.events.RegisterOnShutdown(func() { f.Close() })
	go func() { _ = e.events.Serve(l) }()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (e *Env) save() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.Sup != nil {
		e.state.Controllers = e.Sup.Status()
	}
	return writeState(e.Opts.StateDir, &e.state)
}

// Stop stops the controllers, the servers and the cluster, removes the
// cluster's directory, the artifacts and the state file. Safe to call twice.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		e.mu.Lock()
		e.state.Phase = PhaseStopping
		e.mu.Unlock()
		_ = e.save()
		e.Sup.Stop(10 * time.Second)
		if e.events != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = e.events.Shutdown(ctx)
			cancel()
		}
		if e.Git != nil {
			e.Git.Close()
		}
		if e.Cluster != nil {
			e.Cluster.Stop()
		}
		if os.Getenv("EDDY_KEEP_CLUSTER_DIR") == "" {
			_ = os.RemoveAll(filepath.Join(e.Opts.StateDir, "cluster"))
		}
		_ = os.RemoveAll(filepath.Join(e.Opts.StateDir, "storage"))
		_ = os.Remove(statePath(e.Opts.StateDir))
		_ = e.lock.Close() // releases the flock
	})
}

// InstallCRDs creates or updates every CRD in dir (*.yaml) and waits until
// each is Established and served (its kinds resolve through discovery).
func InstallCRDs(ctx context.Context, c client.Client, dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CRDs in %s: run `make generate`", dir)
	}
	var crds []*apiextensionsv1.CustomResourceDefinition
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
		crds = append(crds, crd)
		obj := crd.DeepCopy()
		if err := createOrUpdate(ctx, c, obj, func() {
			obj.Spec, obj.Labels, obj.Annotations = crd.Spec, crd.Labels, crd.Annotations
		}); err != nil {
			return fmt.Errorf("CustomResourceDefinition %s: %w", crd.Name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for _, crd := range crds {
		for {
			got := &apiextensionsv1.CustomResourceDefinition{}
			ok := c.Get(ctx, client.ObjectKeyFromObject(crd), got) == nil && established(got)
			if ok {
				_, err := c.RESTMapper().RESTMapping(
					schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}, crd.Spec.Versions[0].Name)
				ok = err == nil
			}
			if ok {
				break
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("CustomResourceDefinition %s not served: %w", crd.Name, ctx.Err())
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

func portOf(url string) int {
	_, p, err := net.SplitHostPort(url[len("http://"):])
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(p)
	return n
}
