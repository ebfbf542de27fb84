package controller

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/source-controller/internal/helm/chart"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// ControllerName is the controller's name: its event source and
// leader-election lease prefix.
const ControllerName = "source-controller"

// Config is source-controller's command line: the shared runtime flags and
// its own, with Flux's names and defaults (contract §9). main and the tests
// build the manager from it with NewManager.
type Config struct {
	controllerkit.Options
	EventsAddr               string
	StoragePath              string
	StorageAddr              string
	StorageAdvAddr           string
	ArtifactRetentionTTL     time.Duration
	ArtifactRetentionRecords int
	HelmIndexMaxSize         int64
	HelmChartMaxSize         int64
	HelmChartFileMaxSize     int64
	// StorageMaxBytes bounds the artifact storage (artifact.Storage.MaxBytes);
	// 0 for no bound. Eddy's own flag: Flux bounds each object's artifacts
	// only (the retention flags).
	StorageMaxBytes int64

	// RESTConfig is not a flag: nil means --kubeconfig, $KUBECONFIG or the
	// in-cluster account.
	RESTConfig *rest.Config
	// OCILimits is not a flag (Flux has none): it bounds an OCIRepository's
	// pulled layer; zero fields mean artifact.DefaultLimits.
	OCILimits artifact.Limits
}

// BindFlags registers the flags on fs; STORAGE_PATH, STORAGE_ADDR and
// STORAGE_ADV_ADDR give the storage flags' defaults (Flux compatible).
func (c *Config) BindFlags(fs *flag.FlagSet) {
	c.Options.BindFlags(fs, 2)
	fs.StringVar(&c.EventsAddr, "events-addr", "", "The URL of the notification-controller's event endpoint; events are POSTed there when set.")
	fs.StringVar(&c.StoragePath, "storage-path", envOr("STORAGE_PATH", "/data"), "The local directory where artifacts are stored.")
	fs.StringVar(&c.StorageAddr, "storage-addr", envOr("STORAGE_ADDR", ":9090"), "The address the artifact file server binds to.")
	fs.StringVar(&c.StorageAdvAddr, "storage-adv-addr", envOr("STORAGE_ADV_ADDR", ""), "The advertised address of the file server, used in artifact URLs; default derived from --storage-addr.")
	fs.DurationVar(&c.ArtifactRetentionTTL, "artifact-retention-ttl", 60*time.Second, "How long superseded artifacts are kept.")
	fs.IntVar(&c.ArtifactRetentionRecords, "artifact-retention-records", 2, "How many artifacts are kept per object, the current one included.")
	fs.Int64Var(&c.StorageMaxBytes, "storage-max-bytes", 0, "The most bytes the artifact storage holds; an artifact that would exceed it is not kept and its object is not Ready. 0: no bound beyond the retention flags.")
	fs.Int64Var(&c.HelmIndexMaxSize, "helm-index-max-size", DefaultHelmIndexMaxSize, "The max allowed size in bytes of a Helm repository index file.")
	fs.Int64Var(&c.HelmChartMaxSize, "helm-chart-max-size", chart.DefaultLimits.MaxChartSize, "The max allowed size in bytes of a Helm chart file.")
	fs.Int64Var(&c.HelmChartFileMaxSize, "helm-chart-file-max-size", chart.DefaultLimits.MaxFileSize, "The max allowed size in bytes of a file in a Helm chart.")
	c.bindFluxOnlyFlags(fs)
}

// bindFluxOnlyFlags registers the flags of Flux's source-controller (its
// main.go and fluxcd/pkg/artifact/config, Flux v2.10) that Eddy parses
// without Flux's effect.
func (c *Config) bindFluxOnlyFlags(fs *flag.FlagSet) {
	c.IgnoreFlag(fs, controllerkit.StringFlag, "artifact-digest-algo", "sha256",
		"Eddy digests artifacts with sha256 whatever the value", func(v string) bool { return v != "sha256" })
	c.IgnoreFlag(fs, controllerkit.StringFlag, "default-service-account", "", controllerkit.NoWorkloadIdentity, nil)
	const noIndexCache = "Eddy keeps no in-memory cache of Helm repository indexes; a HelmChart reads its HelmRepository's stored index artifact"
	c.IgnoreFlag(fs, controllerkit.IntFlag, "helm-cache-max-size", "0", noIndexCache, nil)
	c.IgnoreFlag(fs, controllerkit.DurationFlag, "helm-cache-ttl", "15m", noIndexCache, nil)
	c.IgnoreFlag(fs, controllerkit.DurationFlag, "helm-cache-purge-interval", "1m", noIndexCache, nil)
	c.IgnoreFlag(fs, controllerkit.DurationFlag, "requeue-dependency", "30s",
		"Eddy's source-controller has no fixed dependency wait; a HelmChart is reconciled again when its source's artifact changes", nil)
	const sshDefaults = "Eddy's SSH client offers the Go SSH library's default algorithms"
	c.IgnoreFlag(fs, controllerkit.ListFlag, "ssh-kex-algos", "", sshDefaults, nil)
	c.IgnoreFlag(fs, controllerkit.ListFlag, "ssh-hostkey-algos", "", sshDefaults, nil)
}

