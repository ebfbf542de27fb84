package controller

import (
	"flag"
	"net/http"
	"os"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/ssa"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// ControllerName is the controller's name: its event source, field manager
// and leader-election lease prefix.
const ControllerName = "kustomize-controller"

// Config is kustomize-controller's command line: the shared runtime flags and
// its own, with Flux's names and defaults (contract §9). main and the tests
// build the manager from it with NewManager.
type Config struct {
	controllerkit.Options
	EventsAddr            string
	RequeueDependency     time.Duration
	DefaultServiceAccount string
	HTTPRetry             int
	ArtifactCacheMiB      int64
	// UnchangedRecheck is --unchanged-recheck-interval.
	UnchangedRecheck time.Duration
	ConcurrentSSA    int
	KubeConfig       KubeConfigOptions
	// SOPSHelper is --sops-helper: the path of eddy-sops, which decrypts
	// for Kustomizations with spec.decryption; empty: decryptor.FindHelper.
	SOPSHelper string

	// Not flags; zero in the binary. RESTConfig nil means --kubeconfig,
	// $KUBECONFIG or the in-cluster account; the tests shorten the waits.
	RESTConfig    *rest.Config
	HealthPoll    time.Duration
	HTTPRetryWait time.Duration
}

// BindFlags registers the flags on fs.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	c.Options.BindFlags(fs, 4, controllerkit.StrictPostBuildSubstitutions, controllerkit.CancelHealthCheckOnNewRevision, controllerkit.DisableCommitStatusEvent,
		controllerkit.AdditiveCELDependencyCheck, controllerkit.ExternalArtifact)
	fs.StringVar(&c.EventsAddr, "events-addr", "", "The URL of the notification-controller's event endpoint; events are POSTed there when set.")
	fs.DurationVar(&c.RequeueDependency, "requeue-dependency", 30*time.Second, "The wait before retrying a Kustomization whose source or dependencies are not ready.")
	fs.StringVar(&c.DefaultServiceAccount, "default-service-account", "", "The service account impersonated when a Kustomization names none.")
	fs.IntVar(&c.HTTPRetry, "http-retry", 9, "The number of retries of an artifact download.")
	fs.IntVar(&c.ConcurrentSSA, "concurrent-ssa", 4, "The number of server-side apply dry-runs in flight per reconcile.")
	// Flux compatible names and defaults (fluxcd/pkg/runtime/client KubeConfigOptions).
	fs.BoolVar(&c.KubeConfig.InsecureExec, "insecure-kubeconfig-exec", false,
		"Allow use of the user.exec section in kubeconfigs provided for remote apply.")
	fs.BoolVar(&c.KubeConfig.InsecureTLS, "insecure-kubeconfig-tls", false,
		"Allow that kubeconfigs provided for remote apply can disable TLS verification.")
	fs.DurationVar(&c.UnchangedRecheck, "unchanged-recheck-interval", ssa.DefaultUnchangedMemoTTL,
		"How long an applied object found unchanged by a server-side dry-run is not dry-run again while neither it nor its source changes (beyond Flux; 0: dry-run every object at every reconcile, as Flux).")
	fs.Int64Var(&c.ArtifactCacheMiB, "artifact-cache-mib", DefaultArtifactCacheBytes>>20,
		"The most file content, in MiB, of the source artifacts kept in memory between reconciles (beyond Flux: each revision is downloaded once).")
	fs.StringVar(&c.SOPSHelper, "sops-helper", "",
		"The path of the SOPS helper eddy-sops, started for each build that decrypts (default: beside this binary, else in PATH).")
	c.bindFluxOnlyFlags(fs)
	c.bindFluxGates()
}

// bindFluxGates lets --feature-gates take the gates of Flux's
// kustomize-controller (internal/features/features.go, Flux v2.10) that
// Eddy does not implement.
func (c *Config) bindFluxGates() {
	c.FluxGate("DisableStatusPollerCache", true, false, false, "Eddy's health checks do not use Flux's status poller, nor its cache")
	c.FluxGate("DisableFailFastBehavior", false, true, true, "Eddy does not implement it")
	c.FluxGate("GroupChangeLog", false, true, false, "Eddy does not group the object names of its change log lines")
	c.FluxGate("DisableConfigWatchers", false, false, false, controllerkit.WhyNoConfigWatchers)
	c.FluxGate("DirectSourceFetch", false, true, false, controllerkit.WhyNoDirectSourceFetch)
	c.FluxGate("MigrateAPIVersion", false, true, true, "Eddy does not migrate the API version of managed-fields entries")
}

