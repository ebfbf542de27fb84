// Package e2e runs the built source-controller and kustomize-controller
// binaries, as users run them, against the local cluster and a real Git
// server: behaviour that depends on main's flags and wiring, or on the two
// controllers talking through the API server, is tested here.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	env    *testenv.Environment
	work   string // binaries, logs and storage
	kcExe  string // the built kustomize-controller
	gitSrv *testenv.GitServer
)

// TestMain starts the api profile (ConfigMaps need no nodes), a Git server
// and the built source-controller; each test starts its own
// kustomize-controller with the flags it tests.
func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.WithGitServer(&gitSrv), startSourceController)
}

func startSourceController(e *testenv.Environment) (func(), error) {
	var err error
	if work, err = os.MkdirTemp("", "eddy-kc-e2e-"); err != nil {
		return nil, err
	}
	cleanup := func() { os.RemoveAll(work) }
	scExe, err := testenv.BuildController("source-controller", work)
	if err == nil {
		kcExe, err = testenv.BuildController("kustomize-controller", work)
	}
	if err != nil {
		cleanup()
		return nil, err
	}
	port, err := testenv.FreePort()
	if err != nil {
		cleanup()
		return nil, err
	}
	p, err := testenv.StartController(e, scExe, filepath.Join(work, "source-controller.log"),
		"--storage-path="+filepath.Join(work, "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", port))
	if err != nil {
		cleanup()
		return nil, err
	}
	return func() { p.Stop(); cleanup() }, nil
}

// startKustomizeController runs the built kustomize-controller with args
// until the test ends.
func startKustomizeController(t *testing.T, args ...string) {
	t.Helper()
	testenv.RunBinary(t, env, kcExe, args...)
}

// setup commits files to a new repository and creates, in a new namespace,
// a GitRepository and a pruning Kustomization of it, both with a 1h
// interval so that only watches explain what happens next.
func setup(t *testing.T, files map[string]string, mutate func(*kustomizev1.Kustomization)) (*sourcev1.GitRepository, *kustomizev1.Kustomization) {
	t.Helper()
	ctx := context.Background()
	r := gitSrv.NewRepo(t, files)
	ns := testenv.NewNamespace(t, env.Client, "e2e-")
	hour := metav1.Duration{Duration: time.Hour}
	src := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{URL: r.URL(), Interval: hour,
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
	}
	if err := env.Client.Create(ctx, src); err != nil {
		t.Fatal(err)
	}
	k := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{Interval: hour, Prune: true, TargetNamespace: ns,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: src.Name}},
	}
	if mutate != nil {
		mutate(k)
	}
	if err := env.Client.Create(ctx, k); err != nil {
		t.Fatal(err)
	}
	return src, k
}

// waitFor re-reads obj until cond holds (testenv.WaitFor).
func waitFor(t *testing.T, obj client.Object, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, env.Client, obj, what, cond)
}

func ready(k *kustomizev1.Kustomization) bool {
	c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && k.Status.ObservedGeneration == k.Generation
}

func configMap(name, data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n" + data
}
