// Package dev runs Eddy on this machine for `eddy dev`: the full local
// cluster, Eddy's CRDs, each controller (notification-controller included)
// as its own supervised process from bin/, a Git HTTP server for local
// repositories, an event recorder in front of notification-controller and,
// on request, a sink for alerts, with the environment's state in a per-user
// directory.
//
// Layout of the state directory:
//
//	state.json   the running environment (State)
//	sync.json    what the environment syncs (see SetSync)
//	cluster/     the local cluster: certificates, etcd data, kubeconfig, component logs
//	git/         the Git server's root: symlinks to served repositories, snapshots of plain directories
//	storage/     source-controller's artifacts (storage/shard<i>/ those of its shard i)
//	logs/        controller logs, events.log (events posted to --events-addr), alerts.log
//	             (alerts received by the sink), supervise.log
//	webhook-token the Receivers' token (kept across restarts; never printed)
//	controller-flags.json  the controllers' extra flags (--controller-flags; kept across restarts)
package dev

import (
	"context"
	"errors"
	"fmt"
	"github.com/eddyops/eddy/cli/internal/scheme"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/eddyops/eddy/cli/internal/install"
	"github.com/eddyops/eddy/cli/internal/webui"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/process"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Controllers are the controller binaries `eddy dev` runs, in start order:
// notification-controller first, so the others' first events reach it;
// application-controller last, reconciling Argo CD's Applications in
// install.ApplicationNamespace.
var Controllers = []string{"notification-controller", "source-controller", "kustomize-controller", "helm-controller", install.ApplicationController}

// Options configure Start.
type Options struct {
	// Root is an Eddy checkout: bin/ holds the controllers.
	Root string
	// Version is the eddy version: the install bundle's version label and
	// image tags (see installBundle); default "dev".
	Version string
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
	// AlertsSink starts a local HTTP endpoint that takes the alerts of
	// generic Providers (the Secret AlertsSinkSecret points at it), writes
	// each as one line to logs/alerts.log and gives it to OnAlert.
	AlertsSink bool
	// OnAlert receives each alert line of the sink; may be nil.
	OnAlert func(line string)
	// Lock is the state directory's lock, taken with Lock (by the caller,
	// or inherited from `eddy dev up --detach`); nil: Start takes it.
	Lock *os.File
	// Shards, when above 0, runs that many more processes of each of
	// ShardedControllers, <controller>-shard<i> (i = 1..Shards), each
	// reconciling the objects labelled sharding.fluxcd.io/key=shard<i>;
	// the main processes then skip labelled objects.
	Shards int
	// UI serves the web UI (package webui, as `eddy ui`) with the admin
	// kubeconfig at UIListen (default webui.DefaultListen; port 0 picks a
	// free port), logging to logs/ui.log. A taken port fails Start before
	// the cluster starts.
	UI       bool
	UIListen string
	// ControllerFlags are the controllers' extra flags; once all
	// controllers are ready they are kept in the state directory for the
	// next start (see LoadControllerFlags).
	ControllerFlags ControllerFlags
	// Node is NodeKwok (the default) or NodeReal: the node profile, with
	// the controllers installed as pods from NodeImages, pushed to a
	// registry at RegistryAddr (default DefaultRegistryAddr), and the Git
	// server on the node IP.
	Node         string
	NodeImages   *NodeImages
	RegistryAddr string
	// Optional are the optional controllers to run after Controllers;
	// OptionalComponents those whose CRDs and Deployments the bundle gets
	// (see OptionalFor).
	Optional, OptionalComponents []string
}

// ShardedControllers are the controllers `eddy dev up --shards` runs shard
// processes of, as install shards them.
var ShardedControllers = install.ShardedComponents

// ShardName is the name of shard i (1-based): the value objects carry in
// their sharding.fluxcd.io/key label to be reconciled by it.
func ShardName(i int) string { return fmt.Sprintf("shard%d", i) }

// Env is a running dev environment.
type Env struct {
	Opts    Options
	Cluster *localcluster.Cluster
	Git     *gitserver.Server
	Sup     *process.Supervisor
	// Client is an admin client with Eddy's kinds and CRDs in its scheme.
	Client client.Client
	Scheme *runtime.Scheme

	events   *http.Server   // the event recorder in front of notification-controller
	servers  []*http.Server // every HTTP server of the environment
	lock     *os.File       // flock of <state dir>/lock, held while the environment runs
	mu       sync.Mutex     // guards state
	state    State
	stopOnce sync.Once

	// notification-controller's event server and webhook receiver ports.
	ncEvents, ncReceiver int

	stopUI context.CancelFunc // stops the web UI (Options.UI)

	registry *localcluster.Registry       // --node real: serves the images
	nodeObjs []*unstructured.Unstructured // --node real: the install bundle
	// reported holds, by process, 1 + the restarts at the exit last
	// reported by reportExits (guarded by mu).
	reported map[string]int
}

// ErrRunning is returned by Start when the state directory's environment runs.
var ErrRunning = errors.New("an eddy dev environment is already running")

// Lock takes the lock of the state directory dir (an exclusive flock of
// dir/lock), which the owner of its environment holds while it runs: one
// environment per state directory, even when two start at once. ErrRunning
// when another process holds it. Closing the file (or exiting) releases it;
// a child process started with the file keeps it held.
func Lock(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("%w in %s (starting or running): run `eddy dev down` first", ErrRunning, dir)
	}
	return f, nil
}

