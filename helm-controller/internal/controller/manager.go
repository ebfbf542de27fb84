// Package controller holds helm-controller's manager constructor and its
// HelmRelease reconciler: the prerequisites (chart source, dependencies,
// values), the Helm configuration of a release, the release state machine
// (state.go, atomic.go) and the steps that record each action's outcome in
// conditions, status.history and events (actions.go). The Helm actions
// themselves run in internal/action; names, snapshots, digests, history
// and inventory of a release are internal/release's.
package controller

import (
	"flag"
	"net/http"
	"os"
	"time"

	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/remotecluster"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// ControllerName is the controller's name: its event source, field manager
// and leader-election lease prefix.
const ControllerName = "helm-controller"

// Config is helm-controller's command line: the shared runtime flags and
// its own, with Flux's names and defaults (contract §5.6, §9). main and the
// tests build the manager from it with NewManager.
type Config struct {
	controllerkit.Options
	EventsAddr              string
	RequeueDependency       time.Duration
	HTTPRetry               int
	HTTPTimeout             time.Duration
	DefaultServiceAccount   string
	GracefulShutdownTimeout time.Duration
	KubeConfig              remotecluster.KubeConfigOptions

	// Not flags; zero in the binary. RESTConfig nil means --kubeconfig,
	// $KUBECONFIG or the in-cluster account; the tests shorten the waits.
	RESTConfig    *rest.Config
	HealthPoll    time.Duration
	HTTPRetryWait time.Duration
}

// BindFlags registers the flags on fs.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	c.Options.BindFlags(fs, 4, controllerkit.DisableChartDigestTracking, controllerkit.AdditiveCELDependencyCheck, controllerkit.ExternalArtifact)
	fs.StringVar(&c.EventsAddr, "events-addr", "", "The URL of the notification-controller's event endpoint; events are POSTed there when set.")
	fs.DurationVar(&c.RequeueDependency, "requeue-dependency", 30*time.Second, "The wait before retrying a HelmRelease whose source or dependencies are not ready.")
	fs.IntVar(&c.HTTPRetry, "http-retry", 9, "The number of retries of a chart artifact download.")
	fs.DurationVar(&c.HTTPTimeout, "http-timeout", 30*time.Second, "The timeout of a chart artifact download.")
	fs.StringVar(&c.DefaultServiceAccount, "default-service-account", "", "The service account impersonated when a HelmRelease names none.")
	fs.DurationVar(&c.GracefulShutdownTimeout, "graceful-shutdown-timeout", 600*time.Second,
		"How long running Helm actions may take to finish after a stop signal; a negative value waits without limit.")
	// Flux compatible names and defaults (fluxcd/pkg/runtime/client KubeConfigOptions).
	fs.BoolVar(&c.KubeConfig.InsecureExec, "insecure-kubeconfig-exec", false,
		"Allow use of the user.exec section in kubeconfigs provided for remote apply.")
	fs.BoolVar(&c.KubeConfig.InsecureTLS, "insecure-kubeconfig-tls", false,
		"Allow that kubeconfigs provided for remote apply can disable TLS verification.")
	c.bindFluxOnlyFlags(fs)
	c.bindFluxGates()
}

// bindFluxGates lets --feature-gates take the gates of Flux's
// helm-controller (internal/features/features.go, Flux v2.10) that Eddy
// does not implement.
func (c *Config) bindFluxGates() {
	const perObject = "deprecated by Flux and not implemented by Eddy; set spec.driftDetection.mode on each HelmRelease"
	c.FluxGate("DetectDrift", false, true, true, perObject)
	c.FluxGate("CorrectDrift", false, true, true, perObject)
	c.FluxGate("AllowDNSLookups", false, true, true, "Eddy renders Helm templates without DNS lookups")
	c.FluxGate("OOMWatch", false, true, false, "Eddy has no OOM watcher")
	c.FluxGate("AdoptLegacyReleases", false, true, false, "Flux ignores it too since helm-controller v1.5; Eddy adopts no v2beta1 release")
	c.FluxGate("UseHelm3Defaults", false, false, false, "Eddy runs the Helm 3 SDK (helm.sh/helm/v3): Helm 3's defaults are its behaviour")
	c.FluxGate("CancelHealthCheckOnNewRevision", false, false, false,
		"Eddy's helm-controller always ends a running wait for a new generation or chart revision")
	c.FluxGate("DefaultToRetryOnFailure", false, true, true,
		"Eddy's default strategy stays RemediateOnFailure; set spec.install.strategy and spec.upgrade.strategy on each HelmRelease")
	c.FluxGate("DisableConfigWatchers", false, false, false, controllerkit.WhyNoConfigWatchers)
	c.FluxGate("DirectSourceFetch", false, true, false, controllerkit.WhyNoDirectSourceFetch)
}

