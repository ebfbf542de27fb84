// Command notification-controller is Eddy's notification-controller: it
// routes the events other controllers POST to Alerts' Providers (Slack,
// Teams, Discord, generic webhooks, GitHub/GitLab commit statuses) and turns
// verified webhooks (Receivers) into reconcile requests.
//
// It takes Flux's flag names and defaults (contract §9), so Flux's
// deployment manifests carry over; --kubeconfig or KUBECONFIG selects the
// cluster outside one. Its own flags:
//
//	--events-addr=:9090          event server; other controllers' --events-addr is http://<this>/
//	--receiverAddr=:9292         webhook receivers (alias --receiver-addr); a Receiver's URL is
//	                             http://<this><status.webhookPath>, see package webhook
//	--rate-limit-interval=5m     repeats of an event within it are dropped (429)
//
// To run it beside the other controllers on one machine (as `eddy dev`
// does), bind both servers to loopback ports and pass the event server's URL
// to source- and kustomize-controller, e.g.
//
//	notification-controller --kubeconfig=$KUBECONFIG --events-addr=127.0.0.1:9690 \
//	  --receiverAddr=127.0.0.1:9692 --health-addr=127.0.0.1:9693 --metrics-addr=0
//	kustomize-controller ... --events-addr=http://127.0.0.1:9690/
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	notificationv1beta3 "github.com/eddyops/eddy/api/notification/v1beta3"
	"github.com/eddyops/eddy/notification-controller/internal/controller"
	"github.com/eddyops/eddy/notification-controller/internal/server"
	"github.com/eddyops/eddy/pkg/runtime"
	ctrl "sigs.k8s.io/controller-runtime"
)

const controllerName = "notification-controller"

// Flags holds notification-controller's own flags.
type Flags struct {
	EventsAddr        string
	ReceiverAddr      string
	RateLimitInterval time.Duration
}

// bindFlags registers Flux's notification-controller flags on fs;
// --receiver-addr is accepted as an alias of Flux's --receiverAddr.
func (f *Flags) bindFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.EventsAddr, "events-addr", ":9090", "The address the event server binds to.")
	fs.StringVar(&f.ReceiverAddr, "receiverAddr", ":9292", "The address the webhook receiver server binds to.")
	fs.StringVar(&f.ReceiverAddr, "receiver-addr", ":9292", "Alias of --receiverAddr.")
	fs.DurationVar(&f.RateLimitInterval, "rate-limit-interval", 5*time.Minute, "Interval within which a repeat of the same event is dropped (answered 429); 0 disables.")
}

func main() {
	var (
		opts  runtime.Options
		flags Flags
	)
	opts.BindFlags(flag.CommandLine, 4)
	flags.bindFlags(flag.CommandLine)
	flag.Parse()
	if err := run(opts, flags); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controllerName, err)
		os.Exit(1)
	}
}

func run(opts runtime.Options, flags Flags) error {
	mgr, err := opts.NewManager(controllerName, notificationv1.AddToScheme, notificationv1beta3.AddToScheme)
	if err != nil {
		return err
	}
	rec := mgr.GetEventRecorderFor(controllerName)
	copts := controller.Options{Concurrent: opts.Concurrent, MinRetry: opts.MinRetryDelay, MaxRetry: opts.MaxRetryDelay}
	rr := &controller.ReceiverReconciler{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(), JitterPercent: opts.IntervalJitter}
	if !opts.WatchAllNamespaces {
		rr.SecretsNamespace = os.Getenv("RUNTIME_NAMESPACE") // as NewManager's cache
	}
	if err := rr.SetupWithManager(mgr, copts); err != nil {
		return err
	}
	if err := (&controller.AlertReconciler{Client: mgr.GetClient(), Recorder: rec}).SetupWithManager(mgr, copts); err != nil {
		return err
	}
	if err := (&controller.ProviderReconciler{Client: mgr.GetClient()}).SetupWithManager(mgr, copts); err != nil {
		return err
	}

	events := server.NewEventServer(mgr.GetClient(), mgr.GetAPIReader(), rec, flags.RateLimitInterval, ctrl.Log.WithName("event-server"))
	events.NoCrossNamespaceRefs = opts.NoCrossNamespaceRefs
	receivers := &server.ReceiverServer{Client: mgr.GetClient(), Secrets: mgr.GetAPIReader(),
		NoCrossNamespaceRefs: opts.NoCrossNamespaceRefs, Log: ctrl.Log.WithName("receiver-server")}
	// Like Flux, every replica serves events and webhooks, leader or not.
	for _, s := range []serverRunnable{{flags.EventsAddr, events.ServeHTTP}, {flags.ReceiverAddr, receivers.ServeHTTP}} {
		if err := mgr.Add(s); err != nil {
			return err
		}
	}
	return runtime.Run(mgr, controllerName)
}
