// Package controllerkit holds what every Eddy controller binary shares at start-up:
// Flux's runtime flags with Flux's names and defaults (contract §9), logging,
// and the controller-runtime manager built from them.
package controllerkit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/cli-utils/pkg/flowcontrol"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Options are the runtime flags shared by all controllers.
// Flux compatible: flag names and defaults of fluxcd/pkg/runtime.
type Options struct {
	MetricsAddr          string
	HealthAddr           string
	EnableLeaderElection bool
	// ReleaseOnCancel steps down from leadership when the manager stops, so
	// a standby replica takes over at once instead of after LeaseDuration.
	ReleaseOnCancel      bool
	LeaseDuration        time.Duration
	RenewDeadline        time.Duration
	RetryPeriod          time.Duration
	LogLevel             string
	LogEncoding          string
	Concurrent           int
	WatchAllNamespaces   bool
	WatchLabelSelector   string
	KubeAPIQPS           float64
	KubeAPIBurst         int
	MinRetryDelay        time.Duration
	MaxRetryDelay        time.Duration
	IntervalJitter       float64
	NoCrossNamespaceRefs bool
	// FeatureGates is --feature-gates over the controller's known gates.
	FeatureGates *FeatureGates
	// GracefulShutdownTimeout, when set, is how long the manager waits for
	// running reconciles after a stop signal (a controller's own flag, e.g.
	// helm-controller's --graceful-shutdown-timeout); nil: controller-runtime's 30s.
	GracefulShutdownTimeout *time.Duration

	// compat are the Flux flags parsed without Flux's effect (IgnoreFlag,
	// RefuseFlag).
	compat []compatFlag
}

// BindFlags registers the shared flags on fs; concurrent is the controller's
// default for --concurrent (Flux: 2 for source-controller, 4 for the others).
// gates are the feature gates the controller knows beyond
// CacheSecretsAndConfigMaps, which every controller knows (constants of
// this package); --feature-gates refuses any other name.
func (o *Options) BindFlags(fs *flag.FlagSet, concurrent int, gates ...string) {
	known := map[string]bool{CacheSecretsAndConfigMaps: gateDefaults[CacheSecretsAndConfigMaps]}
	for _, g := range gates {
		d, ok := gateDefaults[g]
		if !ok {
			panic("runtime: unknown feature gate " + g) // a programming error
		}
		known[g] = d
	}
	o.FeatureGates = NewFeatureGates(known)
	fs.Var(o.FeatureGates, "feature-gates", "A comma-separated list of Name=bool pairs turning features on or off; known: "+o.FeatureGates.names()+".")
	fs.StringVar(&o.MetricsAddr, "metrics-addr", ":8080", "The address the Prometheus metrics endpoint binds to.")
	fs.StringVar(&o.HealthAddr, "health-addr", ":9440", "The address the health endpoints (/healthz, /readyz) bind to.")
	fs.BoolVar(&o.EnableLeaderElection, "enable-leader-election", false, "Enable leader election, so only one replica reconciles at a time.")
	fs.BoolVar(&o.ReleaseOnCancel, "leader-election-release-on-cancel", true, "Step down from leadership when the controller stops, so a standby replica takes over at once.")
	fs.DurationVar(&o.LeaseDuration, "leader-election-lease-duration", 35*time.Second, "How long non-leaders wait before trying to acquire leadership.")
	fs.DurationVar(&o.RenewDeadline, "leader-election-renew-deadline", 30*time.Second, "How long the leader retries renewing leadership before giving up.")
	fs.DurationVar(&o.RetryPeriod, "leader-election-retry-period", 5*time.Second, "How long clients wait between leader election attempts.")
	fs.StringVar(&o.LogLevel, "log-level", "info", "Log verbosity: debug, info, error or trace.")
	fs.StringVar(&o.LogEncoding, "log-encoding", "json", "Log encoding: json or console.")
	fs.IntVar(&o.Concurrent, "concurrent", concurrent, "The number of concurrent reconciles per kind.")
	fs.BoolVar(&o.WatchAllNamespaces, "watch-all-namespaces", true, "Watch all namespaces; when false only the namespace in RUNTIME_NAMESPACE.")
	fs.StringVar(&o.WatchLabelSelector, "watch-label-selector", "", "Reconcile only the controller's objects whose labels match, e.g. 'sharding.fluxcd.io/key=shard1' (sharding).")
	fs.Float64Var(&o.KubeAPIQPS, "kube-api-qps", 50, "Maximum queries per second to the Kubernetes API.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", 300, "Maximum burst of queries to the Kubernetes API.")
	fs.DurationVar(&o.MinRetryDelay, "min-retry-delay", 750*time.Millisecond, "The first delay of the exponential back-off after a failed reconcile.")
	fs.DurationVar(&o.MaxRetryDelay, "max-retry-delay", 15*time.Minute, "The longest delay of the exponential back-off after failed reconciles.")
	fs.Float64Var(&o.IntervalJitter, "interval-jitter-percentage", 5, "Jitter, in percent, added to or removed from each requeue interval.")
	fs.BoolVar(&o.NoCrossNamespaceRefs, "no-cross-namespace-refs", false, "Refuse references to objects in other namespaces.")
	o.bindFluxOnlyFlags(fs)
	o.bindFluxGates()
}

