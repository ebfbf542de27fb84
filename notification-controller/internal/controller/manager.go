package controller

import (
	"context"
	"flag"
	"net/http"
	"os"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	notificationv1beta3 "github.com/eddyops/eddy/api/notification/v1beta3"
	"github.com/eddyops/eddy/notification-controller/internal/server"
	"github.com/eddyops/eddy/pkg/controllerkit"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
)

// ControllerName is the controller's name: its event source and
// leader-election lease prefix.
const ControllerName = "notification-controller"

// Config is notification-controller's command line: the shared runtime
// flags and its own, with Flux's names and defaults (contract §9). main and
// the tests build the manager from it with NewManager.
type Config struct {
	controllerkit.Options
	EventsAddr        string
	ReceiverAddr      string
	RateLimitInterval time.Duration

	// RESTConfig is not a flag: nil means --kubeconfig, $KUBECONFIG or the
	// in-cluster account.
	RESTConfig *rest.Config
}

// BindFlags registers the flags on fs; --receiver-addr is accepted as an
// alias of Flux's --receiverAddr.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	c.Options.BindFlags(fs, 4)
	fs.StringVar(&c.EventsAddr, "events-addr", ":9090", "The address the event server binds to.")
	fs.StringVar(&c.ReceiverAddr, "receiverAddr", ":9292", "The address the webhook receiver server binds to.")
	fs.StringVar(&c.ReceiverAddr, "receiver-addr", ":9292", "Alias of --receiverAddr.")
	fs.DurationVar(&c.RateLimitInterval, "rate-limit-interval", 5*time.Minute, "Interval within which a repeat of the same event is dropped (answered 429); 0 disables.")
	// Flux's notification-controller main.go (Flux v2.10).
	c.IgnoreFlag(fs, controllerkit.BoolFlag, "export-http-path-metrics", "false",
		"Eddy's event and receiver servers export no per-request HTTP metrics", nil)
	c.IgnoreFlag(fs, controllerkit.StringFlag, "default-service-account", "", controllerkit.NoWorkloadIdentity, nil)
	c.FluxGate("DisableConfigWatchers", false, false, false, controllerkit.WhyNoConfigWatchers)
}

// NewScheme returns notification-controller's scheme: the Kubernetes
// built-in kinds and notification.toolkit.fluxcd.io v1 and v1beta3. The
// objects Receivers and Alerts refer to are handled as unstructured.
func NewScheme() (*k8sruntime.Scheme, error) {
	return controllerkit.NewScheme(notificationv1.AddToScheme, notificationv1beta3.AddToScheme)
}

// NewManager builds notification-controller's manager from c: NewScheme,
// the runtime flags, the Receiver, Alert and Provider reconcilers, and the
// event and receiver servers on every replica (Flux: leader or not). An
// empty address leaves that server out. It returns the event server too.
// The caller starts the manager (runtime.Run in the binary).
func NewManager(c Config) (ctrl.Manager, *server.EventServer, error) {
	scheme, err := NewScheme()
	if err != nil {
		return nil, nil, err
	}
	mgr, err := c.Options.NewManager(ControllerName, c.RESTConfig, scheme,
		&notificationv1.Receiver{}, &notificationv1.Alert{}, &notificationv1.Provider{})
	if err != nil {
		return nil, nil, err
	}
	rec := mgr.GetEventRecorderFor(ControllerName)
	rr := &ReceiverReconciler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), JitterPercent: c.IntervalJitter, Recorder: rec}
	if !c.WatchAllNamespaces {
		rr.SecretsNamespace = os.Getenv("RUNTIME_NAMESPACE") // as the manager's cache
	}
	if err := rr.SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, nil, err
	}
	if err := (&AlertReconciler{Client: mgr.GetClient(), Recorder: rec}).SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, nil, err
	}
	if err := (&ProviderReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr, c.ControllerOptions()); err != nil {
		return nil, nil, err
	}
	events := server.NewEventServer(mgr.GetClient(), mgr.GetAPIReader(), rec, c.RateLimitInterval, ctrl.Log.WithName("event-server"))
	events.NoCrossNamespaceRefs = c.NoCrossNamespaceRefs
	receivers := &server.ReceiverServer{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(),
		NoCrossNamespaceRefs: c.NoCrossNamespaceRefs, Log: ctrl.Log.WithName("receiver-server")}
	for _, s := range []serverRunnable{{c.EventsAddr, events.ServeHTTP}, {c.ReceiverAddr, receivers.ServeHTTP}} {
		if s.addr == "" {
			continue
		}
		if err := mgr.Add(s); err != nil {
			return nil, nil, err
		}
	}
	return mgr, events, nil
}

// serverRunnable is an HTTP server run by the manager on every replica.
type serverRunnable struct {
	addr    string
	handler http.HandlerFunc
}

func (s serverRunnable) Start(ctx context.Context) error { return server.Serve(ctx, s.addr, s.handler) }

// NeedLeaderElection is false: events and webhooks are served by all replicas.
func (s serverRunnable) NeedLeaderElection() bool { return false }

// Manager is NewManager for controllerkit.Main, which needs only the manager.
func (c *Config) Manager() (ctrl.Manager, error) {
	mgr, _, err := NewManager(*c)
	return mgr, err
}
