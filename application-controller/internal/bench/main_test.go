// Package bench measures application-controller as users run it: the built
// source-controller, application-controller and kustomize-controller
// binaries, as processes, against a local cluster, with Argo CD
// Applications and, in the same run, Flux Kustomizations of the same
// objects from the same Git repository as the baseline.
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m ./application-controller/internal/bench/
//
// It is a benchmark, not a test: nothing here asserts a duration. It has its
// own cluster (TestMain), started only when a benchmark is asked for.
package bench

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/eddyops/eddy/pkg/testenv"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// argocd is application-controller's namespace, as in an Argo CD install.
const argocd = "argocd"

var (
	env    *testenv.Environment
	gitSrv *testenv.GitServer
)

// TestMain starts the cluster (the api profile: the objects are
// ConfigMaps, which need no scheduler or nodes) and a Git server only when
// a benchmark is asked for: the package has no tests, so `make test` costs
// it nothing.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run())
	}
	testenv.MainWithOptions(m, &env, testenv.Options{}, testenv.WithGitServer(&gitSrv), setupNamespace)
}

// setupNamespace creates the argocd namespace (testenv's scheme already has
// the argoproj.io and Flux kinds).
func setupNamespace(e *testenv.Environment) (func(), error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: argocd}}
	return func() {}, e.Client.Create(context.Background(), ns)
}
