// Package testenv gives integration tests a real API server with Eddy's CRDs
// installed: one localcluster "api" profile per test package, started from
// TestMain, and a controller-runtime client that knows Eddy's kinds.
//
//	var env *testenv.Environment
//
//	func TestMain(m *testing.M) { testenv.Main(m, &env) }
package testenv

import (
	"context"
	"flag"
	"fmt"
	"github.com/eddyops/eddy/pkg/crds"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	argov1 "github.com/eddyops/eddy/api/argoproj/v1alpha1"
	helmv2 "github.com/eddyops/eddy/api/helm/v2"
	imagev1 "github.com/eddyops/eddy/api/image/v1"
	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	notificationv1beta3 "github.com/eddyops/eddy/api/notification/v1beta3"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	swv1 "github.com/eddyops/eddy/api/sourceextensions/v1beta1"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/go-logr/logr"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Environment is a running API server with Eddy's CRDs installed.
type Environment struct {
	*localcluster.Cluster
	// Client talks to the cluster as admin; its scheme has the Kubernetes
	// built-in kinds, CRDs and Eddy's API groups.
	Client client.Client
	// Scheme is Client's scheme.
	Scheme *runtime.Scheme
	// CRDs are the installed definitions, as read from config/crd/bases.
	CRDs []*apiextensionsv1.CustomResourceDefinition
}

// Options configure Start.
type Options struct {
	// Cluster options; the profile defaults to api.
	Cluster localcluster.Options
	// CRDDir holds the CRD YAML files to install; default
	// <workspace root>/config/crd/bases.
	CRDDir string
}

// NewScheme returns a scheme with the Kubernetes built-in kinds, CRDs and
// Eddy's API groups (Argo CD's argoproj.io included).
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(sourcev1.AddToScheme(s))
	utilruntime.Must(kustomizev1.AddToScheme(s))
	utilruntime.Must(helmv2.AddToScheme(s))
	utilruntime.Must(notificationv1.AddToScheme(s))
	utilruntime.Must(notificationv1beta3.AddToScheme(s))
	utilruntime.Must(argov1.AddToScheme(s))
	utilruntime.Must(imagev1.AddToScheme(s))
	utilruntime.Must(swv1.AddToScheme(s))
	return s
}

// Start starts a cluster, installs the CRDs and waits until they are
// Established. On error nothing is left running.
func Start(ctx context.Context, opts Options) (*Environment, error) {
	if opts.CRDDir == "" {
		root, err := localcluster.WorkspaceRoot()
		if err != nil {
			return nil, err
		}
		opts.CRDDir = filepath.Join(root, "config", "crd", "bases")
	}
	defs, err := crds.Read(opts.CRDDir)
	if err != nil {
		return nil, err
	}
	cluster, err := localcluster.Start(ctx, opts.Cluster)
	if err != nil {
		return nil, err
	}
	env := &Environment{Cluster: cluster, Scheme: NewScheme(), CRDs: defs}
	if env.Client, err = client.New(cluster.Config, client.Options{Scheme: env.Scheme}); err != nil {
		cluster.Stop()
		return nil, err
	}
	if err := crds.Install(ctx, env.Client, defs); err != nil {
		cluster.Stop()
		return nil, fmt.Errorf("installing CRDs: %w\n%s", err, cluster.Logs(40))
	}
	return env, nil
}

// Setup runs after the Environment started and before the tests, e.g. to
// start the reconcilers under test; the returned function runs after them.
type Setup func(*Environment) (teardown func(), err error)

// Main is a TestMain body: it starts an Environment into *env, runs the
// setups, runs the package's tests, fails them when an object they left
// breaks the status conventions (ClusterStatusViolations), prints the tail
// of each component's log when a test failed, tears down, stops the
// cluster and exits with the tests' code. It never returns.
func Main(m *testing.M, env **Environment, setups ...Setup) {
	MainWithOptions(m, env, Options{}, setups...)
}