func (e *Env) progress(format string, args ...any) {
	if e.Opts.Progress != nil {
		e.Opts.Progress(fmt.Sprintf(format, args...))
	}
}

// Start starts the cluster, installs the CRDs, the flux-system namespace,
// the controllers' Deployments (0 replicas; see installBundle) and the Secrets of WebhookSecret (and AlertsSinkSecret), and starts the Git
// server, the event recorder, the alerts sink and the controllers; the
// caller then points it at a repository with PrepareSource and ApplySync.
// The state file records the environment from the first step, so `eddy dev
// down` can stop one that is starting. On error everything started is
// stopped again.
func Start(ctx context.Context, opts Options) (_ *Env, err error) {
	if opts.Nodes <= 0 {
		opts.Nodes = 1
	}
	if opts.Version == "" {
		opts.Version = "dev"
	}
	if s := Running(opts.StateDir); s != nil && s.PID != os.Getpid() {
		return nil, fmt.Errorf("%w (pid %d): run `eddy dev down` first", ErrRunning, s.PID)
	}
	if opts.UI {
		if opts.UIListen == "" {
			opts.UIListen = webui.DefaultListen
		}
		if err := checkUIListen(opts.UIListen); err != nil {
			return nil, err
		}
	}
	lock := opts.Lock
	if lock == nil {
		if lock, err = Lock(opts.StateDir); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{"logs", "storage", "git"} {
		if err := os.MkdirAll(filepath.Join(opts.StateDir, d), 0o700); err != nil {
			lock.Close()
			return nil, err
		}
	}
	_ = os.RemoveAll(filepath.Join(opts.StateDir, "cluster")) // a previous run killed outright
	_ = os.Remove(syncPath(opts.StateDir))
	e := &Env{Opts: opts, Sup: &process.Supervisor{}, Scheme: scheme.New(), lock: lock}
	e.state = State{PID: os.Getpid(), Phase: PhaseStarting, StartedAt: time.Now(), Shards: opts.Shards, ControllerFlags: opts.ControllerFlags,
		OptionalComponents: opts.OptionalComponents}
	steps := []func(context.Context) error{e.startCluster, e.startServers, e.startControllers, e.startUI}
	if opts.Node == NodeReal {
		e.state.Node = NodeReal
		steps = []func(context.Context) error{e.startNode, e.startNodeServers, e.waitPods, e.startUI}
	}
	defer func() {
		if err != nil {
			e.Stop()
		}
	}()
	if err := e.save(); err != nil {
		return nil, err
	}
	e.Sup.OnChange = func() {
		_ = e.save()
		e.reportExits()
	}

	for _, step := range steps {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// startCluster starts the local cluster, records its processes and ports,
// makes the admin client, installs the CRDs, the flux-system namespace and
// the controllers' Deployments.
func (e *Env) startCluster(ctx context.Context) (err error) {
	e.progress("starting the local cluster (etcd, kube-apiserver, controller-manager, scheduler, kwok, %d fake node(s))", e.Opts.Nodes)
	e.Cluster, err = localcluster.Start(ctx, localcluster.Options{
		Profile: localcluster.ProfileFull, Nodes: e.Opts.Nodes, BinDir: e.Opts.K8sBinDir,
		Dir: filepath.Join(e.Opts.StateDir, "cluster"),
	})
	if err != nil {
		return err
	}
	e.recordCluster()

	if e.Client, err = client.New(e.Cluster.Config, client.Options{Scheme: e.Scheme}); err != nil {
		return err
	}
	e.progress("installing the CRDs, the %s namespace and the controllers' Deployments (0 replicas: the controllers run here as processes)", Namespace)
	objs, err := install.Objects(BundleOptions(e.Opts.Version, e.Opts.OptionalComponents...))
	if err != nil {
		return err
	}
	return installBundle(ctx, e.Client, objs)
}

// startServers starts the Git server, the event recorder and the alerts
// sink, picks notification-controller's ports and applies the Secrets of
// the webhook token and the sink's address.
func (e *Env) startServers(ctx context.Context) (err error) {
	if e.Git, err = gitserver.Start(e.gitServerOptions("")); err != nil {
		return err
	}
	// The recorder and the sink listen first, so the ports picked for
	// notification-controller cannot be theirs.
	eventsPort, err := e.startEventRecorder()
	if err != nil {
		return err
	}
	sinkPort := 0
	if e.Opts.AlertsSink {
		if sinkPort, err = e.startAlertsSink(); err != nil {
			return err
		}
	}
	ncPorts, err := localcluster.FreePorts(2)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.ncEvents, e.ncReceiver = ncPorts[0], ncPorts[1]
	e.state.GitServer = e.Git.URL
	e.state.EventsAddr = fmt.Sprintf("http://127.0.0.1:%d/", eventsPort)
	e.state.NotificationAddr = fmt.Sprintf("http://127.0.0.1:%d/", e.ncEvents)
	e.state.ReceiverURL = fmt.Sprintf("http://127.0.0.1:%d", e.ncReceiver)
	e.state.Ports = append(e.state.Ports, portOf(e.Git.URL), eventsPort, e.ncEvents, e.ncReceiver)
	e.mu.Unlock()

	token, err := WebhookToken(e.Opts.StateDir)
	if err != nil {
		return err
	}
	if err := applySecret(ctx, e.Client, WebhookSecret, map[string]string{"token": token}); err != nil {
		return err
	}
	if e.Opts.AlertsSink {
		sinkURL := fmt.Sprintf("http://127.0.0.1:%d/", sinkPort)
		if err := applySecret(ctx, e.Client, AlertsSinkSecret, map[string]string{"address": sinkURL}); err != nil {
			return err
		}
		e.mu.Lock()
		e.state.AlertsSink = sinkURL
		e.state.Ports = append(e.state.Ports, sinkPort)
		e.mu.Unlock()
		e.progress("alerts sink listening at %s (Secret %s/%s; log %s)", sinkURL, Namespace, AlertsSinkSecret,
			filepath.Join(e.Opts.StateDir, "logs", "alerts.log"))
	}
	return nil
}

// startControllers starts each controller as a supervised process and waits
// until all are ready.
func (e *Env) startControllers(ctx context.Context) error {
	for _, name := range append(slices.Clone(Controllers), e.Opts.Optional...) {
		shards := 0
		if slices.Contains(ShardedControllers, name) {
			shards = e.Opts.Shards
		}
		for shard := 0; shard <= shards; shard++ {
			spec, ports, err := e.controllerSpec(name, shard)
			if err != nil {
				return err
			}
			e.mu.Lock()
			e.state.Ports = append(e.state.Ports, ports...)
			e.mu.Unlock()
			if err := e.Sup.Start(spec); err != nil {
				return err
			}
			st := e.Sup.Status()
			e.progress("started %s (pid %d, log %s)", spec.Name, st[len(st)-1].PID, spec.LogPath)
		}
	}
	if err := e.waitControllersReady(ctx, 60*time.Second); err != nil {
		return err
	}
	return saveControllerFlags(e.Opts.StateDir, e.Opts.ControllerFlags)
}

// startUI serves the web UI with the admin client configuration when
// Options.UI is set, and records its URL and port in the state file.
func (e *Env) startUI(context.Context) error {
	if !e.Opts.UI {
		return nil
	}
	logFile, err := os.OpenFile(filepath.Join(e.Opts.StateDir, "logs", "ui.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	srv, err := webui.Listen(webui.Options{Config: e.Cluster.Config, Context: "eddy-dev", Listen: e.Opts.UIListen, Log: logFile})
	if err != nil {
		logFile.Close()
		return fmt.Errorf("--ui-listen: %w", err)
	}
	// Its own context: Stop ends it, whatever context started the environment.
	ctx, cancel := context.WithCancel(context.Background())
	// The address is announced once the page has data to show.
	if err := srv.Start(ctx); err != nil {
		cancel()
		logFile.Close()
		return fmt.Errorf("web UI: %w", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer logFile.Close()
		if err := srv.Serve(ctx); err != nil {
			fmt.Fprintf(logFile, "web UI stopped: %v\n", err)
		}
	}()
	e.stopUI = func() { cancel(); <-done }
	e.mu.Lock()
	e.state.UI = srv.URL()
	e.state.Ports = append(e.state.Ports, portOf(strings.TrimSuffix(srv.URL(), "/")))
	e.mu.Unlock()
	e.progress("web UI at %s (log %s)", srv.URL(), logFile.Name())
	return e.save()
}

// SetRunning records the phase running and the source src it syncs (see
// SetSync) in the state directory.
func (e *Env) SetRunning(src *Source) error {
	e.mu.Lock()
	e.state.Phase, e.state.WorkTree = PhaseRunning, src.WorkTree
	e.mu.Unlock()
	if err := SetSync(e.Opts.StateDir, src); err != nil {
		return err
	}
	return e.save()
}

// reportExits says, once per exit, which controller exited and why (the
// last line of its log): the supervisor restarts it, and the user sees it
// where the environment's progress goes (the console, or supervise.log).
func (e *Env) reportExits() {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.state.Phase == PhaseStopping {
		return
	}
	for _, p := range e.Sup.Status() {
		if p.LastExit == "" || p.Held || Alive(p.PID) || e.reported[p.Name] == p.Restarts+1 {
			continue
		}
		if e.reported == nil {
			e.reported = map[string]int{}
		}
		e.reported[p.Name] = p.Restarts + 1
		e.progress("%s exited (%s): %s; restarting it (see `eddy dev status`)", p.Name, p.LastExit, LastLogLine(p.LogPath))
	}
}

// State returns a copy of the environment's state.
func (e *Env) State() State {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.state
}

// controllerSpec returns the process of a controller with the flags it gets
// in a cluster (contract §9) and loopback ports picked free.
// notification-controller serves events and webhooks on the ports Start
// picked; the others POST their events to the recorder, which forwards them.
// A shard above 0 is the process <name>-shard<shard>, reconciling only that
// shard's objects (its own storage for source-controller); with shards, the
// main process (shard 0) skips every labelled object.
func (e *Env) controllerSpec(name string, shard int) (process.Spec, []int, error) {
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		return process.Spec{}, nil, err
	}
	health, metrics := ports[0], ports[1]
	args := []string{
		"--kubeconfig=" + e.Cluster.KubeconfigPath,
		"--watch-all-namespaces",
		"--log-level=info", "--log-encoding=json",
		"--enable-leader-election",
		fmt.Sprintf("--health-addr=127.0.0.1:%d", health),
		fmt.Sprintf("--metrics-addr=127.0.0.1:%d", metrics),
	}
	if name == "notification-controller" {
		// Its --events-addr is the address it serves events on (Flux's :9090).
		args = append(args, fmt.Sprintf("--events-addr=127.0.0.1:%d", e.ncEvents),
			fmt.Sprintf("--receiverAddr=127.0.0.1:%d", e.ncReceiver))
	} else {
		args = append(args, "--events-addr="+e.state.EventsAddr)
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
	procName, storageDir := name, filepath.Join(e.Opts.StateDir, "storage")
	switch {
	case shard > 0:
		procName = name + "-" + ShardName(shard)
		storageDir = filepath.Join(storageDir, ShardName(shard))
		args = append(args, "--watch-label-selector="+install.ShardSelector(ShardName(shard)))
	case e.Opts.Shards > 0 && slices.Contains(ShardedControllers, name):
		args = append(args, "--watch-label-selector="+install.UnshardedSelector)
	}
	used := []int{health, metrics}
	if name == install.ApplicationController {
		// Argo CD's namespace, whatever RUNTIME_NAMESPACE (its leases) says.
		args = append(args, "--namespace="+install.ApplicationNamespace)
	}
	if name == install.ImageReflectorController {
		args = append(args, "--storage-path="+filepath.Join(storageDir, name))
	}
	if name == "source-controller" {
		storage := ports[2]
		args = append(args, "--storage-path="+storageDir,
			fmt.Sprintf("--storage-addr=127.0.0.1:%d", storage),
			fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", storage))
		used = append(used, storage)
	}
	// The user's flags last: they override eddy dev's (none reserved; see ParseControllerFlags).
	args = append(args, e.Opts.ControllerFlags.forProcess(procName)...)
	return process.Spec{
		Name: procName, Bin: filepath.Join(e.Opts.Root, "bin", name), Args: args,
		Env:       []string{"RUNTIME_NAMESPACE=" + Namespace},
		LogPath:   filepath.Join(e.Opts.StateDir, "logs", procName+".log"),
		HealthURL: fmt.Sprintf("http://127.0.0.1:%d/readyz", health),
	}, used, nil
}

// waitControllersReady waits until every controller answers its readiness
// probe. A controller that exited again after a restart is crash-looping:
// the error names it with the last line of its log, at once; at the
// timeout, the error names those not ready the same way.
func (e *Env) waitControllersReady(ctx context.Context, timeout time.Duration) error {
	var notReady []string
	var crashed error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		notReady = nil
		for _, p := range e.Sup.Status() {
			if p.Restarts >= 1 && p.LastExit != "" && !Alive(p.PID) {
				crashed = fmt.Errorf("%s keeps exiting (%s, %d restarts): %s (log %s)", p.Name, p.LastExit, p.Restarts, LastLogLine(p.LogPath), p.LogPath)
				return false, crashed
			}
			if !Healthy(p.HealthURL) {
				notReady = append(notReady, fmt.Sprintf("%s: %s (log %s)", p.Name, LastLogLine(p.LogPath), p.LogPath))
			}
		}
		ready := len(notReady) == 0
		for _, port := range []int{e.ncEvents, e.ncReceiver} {
			if port != 0 && !listening(port) {
				ready = false
			}
		}
		return ready, nil
	})
	switch {
	case err == nil || crashed != nil:
		return crashed
	case ctx.Err() != nil:
		return ctx.Err()
	case len(notReady) == 0:
		return fmt.Errorf("notification-controller does not listen on its event or receiver port after %s: see %s", timeout,
			filepath.Join(e.Opts.StateDir, "logs", "notification-controller.log"))
	}
	return fmt.Errorf("not ready after %s: %s", timeout, strings.Join(notReady, "; "))
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
// cluster's directory, the artifacts, the served entries of git/ and the
// state file. Safe to call twice.
func (e *Env) Stop() {
	e.stopOnce.Do(func() {
		e.mu.Lock()
		e.state.Phase = PhaseStopping
		e.mu.Unlock()
		_ = e.save()
		if e.stopUI != nil {
			e.stopUI()
		}
		e.Sup.Stop(10 * time.Second)
		for _, srv := range e.servers {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = srv.Shutdown(ctx)
			cancel()
		}
		if e.Git != nil {
			e.Git.Close()
		}
		if e.Cluster != nil {
			e.Cluster.Stop()
			if err := e.Cluster.StopError(); err != nil {
				e.progress("the cluster's stop left something behind: %v", err)
			}
		}
		if e.registry != nil {
			e.registry.Stop()
		}
		_ = os.RemoveAll(filepath.Join(e.Opts.StateDir, "registry"))
		if os.Getenv("EDDY_KEEP_CLUSTER_DIR") == "" {
			_ = os.RemoveAll(filepath.Join(e.Opts.StateDir, "cluster"))
		}
		_ = os.RemoveAll(filepath.Join(e.Opts.StateDir, "storage"))
		_ = RemoveServed(e.Opts.StateDir)
		_ = os.Remove(syncPath(e.Opts.StateDir))
		_ = os.Remove(statePath(e.Opts.StateDir))
		_ = e.lock.Close() // releases the flock
	})
}
