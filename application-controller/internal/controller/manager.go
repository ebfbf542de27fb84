// Package controller is application-controller's manager and reconcilers:
// the Application reconciler (compare, auto-sync, operations, status) and
// the AppProject bootstrap. NewManager is what the binary and the tests
// run.
package controller

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/application-controller/internal/cluster"
	"github.com/eddyops/eddy/application-controller/internal/source"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/ssa"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// ControllerName is the controller's name: its event source and
// leader-election lease prefix.
const ControllerName = "application-controller"

// FieldManager is the field manager of applied objects: Argo CD's, so that
// ignoreDifferences.managedFieldsManagers and a cluster moving between
// Argo CD and Eddy see one owner.
const FieldManager = "argocd-controller"

// Config is application-controller's command line: the shared runtime
// flags and Argo CD's own, with Argo CD's names and defaults
// (argocd-contract §3.3). main and the tests build the manager from it
// with NewManager.
type Config struct {
	controllerkit.Options
	EventsAddr string
	// Namespace is the controller's namespace (Argo CD's `argocd`):
	// Applications there have plain instance names, and it holds the
	// default AppProject and the source objects.
	Namespace string
	// ApplicationNamespaces are the other namespaces whose Applications
	// are reconciled (--application-namespaces; globs as Argo CD).
	ApplicationNamespaces []string
	// AppResync is the period of a full comparison (Argo CD's
	// timeout.reconciliation, 120s) and AppResyncJitter its jitter (60s).
	AppResync, AppResyncJitter time.Duration
	// SelfHeal* are Argo CD's self-heal back-off: the first self-heal
	// after a full sync waits SelfHealTimeout, the next ones
	// SelfHealBackoff × SelfHealFactor^n, at most SelfHealCap.
	SelfHealTimeout, SelfHealBackoff, SelfHealCap time.Duration
	SelfHealFactor                                int
	// SyncWaveDelay is the pause between waves (ARGOCD_SYNC_WAVE_DELAY, 2s).
	SyncWaveDelay time.Duration
	// RenderTimeout bounds one source's rendering (Argo CD's
	// --repo-server-timeout-seconds, 60s, which bounds the repo-server's
	// manifest generation).
	RenderTimeout time.Duration

	// Not flags; zero in the binary. RESTConfig nil means --kubeconfig,
	// $KUBECONFIG or the in-cluster account.
	RESTConfig *rest.Config
}

// BindFlags registers the flags on fs.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	c.Options.BindFlags(fs, 10)
	fs.StringVar(&c.EventsAddr, "events-addr", "", "The URL of the notification-controller's event endpoint; events are POSTed there when set.")
	ns := os.Getenv("RUNTIME_NAMESPACE")
	if ns == "" {
		ns = "argocd"
	}
	fs.StringVar(&c.Namespace, "namespace", ns, "The controller's namespace, where Applications are reconciled by default and source objects are kept (default $RUNTIME_NAMESPACE, else argocd).")
	fs.Func("application-namespaces", "Other namespaces whose Applications are reconciled, comma separated (globs allowed), as Argo CD's flag.", func(s string) error {
		for _, n := range strings.Split(s, ",") {
			if n = strings.TrimSpace(n); n != "" {
				c.ApplicationNamespaces = append(c.ApplicationNamespaces, n)
			}
		}
		return nil
	})
	seconds := func(d *time.Duration, name string, def int, usage string) {
		*d = time.Duration(def) * time.Second
		fs.Func(name, usage+" (seconds, default "+strconv.Itoa(def)+")", func(s string) error {
			v, err := time.ParseDuration(s + "s")
			*d = v
			return err
		})
	}
	seconds(&c.AppResync, "app-resync", 120, "The period of a full comparison of each Application with its source; 0 turns it off.")
	seconds(&c.AppResyncJitter, "app-resync-jitter", 60, "The most random time added to --app-resync.")
	seconds(&c.SelfHealTimeout, "self-heal-timeout-seconds", 0, "The wait before the first self-heal after a full sync.")
	seconds(&c.SelfHealBackoff, "self-heal-backoff-timeout-seconds", 2, "The wait before the second self-heal.")
	seconds(&c.SelfHealCap, "self-heal-backoff-cap-seconds", 300, "The longest wait between self-heals.")
	fs.IntVar(&c.SelfHealFactor, "self-heal-backoff-factor", 3, "The factor each further self-heal's wait grows by.")
	seconds(&c.RenderTimeout, "repo-server-timeout-seconds", 60, "The longest rendering of one source (Helm, kustomize, jsonnet, plain files).")
	c.SyncWaveDelay = 2 * time.Second
	if v, err := time.ParseDuration(os.Getenv("ARGOCD_SYNC_WAVE_DELAY") + "s"); err == nil && os.Getenv("ARGOCD_SYNC_WAVE_DELAY") != "" {
		c.SyncWaveDelay = v
	}
}

