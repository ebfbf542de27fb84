// Package controller holds image-reflector-controller's reconcilers and
// the manager that runs them.
package controller

import (
	"flag"
	"time"

	imagev1 "github.com/eddyops/eddy/api/image/v1"
	"github.com/eddyops/eddy/image-reflector-controller/internal/registry"
	"github.com/eddyops/eddy/image-reflector-controller/internal/storage"
	"github.com/eddyops/eddy/pkg/controllerkit"
	"github.com/eddyops/eddy/pkg/events"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// ControllerName is the controller's name: its event source and
// leader-election lease prefix.
const ControllerName = "image-reflector-controller"

// Config is image-reflector-controller's command line: the shared runtime
// flags and its own, with Flux's names and defaults. main and the tests
// build the manager from it with NewManager.
type Config struct {
	controllerkit.Options
	EventsAddr        string
	StoragePath       string
	RequeueDependency time.Duration
	// CompressionThresholdKiB is --storage-compression-threshold.
	CompressionThresholdKiB int
	// MaxTags is --max-tags (beyond Flux).
	MaxTags int

	// Not flags: RESTConfig nil means --kubeconfig, $KUBECONFIG or the
	// in-cluster account.
	RESTConfig *rest.Config
}

// BindFlags registers the flags on fs.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	c.Options.BindFlags(fs, 4)
	fs.StringVar(&c.EventsAddr, "events-addr", "", "The URL of the notification-controller's event endpoint; events are POSTed there when set.")
	fs.StringVar(&c.StoragePath, "storage-path", "/data", "The local directory where the scanned tags of each ImageRepository are stored.")
	fs.IntVar(&c.CompressionThresholdKiB, "storage-compression-threshold", 64, "Size in KiB of a repository's tag list above which its file is gzipped.")
	fs.DurationVar(&c.RequeueDependency, "requeue-dependency", 30*time.Second, "The wait before retrying an ImagePolicy whose ImageRepository is missing or not scanned.")
	fs.IntVar(&c.MaxTags, "max-tags", registry.DefaultMaxTags, "The most tags a scan of one repository keeps; a repository with more fails its scan (beyond Flux, which has no bound).")
	// Flux's image-reflector-controller main.go (Flux v2.10).
	const files = "Eddy stores tags as Flux's FluxStorage gate does (one file per ImageRepository under --storage-path, revision sha256:…), there is no BadgerDB"
	c.IgnoreFlag(fs, controllerkit.IntFlag, "storage-value-log-file-size", "268435456", files, nil)
	c.IgnoreFlag(fs, controllerkit.IntFlag, "gc-interval", "10",
		"a repository's tag file is deleted with its ImageRepository; there is no database to collect", nil)
	c.IgnoreFlag(fs, controllerkit.StringFlag, "default-service-account", "", controllerkit.NoWorkloadIdentity, nil)
	c.FluxGate("FluxStorage", false, false, false, files)
}

// NewScheme returns image-reflector-controller's scheme: the Kubernetes
// built-in kinds and image.toolkit.fluxcd.io v1.
func NewScheme() (*k8sruntime.Scheme, error) {
	return controllerkit.NewScheme(imagev1.AddToScheme)
}

// NewManager builds image-reflector-controller's manager from c: the tag
// store under --storage-path, one registry client (whose per-host 429
// back-off every repository shares), the ImageRepository and ImagePolicy
// reconcilers. The caller starts it (controllerkit.Run in the binary).
func NewManager(c Config) (ctrl.Manager, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	store, err := storage.New(c.StoragePath, c.CompressionThresholdKiB<<10)
	if err != nil {
		return nil, err
	}
	mgr, err := c.Options.NewManager(ControllerName, c.RESTConfig, scheme, &imagev1.ImageRepository{}, &imagev1.ImagePolicy{})
	if err != nil {
		return nil, err
	}
	reg := registry.NewClient()
	reg.MaxTags = c.MaxTags
	reg.UserAgent = ControllerName + "/" + controllerkit.Version
	rec := events.NewRecorder(mgr.GetEventRecorderFor(ControllerName), mgr.GetScheme(), c.EventsAddr, ControllerName,
		ctrl.Log.WithName("events")).WithActions(events.Actions{Default: "Reconcile"})
	repos := &ImageRepositoryReconciler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Registry: reg, Store: store, Events: rec}
	if err := repos.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, err
	}
	policies := &ImagePolicyReconciler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), Registry: reg, Store: store,
		Events: rec, NoCrossNamespaceRefs: c.NoCrossNamespaceRefs, RequeueDependency: c.RequeueDependency}
	if err := policies.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, err
	}
	return mgr, nil
}

// Manager is NewManager for controllerkit.Main.
func (c *Config) Manager() (ctrl.Manager, error) { return NewManager(*c) }
