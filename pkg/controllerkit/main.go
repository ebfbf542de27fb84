package controllerkit

import (
	"flag"
	"fmt"
	"os"

	"github.com/go-logr/logr"

	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Config is a controller binary's command line: its controller package's
// Config, which embeds Options (SetupLogger), registers its own flags and
// builds the manager from them.
type Config interface {
	BindFlags(fs *flag.FlagSet)
	// CheckFlags and LogFlags are Options': the refused and the ignored
	// Flux flags given.
	CheckFlags() error
	LogFlags(log logr.Logger)
	SetupLogger() error
	Manager() (ctrl.Manager, error)
}

// Version is the controller binaries' version, "dev" unless set at build
// time with -ldflags "-X github.com/eddyops/eddy/pkg/controllerkit.Version=<v>"
// (make build and make images set it to git describe's output).
var Version = "dev"

// Main is a controller binary's main function: it binds and parses the
// flags into cfg, installs the logger, builds the manager (cfg.Manager) and
// runs it until SIGINT or SIGTERM (Run). A start-up error is printed as
// "<name>: <error>" on stderr; any failure exits 1. A refused Flux flag
// (RefuseFlag) is such an error, found before --version is; the ignored
// ones given are logged (LogFlags). --version prints "<name> <Version>" on
// stdout and exits 0 without touching a cluster.
func Main(name string, cfg Config) {
	cfg.BindFlags(flag.CommandLine)
	showVersion := flag.Bool("version", false, "Print the version and exit.")
	flag.Parse()
	if err := cfg.CheckFlags(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	if *showVersion {
		fmt.Printf("%s %s\n", name, Version)
		os.Exit(0)
	}
	if err := cfg.SetupLogger(); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	cfg.LogFlags(ctrl.Log.WithName("setup"))
	mgr, err := cfg.Manager()
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
	if err := Run(mgr, name); err != nil {
		os.Exit(1)
	}
}

// ControllerOptions are the work-queue options of every controller of the
// binary, from the flags: --concurrent reconciles per kind (at least 1) and
// a per-object exponential back-off after a returned error, from
// --min-retry-delay doubling up to --max-retry-delay. Flux compatible
// (fluxcd/pkg/runtime's GetRateLimiter). Each call returns a new rate
// limiter: give each controller its own, so the back-off of one kind's
// object does not delay another kind's object of the same name.
func (o *Options) ControllerOptions() controller.Options {
	return controller.Options{
		MaxConcurrentReconciles: max(o.Concurrent, 1),
		RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](o.MinRetryDelay, o.MaxRetryDelay),
	}
}