// bindFluxOnlyFlags registers the flags of Flux's kustomize-controller
// (its main.go, Flux v2.10) that Eddy parses without Flux's effect.
func (c *Config) bindFluxOnlyFlags(fs *flag.FlagSet) {
	// Flux's default is false (remote bases fetched); Eddy never fetches
	// one, so true, the multi-tenancy lockdown's value, is its behaviour.
	c.IgnoreFlag(fs, controllerkit.BoolFlag, "no-remote-bases", "false",
		"Eddy never fetches remote bases: true is its behaviour, and with false a kustomization naming a remote base still fails its build, naming it",
		func(v string) bool { return v == "false" })
	c.IgnoreFlag(fs, controllerkit.StringFlag, "default-decryption-service-account", "", controllerkit.NoWorkloadIdentity, nil)
	c.IgnoreFlag(fs, controllerkit.StringFlag, "default-kubeconfig-service-account", "", controllerkit.NoWorkloadIdentity, nil)
	c.RefuseFlag(fs, controllerkit.StringFlag, "sops-age-secret", "",
		"Eddy has no controller-wide SOPS key; give each Kustomization spec.decryption.secretRef")
	c.RefuseFlag(fs, controllerkit.StringFlag, "sops-vault-configmap", "",
		"Eddy does not implement SOPS decryption through Vault ServiceAccount-token authentication")
	c.RefuseFlag(fs, controllerkit.ListFlag, "override-manager", "",
		"Eddy takes over the fields of the kubectl* and before-first-apply* field managers only, and cannot be given others yet")
	c.RefuseFlag(fs, controllerkit.StringFlag, "custom-apply-stage-kinds", "",
		"Eddy applies in Flux's fixed stages (CRDs, Namespaces and ClusterRoles; *Class kinds; the rest) and has no custom stage yet")
}

// NewScheme returns kustomize-controller's scheme: the Kubernetes built-in
// kinds, source.toolkit.fluxcd.io and kustomize.toolkit.fluxcd.io. Objects
// of other groups (CRDs included) are handled as unstructured.
func NewScheme() (*k8sruntime.Scheme, error) {
	return controllerkit.NewScheme(sourcev1.AddToScheme, kustomizev1.AddToScheme)
}

// NewManager builds kustomize-controller's manager from c: NewScheme, the
// runtime flags and the Kustomization reconciler. The caller starts it
// (runtime.Run in the binary).
func NewManager(c Config) (ctrl.Manager, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	mgr, err := c.Options.NewManager(ControllerName, c.RESTConfig, scheme, &kustomizev1.Kustomization{})
	if err != nil {
		return nil, err
	}
	r := &KustomizationReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Config:    mgr.GetConfig(),
		Fetcher: &artifact.Fetcher{
			Client: &http.Client{Timeout: 30 * time.Second}, Retries: c.HTTPRetry, RetryWait: c.HTTPRetryWait,
			HostOverride: os.Getenv("SOURCE_CONTROLLER_LOCALHOST"), // Flux compatible
			// Downloads are cut at the in-memory limit of an artifact.
			Limits: artifact.Limits{MaxBytes: MaxArtifactBytes, MaxFiles: artifact.DefaultLimits.MaxFiles},
			Keys:   artifact.NewSecretKeyring(mgr.GetAPIReader(), mgr.GetClient()),
		},
		Events: events.NewRecorder(mgr.GetEventRecorderFor(ControllerName), mgr.GetScheme(), c.EventsAddr, ControllerName,
			ctrl.Log.WithName("events")).WithActions(eventActions),
		NoCrossNamespaceRefs:  c.NoCrossNamespaceRefs,
		DefaultServiceAccount: c.DefaultServiceAccount,
		RequeueDependency:     c.RequeueDependency,
		HealthPoll:            c.HealthPoll,
		JitterPercent:         c.IntervalJitter,
		ArtifactCacheBytes:    c.ArtifactCacheMiB << 20,
		ConcurrentSSA:         c.ConcurrentSSA,
		KubeConfig:            c.KubeConfig,
		UnchangedRecheck:      c.UnchangedRecheck,
		SOPSHelper:            c.SOPSHelper,
	}
	r.NonStrictSubstitutions = !c.FeatureGates.Enabled(controllerkit.StrictPostBuildSubstitutions)
	r.KeepHealthCheckOnNewRevision = !c.FeatureGates.Enabled(controllerkit.CancelHealthCheckOnNewRevision)
	r.DisableCommitStatusEvent = c.FeatureGates.Enabled(controllerkit.DisableCommitStatusEvent)
	r.AdditiveCELDependencyCheck = c.FeatureGates.Enabled(controllerkit.AdditiveCELDependencyCheck)
	r.AllowExternalArtifact = c.FeatureGates.Enabled(controllerkit.ExternalArtifact)
	if err := r.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Manager is NewManager for controllerkit.Main.
func (c *Config) Manager() (ctrl.Manager, error) { return NewManager(*c) }