// NewScheme returns application-controller's scheme: the Kubernetes
// built-in kinds, source.toolkit.fluxcd.io and argoproj.io. Objects of
// other groups are handled as unstructured.
func NewScheme() (*k8sruntime.Scheme, error) {
	return controllerkit.NewScheme(sourcev1.AddToScheme, argov1.AddToScheme)
}

// NewManager builds application-controller's manager from c. The caller
// starts it (controllerkit.Main in the binary).
func NewManager(c Config) (ctrl.Manager, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	if !c.WatchAllNamespaces {
		// The cache would hold RUNTIME_NAMESPACE only: no Application of
		// --namespace, nor the objects they render, would be seen.
		return nil, errors.New("--watch-all-namespaces=false is not supported: Applications are read in --namespace and --application-namespaces, and the objects they render are watched in every namespace")
	}
	mgr, err := c.Options.NewManager(ControllerName, c.RESTConfig, scheme, &argov1.Application{})
	if err != nil {
		return nil, err
	}
	cacheDir, err := os.MkdirTemp("", "application-controller-")
	if err != nil {
		return nil, err
	}
	r := &ApplicationReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper(),
		Sources: &source.Manager{
			Client: mgr.GetClient(), Namespace: c.Namespace, CacheDir: cacheDir, Interval: 3 * time.Minute,
			Fetcher: &artifact.Fetcher{
				Client:       &http.Client{Timeout: 30 * time.Second},
				Retries:      9,
				HostOverride: os.Getenv("SOURCE_CONTROLLER_LOCALHOST"), // Flux compatible
				Keys:         artifact.NewSecretKeyring(mgr.GetAPIReader(), mgr.GetClient()),
			},
		},
		SSA: &ssa.Manager{Client: mgr.GetClient(), Owner: FieldManager, StageTimeout: time.Minute, Poll: time.Second, KeepManagers: true},
		Events: events.NewRecorder(mgr.GetEventRecorderFor(ControllerName), mgr.GetScheme(), c.EventsAddr, ControllerName,
			ctrl.Log.WithName("events")),
		Log:       ctrl.Log.WithName(ControllerName),
		Namespace: c.Namespace, AppNamespaces: c.ApplicationNamespaces,
		Resync: c.AppResync, ResyncJitter: c.AppResyncJitter,
		SelfHeal:  SelfHealBackoff{Timeout: c.SelfHealTimeout, Backoff: c.SelfHealBackoff, Cap: c.SelfHealCap, Factor: c.SelfHealFactor},
		WaveDelay: c.SyncWaveDelay, RenderTimeout: c.RenderTimeout,
	}
	// Helm's capabilities of the controller's cluster; Helm's defaults
	// when discovery fails.
	r.KubeVersion, r.APIVersions, _ = cluster.Discover(context.Background(), mgr.GetConfig())
	r.Clusters = &cluster.Registry{Client: mgr.GetClient(), Namespace: c.Namespace, Scheme: mgr.GetScheme(),
		Local: &cluster.Target{Server: argov1.InClusterServer, Name: argov1.InClusterName, Client: r.Client,
			Reader: r.APIReader, Mapper: r.Mapper, Config: mgr.GetConfig(), KubeVersion: r.KubeVersion, APIVersions: r.APIVersions}}
	if err := r.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, err
	}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		return os.RemoveAll(cacheDir)
	})); err != nil {
		return nil, err
	}
	// The default AppProject exists from the start, as Argo CD's API
	// server creates it (argocd-contract §8.1); a runnable needs the lease.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		r.ensureDefaultProject(ctx)
		return nil
	})); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Manager is NewManager for controllerkit.Main.
func (c *Config) Manager() (ctrl.Manager, error) { return NewManager(*c) }