// SetupLogger installs the process logger from --log-level and --log-encoding.
func (o *Options) SetupLogger() error {
	// No stack traces on error lines (a failed reconcile is an error line
	// and its message says what failed), as in Flux's logs.
	zo := zap.Options{TimeEncoder: zapcore.ISO8601TimeEncoder, StacktraceLevel: zapcore.PanicLevel}
	switch o.LogEncoding {
	case "json":
	case "console":
		zo.Development = true
	default:
		return fmt.Errorf("--log-encoding %q: want json or console", o.LogEncoding)
	}
	switch o.LogLevel {
	case "info":
		zo.Level = zapcore.InfoLevel
	case "debug":
		zo.Level = zapcore.DebugLevel
	case "trace":
		zo.Level = zapcore.Level(-2)
	case "error":
		zo.Level = zapcore.ErrorLevel
	default:
		return fmt.Errorf("--log-level %q: want debug, info, error or trace", o.LogLevel)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zo)))
	return nil
}

// RESTConfig returns the cluster configuration: controller-runtime's
// --kubeconfig flag, else $KUBECONFIG, else the in-cluster service account.
// As Flux's controllers (fluxcd/pkg/runtime's client options), the client
// has no rate limiter when the API server answers with API Priority and
// Fairness on (Kubernetes' default since 1.20: the server throttles, per
// flow): --kube-api-qps and --kube-api-burst apply only where it is off or
// cannot be asked.
func (o *Options) RESTConfig() (*rest.Config, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = float32(o.KubeAPIQPS), o.KubeAPIBurst
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if on, err := flowcontrol.IsEnabled(ctx, cfg); err == nil && on {
		// client-go builds no rate limiter for a negative QPS.
		cfg.QPS, cfg.Burst = -1, -1
	}
	return cfg, nil
}

// NewManager builds the controller-runtime manager of the controller named
// name from the flags, on the cluster cfg (nil: RESTConfig) with scheme, the
// controller's whole scheme: a binary and its tests pass the same one, so
// the tests exercise the types the binary knows. watched are the
// controller's own kinds; --watch-label-selector filters those (Flux's
// sharding), the sources they refer to are watched whatever their labels.
// The leader-election lease is LeaderElectionID(name, selector) in
// $RUNTIME_NAMESPACE (Flux's variable), else the pod's own namespace;
// outside a cluster leader election needs RUNTIME_NAMESPACE. When the
// lease cannot be created because that namespace is gone (deleted, or
// being deleted), the manager stops with an error naming it, so the binary
// exits 1 and is restarted instead of waiting for the lease forever. The metrics
// address also serves Go's profiles under /debug/pprof/ (as Flux). The logger is
// the caller's (SetupLogger in a binary).
func (o *Options) NewManager(name string, cfg *rest.Config, scheme *runtime.Scheme, watched ...client.Object) (ctrl.Manager, error) {
	if cfg == nil {
		var err error
		if cfg, err = o.RESTConfig(); err != nil {
			return nil, fmt.Errorf("loading the cluster configuration: %w", err)
		}
	}
	// No controller reads the managedFields of the objects it caches (the
	// applied objects are read uncached, as unstructured), so the caches
	// drop them: they are often the larger part of a small object.
	cacheOpts := cache.Options{DefaultTransform: cache.TransformStripManagedFields()}
	if !o.WatchAllNamespaces {
		ns := os.Getenv("RUNTIME_NAMESPACE")
		if ns == "" {
			return nil, fmt.Errorf("--watch-all-namespaces=false needs RUNTIME_NAMESPACE")
		}
		cacheOpts.DefaultNamespaces = map[string]cache.Config{ns: {}}
	}
	if o.WatchLabelSelector != "" {
		sel, err := labels.Parse(o.WatchLabelSelector)
		if err != nil {
			return nil, fmt.Errorf("--watch-label-selector %q: %w", o.WatchLabelSelector, err)
		}
		cacheOpts.ByObject = map[client.Object]cache.ByObject{}
		for _, obj := range watched {
			cacheOpts.ByObject[obj] = cache.ByObject{Label: sel}
		}
	}
	events := record.NewBroadcasterWithCorrelatorOptions(record.CorrelatorOptions{SpamKeyFunc: eventSpamKey})
	var lock *leaseLock
	if o.EnableLeaderElection {
		var err error
		if lock, err = o.newLeaseLock(cfg, LeaderElectionID(name, o.WatchLabelSelector), events, scheme); err != nil {
			return nil, fmt.Errorf("leader election: %w", err)
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		EventBroadcaster:                    events, //nolint:staticcheck // the only way to set the correlator's options
		Scheme:                              scheme,
		Metrics:                             metricsserver.Options{BindAddress: o.MetricsAddr, ExtraHandlers: pprofHandlers()},
		HealthProbeBindAddress:              o.HealthAddr,
		LeaderElection:                      o.EnableLeaderElection,
		LeaderElectionID:                    LeaderElectionID(name, o.WatchLabelSelector),
		LeaderElectionNamespace:             os.Getenv("RUNTIME_NAMESPACE"), // Flux's variable; empty means the pod's namespace
		LeaderElectionResourceLockInterface: lockInterface(lock),
		LeaderElectionReleaseOnCancel:       o.ReleaseOnCancel,
		LeaseDuration:                       &o.LeaseDuration,
		RenewDeadline:                       &o.RenewDeadline,
		RetryPeriod:                         &o.RetryPeriod,
		Cache:                               cacheOpts,
		Client:                              o.clientOptions(),
		GracefulShutdownTimeout:             o.GracefulShutdownTimeout,
	})
	if err != nil {
		return nil, err
	}
	// A broadcaster passed in is the caller's to stop.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		events.Shutdown()
		return nil
	})); err != nil {
		return nil, err
	}
	if lock != nil {
		if err := mgr.Add(leaseWatch{lock}); err != nil {
			return nil, err
		}
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	if err := mgr.AddReadyzCheck("ping", healthz.Ping); err != nil {
		return nil, err
	}
	return mgr, nil
}