// bindFluxOnlyFlags registers the flags of Flux's helm-controller (its
// main.go, Flux v2.10) that Eddy parses without Flux's effect.
func (c *Config) bindFluxOnlyFlags(fs *flag.FlagSet) {
	c.IgnoreFlag(fs, controllerkit.StringFlag, "default-kubeconfig-service-account", "", controllerkit.NoWorkloadIdentity, nil)
	const noOOMWatch = "Eddy has no OOM watcher (Flux's OOMWatch feature gate)"
	c.IgnoreFlag(fs, controllerkit.IntFlag, "oom-watch-memory-threshold", "95", noOOMWatch, nil)
	c.IgnoreFlag(fs, controllerkit.DurationFlag, "oom-watch-interval", "500ms", noOOMWatch, nil)
	c.IgnoreFlag(fs, controllerkit.StringFlag, "oom-watch-max-memory-path", "", noOOMWatch, nil)
	c.IgnoreFlag(fs, controllerkit.StringFlag, "oom-watch-current-memory-path", "", noOOMWatch, nil)
	c.IgnoreFlag(fs, controllerkit.StringFlag, "snapshot-digest-algo", "sha256",
		"Eddy digests release snapshots with sha256 whatever the value", func(v string) bool { return v != "sha256" })
	c.RefuseFlag(fs, controllerkit.ListFlag, "override-manager", "",
		"Eddy's drift detection takes over the fields of the kubectl* and before-first-apply* field managers only, and cannot be given others yet")
}

// NewScheme returns helm-controller's scheme: the Kubernetes built-in kinds,
// source.toolkit.fluxcd.io and helm.toolkit.fluxcd.io.
func NewScheme() (*k8sruntime.Scheme, error) {
	return controllerkit.NewScheme(sourcev1.AddToScheme, helmv2.AddToScheme)
}

// NewManager builds helm-controller's manager from c: NewScheme, the
// runtime flags and the HelmRelease reconciler. The caller starts it
// (runtime.Run in the binary).
func NewManager(c Config) (ctrl.Manager, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	if c.GracefulShutdownTimeout != 0 {
		c.Options.GracefulShutdownTimeout = &c.GracefulShutdownTimeout
	}
	mgr, err := c.Options.NewManager(ControllerName, c.RESTConfig, scheme, &helmv2.HelmRelease{})
	if err != nil {
		return nil, err
	}
	r := &HelmReleaseReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Config:    mgr.GetConfig(),
		Fetcher: &artifact.Fetcher{
			Client: &http.Client{Timeout: c.HTTPTimeout}, Retries: c.HTTPRetry, RetryWait: c.HTTPRetryWait,
			HostOverride: os.Getenv("SOURCE_CONTROLLER_LOCALHOST"), // Flux compatible
			Keys:         artifact.NewSecretKeyring(mgr.GetAPIReader(), mgr.GetClient()),
		},
		Events: events.NewRecorder(mgr.GetEventRecorderFor(ControllerName), mgr.GetScheme(), c.EventsAddr, ControllerName,
			ctrl.Log.WithName("events")).WithActions(eventActions),
		NoCrossNamespaceRefs:       c.NoCrossNamespaceRefs,
		DefaultServiceAccount:      c.DefaultServiceAccount,
		KubeConfig:                 c.KubeConfig,
		RequeueDependency:          c.RequeueDependency,
		HealthPoll:                 c.HealthPoll,
		JitterPercent:              c.IntervalJitter,
		DisableChartDigestTracking: c.FeatureGates.Enabled(controllerkit.DisableChartDigestTracking),
		AdditiveCELDependencyCheck: c.FeatureGates.Enabled(controllerkit.AdditiveCELDependencyCheck),
		AllowExternalArtifact:      c.FeatureGates.Enabled(controllerkit.ExternalArtifact),
	}
	if err := r.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Manager is NewManager for controllerkit.Main.
func (c *Config) Manager() (ctrl.Manager, error) { return NewManager(*c) }