// NewScheme returns source-controller's scheme: the Kubernetes built-in
// kinds and source.toolkit.fluxcd.io.
func NewScheme() (*k8sruntime.Scheme, error) {
	return controllerkit.NewScheme(sourcev1.AddToScheme)
}

// NewManager builds source-controller's manager from c: NewScheme, the
// runtime flags, the artifact storage and its file server, and the
// GitRepository, HelmRepository, HelmChart, OCIRepository and Bucket reconcilers. It returns the
// storage too. The caller starts the manager (runtime.Run in the binary).
func NewManager(c Config) (ctrl.Manager, *artifact.Storage, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, nil, err
	}
	mgr, err := c.Options.NewManager(ControllerName, c.RESTConfig, scheme, &sourcev1.GitRepository{}, &sourcev1.HelmRepository{}, &sourcev1.HelmChart{}, &sourcev1.OCIRepository{},
		&sourcev1.Bucket{})
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
	storage.MaxBytes = c.StorageMaxBytes
	// Like Flux, only the leader serves artifacts: a manager runnable that
	// needs leader election.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return controllerkit.Serve(ctx, artifactServer(c.StorageAddr, storage.Handler()))
	})); err != nil {
		return nil, nil, err
	}
	// The key is read or made now, so consumers find it early. Without
	// the right to create it (Flux's own RBAC grants source-controller no
	// Secret writes) a consumer creates it, and reconciles wait for it.
	signer := &Signer{Keys: artifact.NewSecretKeyring(mgr.GetAPIReader(), mgr.GetClient())}
	if err := signer.ready(context.Background()); err != nil {
		ctrl.Log.WithName("setup").Error(err, "artifacts are not published until the signing key can be read")
	}
	rec := events.NewRecorder(mgr.GetEventRecorderFor(ControllerName), mgr.GetScheme(), c.EventsAddr, ControllerName,
		ctrl.Log.WithName("events")).WithActions(eventActions)
	r := &GitRepositoryReconciler{
		Client: mgr.GetClient(), Storage: storage, Signer: signer, Events: rec, JitterPercent: c.IntervalJitter,
	}
	if err := r.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, nil, err
	}
	hr := &HelmRepositoryReconciler{
		Client: mgr.GetClient(), Storage: storage, Signer: signer, Events: rec, JitterPercent: c.IntervalJitter,
		IndexMaxSize: c.HelmIndexMaxSize,
	}
	if err := hr.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, nil, err
	}
	hc := &HelmChartReconciler{
		Client: mgr.GetClient(), Storage: storage, Signer: signer, Events: rec, JitterPercent: c.IntervalJitter,
		Limits: chart.Limits{MaxChartSize: c.HelmChartMaxSize, MaxFileSize: c.HelmChartFileMaxSize},
	}
	if err := hc.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, nil, err
	}
	oc := &OCIRepositoryReconciler{
		Client: mgr.GetClient(), Storage: storage, Signer: signer, Events: rec, JitterPercent: c.IntervalJitter, Limits: c.OCILimits,
	}
	if err := oc.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, nil, err
	}
	bc := &BucketReconciler{
		Client: mgr.GetClient(), Storage: storage, Signer: signer, Events: rec, JitterPercent: c.IntervalJitter,
	}
	if err := bc.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, nil, err
	}
	return mgr, storage, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// Manager is NewManager for controllerkit.Main, which needs only the
// manager, in the process the binary is: it first readies the storage
// (PrepareWorkDir: a crash's leftovers removed) and points TMPDIR at its
// work directory, and adds the removal of deleted objects' artifacts
// (orphanCollector) to the manager.
func (c *Config) Manager() (ctrl.Manager, error) {
	started := time.Now()
	storagePath, err := filepath.Abs(c.StoragePath)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(storagePath, 0o755); err != nil {
		return nil, fmt.Errorf("creating storage directory: %w", err)
	}
	work, removed, err := PrepareWorkDir(storagePath)
	if err != nil {
		return nil, fmt.Errorf("preparing the work directory: %w", err)
	}
	log := ctrl.Log.WithName("storage")
	if len(removed) > 0 {
		log.Info("removed what an interrupted run left in the storage", "paths", removed)
	}
	// Every temporary directory of the process, the libraries' included.
	if err := os.Setenv("TMPDIR", work); err != nil {
		return nil, err
	}
	mgr, _, err := NewManager(*c)
	if err != nil {
		return nil, err
	}
	orphans := &orphanCollector{reader: mgr.GetAPIReader(), storage: storagePath, started: started, log: log}
	if err := mgr.Add(orphans); err != nil {
		return nil, err
	}
	return mgr, nil
}

// artifactServer is the artifact HTTP server on addr. As Flux's since
// source-controller v1.10.1, it bounds reading a request's header (which
// also bounds a TLS handshake) and how long an idle keep-alive connection
// stays open (90 s, http.DefaultTransport's keep-alive), and nothing else:
// no read or write timeout of the whole request, so a slow client can still
// download a large artifact. Paths with a dot-segment are not served
// (hideDotPaths).
func artifactServer(addr string, h http.Handler) *http.Server {
	return &http.Server{Addr: addr, Handler: hideDotPaths(h), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 90 * time.Second}
}