// eventSpamKey throttles Kubernetes events per object and reason, where
// client-go throttles per object (25 events, then one per 5 minutes): a
// Kustomization reconciled every minute would otherwise, after its first 25
// events, have its DriftCorrected events dropped, and the drift they report
// (read by eddy ui and eddy events) lost.
func eventSpamKey(e *corev1.Event) string {
	o := e.InvolvedObject
	return strings.Join([]string{e.Source.Component, e.Source.Host, o.Kind, o.Namespace, o.Name, string(o.UID), o.APIVersion, e.Type, e.Reason}, "\x00")
}

// LeaderElectionID is the name of the leader-election lease of the
// controller name reconciling the objects that selector (its
// --watch-label-selector) matches: `<name>-leader-election`, and for a
// shard `<name>-leader-election-<first 8 hex digits of the SHA-256 of the
// selector>`, so that the replicas of one shard share a lease and two
// shards never do. Flux compatible: fluxcd/pkg/runtime/leaderelection's
// GenerateID, so an Eddy and a Flux replica of one shard take turns.
func LeaderElectionID(name, selector string) string {
	id := name + "-leader-election"
	if selector == "" {
		return id
	}
	sum := sha256.Sum256([]byte(selector))
	return id + "-" + hex.EncodeToString(sum[:])[:8]
}

// pprofHandlers are Go's profiling endpoints, served on the metrics address
// (not the health one, which kubelets reach): `go tool pprof
// http://<metrics-addr>/debug/pprof/heap`.
func pprofHandlers() map[string]http.Handler {
	return map[string]http.Handler{
		"/debug/pprof/":        http.HandlerFunc(pprof.Index),
		"/debug/pprof/cmdline": http.HandlerFunc(pprof.Cmdline),
		"/debug/pprof/profile": http.HandlerFunc(pprof.Profile),
		"/debug/pprof/symbol":  http.HandlerFunc(pprof.Symbol),
		"/debug/pprof/trace":   http.HandlerFunc(pprof.Trace),
	}
}

// NewScheme returns a scheme with the Kubernetes built-in kinds and the
// groups that addToScheme register.
func NewScheme(addToScheme ...func(*runtime.Scheme) error) (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	for _, add := range append([]func(*runtime.Scheme) error{clientgoscheme.AddToScheme}, addToScheme...) {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	return scheme, nil
}

// clientOptions are the manager client's options. Flux compatible: Secrets
// and ConfigMaps are read from the API server, not cached, so no controller
// holds every Secret of the cluster in memory, unless the feature gate
// CacheSecretsAndConfigMaps is on.
func (o *Options) clientOptions() client.Options {
	if o.FeatureGates.Enabled(CacheSecretsAndConfigMaps) {
		return client.Options{}
	}
	return client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}, &corev1.ConfigMap{}}}}
}

// Run starts the manager and blocks until SIGINT or SIGTERM; it returns the
// manager's error, if any.
func Run(mgr ctrl.Manager, name string) error {
	log := ctrl.Log.WithName(name)
	log.Info("starting manager")
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		log.Error(err, "manager stopped")
		return err
	}
	return nil
}

// lockInterface is lock as the manager's option: nil stays a nil interface.
func lockInterface(lock *leaseLock) resourcelock.Interface {
	if lock == nil {
		return nil
	}
	return lock
}

// Jitter varies d by a random amount of up to ± percent, so objects created
// together do not reconcile in lockstep (--interval-jitter-percentage).
func Jitter(d time.Duration, percent float64) time.Duration {
	if percent <= 0 {
		return d
	}
	return time.Duration(float64(d) * (1 + (rand.Float64()*2-1)*percent/100))
}
