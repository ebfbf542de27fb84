// Package controller holds source-watcher's ArtifactGenerator reconciler
// and the manager that runs it with the artifact storage and file server.
package controller

import (
	"context"
	"flag"
	"net/http"
	"os"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	swv1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// ControllerName is the controller's name: its event source, field
// manager and leader-election lease prefix.
const ControllerName = "source-watcher"

// Config is source-watcher's command line: the shared runtime flags and
// its own, with the names and defaults of Flux's source-watcher (its
// cmd/main.go and fluxcd/pkg/artifact/config). main and the tests build
// the manager from it with NewManager.
type Config struct {
	controllerkit.Options
	EventsAddr               string
	StoragePath              string
	StorageAddr              string
	StorageAdvAddr           string
	ArtifactRetentionTTL     time.Duration
	ArtifactRetentionRecords int
	RequeueDependency        time.Duration
	HTTPRetry                int

	// RESTConfig is not a flag: nil means --kubeconfig, $KUBECONFIG or the
	// in-cluster account.
	RESTConfig *rest.Config
}

// BindFlags registers the flags on fs; STORAGE_PATH, STORAGE_ADDR and
// STORAGE_ADV_ADDR give the storage flags' defaults, as source-controller's.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	c.Options.BindFlags(fs, 10)
	fs.StringVar(&c.EventsAddr, "events-addr", "", "The URL of the notification-controller's event endpoint; events are POSTed there when set.")
	fs.StringVar(&c.StoragePath, "storage-path", envOr("STORAGE_PATH", "/data"), "The local directory where generated artifacts are stored.")
	fs.StringVar(&c.StorageAddr, "storage-addr", envOr("STORAGE_ADDR", ":9090"), "The address the artifact file server binds to.")
	fs.StringVar(&c.StorageAdvAddr, "storage-adv-addr", envOr("STORAGE_ADV_ADDR", ""), "The advertised address of the file server, used in artifact URLs; default derived from --storage-addr.")
	fs.DurationVar(&c.ArtifactRetentionTTL, "artifact-retention-ttl", 60*time.Second, "How long superseded artifacts are kept.")
	fs.IntVar(&c.ArtifactRetentionRecords, "artifact-retention-records", 2, "How many artifacts are kept per ExternalArtifact, the current one included.")
	fs.DurationVar(&c.RequeueDependency, "requeue-dependency", 5*time.Second, "The wait before retrying an ArtifactGenerator whose sources are missing or not ready.")
	fs.IntVar(&c.HTTPRetry, "http-retry", 9, "The number of retries of a source artifact download.")
	c.IgnoreFlag(fs, controllerkit.StringFlag, "artifact-digest-algo", "sha256",
		"Eddy digests artifacts with sha256 whatever the value", func(v string) bool { return v != "sha256" })
	c.IgnoreFlag(fs, controllerkit.DurationFlag, "reconciliation-timeout", "10m0s",
		"an ArtifactGenerator's reconcile is bounded by its downloads' timeouts and the artifact size limits", nil)
}

// NewScheme returns source-watcher's scheme: the Kubernetes built-in
// kinds, source.toolkit.fluxcd.io (the sources it reads and the
// ExternalArtifacts it writes) and source.extensions.fluxcd.io.
func NewScheme() (*k8sruntime.Scheme, error) {
	return controllerkit.NewScheme(sourcev1.AddToScheme, swv1.AddToScheme)
}

// NewManager builds source-watcher's manager from c: NewScheme, the runtime
// flags, the artifact storage and its file server (served by the leader,
// as source-controller's), and the ArtifactGenerator reconciler. It returns
// the storage too. The caller starts the manager.
func NewManager(c Config) (ctrl.Manager, *artifact.Storage, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, nil, err
	}
	mgr, err := c.Options.NewManager(ControllerName, c.RESTConfig, scheme, &swv1.ArtifactGenerator{})
	if err != nil {
		return nil, nil, err
	}
	adv := c.StorageAdvAddr
	if adv == "" {
		adv = artifact.AdvertisedAddr(c.StorageAddr)
	}
	storage, err := artifact.NewStorage(c.StoragePath, adv, c.ArtifactRetentionTTL, c.ArtifactRetentionRecords)
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Addr: c.StorageAddr, Handler: artifact.HideDotPaths(storage.Handler()),
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 90 * time.Second}
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error { return controllerkit.Serve(ctx, srv) })); err != nil {
		return nil, nil, err
	}
	r := &ArtifactGeneratorReconciler{
		Client:  mgr.GetClient(),
		Storage: storage,
		Fetcher: &artifact.Fetcher{
			Client: &http.Client{Timeout: 30 * time.Second}, Retries: c.HTTPRetry,
			HostOverride: os.Getenv("SOURCE_CONTROLLER_LOCALHOST"), // Flux compatible
			// Sources are signed by source-controller; the key is read, or
			// created when missing, as the other consumers do.
			Keys: artifact.NewSecretKeyring(mgr.GetAPIReader(), mgr.GetClient()),
		},
		Events: events.NewRecorder(mgr.GetEventRecorderFor(ControllerName), mgr.GetScheme(), c.EventsAddr, ControllerName,
			ctrl.Log.WithName("events")),
		NoCrossNamespaceRefs: c.NoCrossNamespaceRefs,
		RequeueDependency:    c.RequeueDependency,
		JitterPercent:        c.IntervalJitter,
		WorkDir:              storage.BasePath,
	}
	if err := r.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, nil, err
	}
	return mgr, storage, nil
}

// Manager is NewManager for controllerkit.Main.
func (c *Config) Manager() (ctrl.Manager, error) {
	mgr, _, err := NewManager(*c)
	return mgr, err
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