// MainWithOptions is Main with a chosen cluster profile and CRD directory.
func MainWithOptions(m *testing.M, env **Environment, opts Options, setups ...Setup) {
	ctx := context.Background()
	// Controllers log through controller-runtime; tests that want the logs set
	// a logger of their own.
	ctrllog.SetLogger(logr.Discard())
	opts.Cluster.HandleSignals = true // the test binary owns the process: Ctrl-C stops the cluster
	e, err := Start(ctx, opts)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("testenv: localcluster profile %s ready in %s (%s)\n",
		e.Profile, e.StartupDuration.Round(time.Millisecond), e.KubeconfigPath)
	*env = e
	var teardowns []func()
	for _, setup := range setups {
		td, err := setup(e)
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: setup: %v\n", err)
			for i := len(teardowns) - 1; i >= 0; i-- {
				teardowns[i]()
			}
			e.Stop()
			os.Exit(1)
		}
		if td != nil {
			teardowns = append(teardowns, td)
		}
	}
	// A test binary that times out panics and runs no deferred function: stop
	// the cluster, and show why it hung, shortly before that happens.
	flag.Parse()
	if f := flag.Lookup("test.timeout"); f != nil {
		if timeout, _ := time.ParseDuration(f.Value.String()); timeout > 10*time.Second {
			timer := time.AfterFunc(timeout-5*time.Second, func() {
				fmt.Fprintf(os.Stderr, "testenv: the tests are about to time out; component logs:\n%s", e.Logs(60))
				e.Stop()
			})
			defer timer.Stop()
		}
	}
	code := m.Run()
	if code == 0 {
		// Status conformance of what the scenarios left (ClusterStatusViolations).
		vs, err := ClusterStatusViolations(ctx, e.Client)
		if err != nil {
			vs = append(vs, "listing the objects: "+err.Error())
		}
		for _, v := range vs {
			fmt.Fprintf(os.Stderr, "testenv: status conformance: %s\n", v)
			code = 1
		}
	}
	for i := len(teardowns) - 1; i >= 0; i-- {
		teardowns[i]()
	}
	if code != 0 {
		fmt.Fprintf(os.Stderr, "testenv: tests failed; component logs:\n%s", e.Logs(60))
	}
	e.Stop()
	os.Exit(code)
}

// TestdataDir returns the testdata of the project's companion folder:
// $EDDY_SHARED_DIR/testdata, else shared/testdata beside the checkout.
// When the folder is missing (a clone on its own), it skips the test and
// appends "<package dir> <top-level test>" as a line to the file
// $EDDY_SKIP_LOG, if set, so that `make test` can say which tests did not
// run; with EDDY_REQUIRE_SHARED=1 (CI) it fails the test instead.
func TestdataDir(t testing.TB) string {
	t.Helper()
	shared := os.Getenv("EDDY_SHARED_DIR")
	root, rootErr := localcluster.WorkspaceRoot()
	if shared == "" {
		if rootErr != nil {
			t.Fatal(rootErr)
		}
		shared = filepath.Join(filepath.Dir(root), "shared")
	}
	dir := filepath.Join(shared, "testdata")
	if _, err := os.Stat(dir); err == nil {
		return dir
	} else if os.Getenv("EDDY_REQUIRE_SHARED") == "1" {
		t.Fatalf("testdata not found (%v): put shared/ beside the checkout or set EDDY_SHARED_DIR", err)
	}
	if log := os.Getenv("EDDY_SKIP_LOG"); log != "" {
		pkg, _ := os.Getwd() // go test runs a test binary in its package's directory
		if rel, err := filepath.Rel(root, pkg); rootErr == nil && err == nil {
			pkg = "./" + filepath.ToSlash(rel)
		}
		test, _, _ := strings.Cut(t.Name(), "/")
		// One short O_APPEND write per line: test binaries run in parallel.
		if f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			_, _ = fmt.Fprintf(f, "%s %s\n", pkg, test)
			f.Close()
		}
	}
	t.Skipf("needs the real repositories of shared/testdata, not found at %s: set EDDY_SHARED_DIR to run it", dir)
	return ""
}
