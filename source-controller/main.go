// Command source-controller is Eddy's source-controller: it reconciles
// GitRepository objects into tar.gz artifacts and serves them over HTTP.
//
// It takes Flux's flag names and defaults (contract §9), so Flux's deployment
// manifests carry over; --kubeconfig or KUBECONFIG selects the cluster
// outside one.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/runtime"
	"github.com/eddyops/eddy/source-controller/internal/controller"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

const controllerName = "source-controller"

func main() {
	var (
		opts             runtime.Options
		eventsAddr       string
		storagePath      string
		storageAddr      string
		storageAdvAddr   string
		retentionTTL     time.Duration
		retentionRecords int
	)
	opts.BindFlags(flag.CommandLine, 2)
	flag.StringVar(&eventsAddr, "events-addr", "", "The URL of the notification-controller's event endpoint; events are POSTed there when set.")
	flag.StringVar(&storagePath, "storage-path", envOr("STORAGE_PATH", "/data"), "The local directory where artifacts are stored.")
	flag.StringVar(&storageAddr, "storage-addr", envOr("STORAGE_ADDR", ":9090"), "The address the artifact file server binds to.")
	flag.StringVar(&storageAdvAddr, "storage-adv-addr", envOr("STORAGE_ADV_ADDR", ""), "The advertised address of the file server, used in artifact URLs; default derived from --storage-addr.")
	flag.DurationVar(&retentionTTL, "artifact-retention-ttl", 60*time.Second, "How long superseded artifacts are kept.")
	flag.IntVar(&retentionRecords, "artifact-retention-records", 2, "How many artifacts are kept per object, the current one included.")
	flag.Parse()

	if err := run(opts, eventsAddr, storagePath, storageAddr, storageAdvAddr, retentionTTL, retentionRecords); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", controllerName, err)
		os.Exit(1)
	}
}

func run(opts runtime.Options, eventsAddr, storagePath, storageAddr, storageAdvAddr string, ttl time.Duration, records int) error {
	mgr, err := opts.NewManager(controllerName, sourcev1.AddToScheme)
	if err != nil {
		return err
	}
	if storageAdvAddr == "" {
		storageAdvAddr = advertisedAddr(storageAddr)
	}
	storage, err := artifact.NewStorage(storagePath, storageAdvAddr, ttl, records)
	if err != nil {
		return err
	}
	// Like Flux, only the leader serves artifacts: a manager runnable that
	// needs leader election.
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return runtime.Serve(ctx, &http.Server{Addr: storageAddr, Handler: storage.Handler(), ReadHeaderTimeout: 10 * time.Second})
	})); err != nil {
		return err
	}
	rec := events.NewRecorder(mgr.GetEventRecorderFor(controllerName), mgr.GetScheme(), eventsAddr, controllerName,
		ctrl.Log.WithName("events"))
	r := &controller.GitRepositoryReconciler{
		Client: mgr.GetClient(), Storage: storage, Events: rec, JitterPercent: opts.IntervalJitter,
	}
	if err := r.SetupWithManager(mgr, controller.Options{
		Concurrent: opts.Concurrent, MinRetry: opts.MinRetryDelay, MaxRetry: opts.MaxRetryDelay,
	}); err != nil {
		return err
	}
	return runtime.Run(mgr, controllerName)
}

// advertisedAddr derives the file server's advertised address from its bind
// address. Flux compatible: ":9090" ⇒ "localhost:9090", "0.0.0.0:9090" ⇒
// "$HOSTNAME:9090".
func advertisedAddr(bind string) string {
	host, port, err := net.SplitHostPort(bind)
	if err != nil {
		return bind
	}
	switch host {
	case "":
		host = "localhost"
	case "0.0.0.0", "::":
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return net.JoinHostPort(host, port)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
