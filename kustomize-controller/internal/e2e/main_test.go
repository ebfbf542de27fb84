// Package e2e runs the built source-controller and kustomize-controller
// binaries, as users run them, against the local cluster and a real Git
// server: behaviour that depends on main's flags and wiring, or on the two
// controllers talking through the API server, is tested here.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	env      *testenv.Environment
	work     string // binaries, logs and storage
	kcExe    string // the built kustomize-controller
	gitRoot  string
	gitSrv   *gitserver.Server
	repoSeen int
)

// TestMain starts the api profile (ConfigMaps need no nodes), a Git server
// and the built source-controller; each test starts its own
// kustomize-controller with the flags it tests.
func TestMain(m *testing.M) { testenv.Main(m, &env, startSourceController) }

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
	gitRoot = filepath.Join(work, "git")
	if gitSrv, err = gitserver.Start(gitserver.Options{Root: gitRoot}); err != nil {
		cleanup()
		return nil, err
	}
	port, err := testenv.FreePort()
	if err != nil {
		gitSrv.Close()
		cleanup()
		return nil, err
	}
	p, err := testenv.StartController(e, scExe, filepath.Join(work, "source-controller.log"),
		"--storage-path="+filepath.Join(work, "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", port), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", port))
	if err != nil {
		gitSrv.Close()
		cleanup()
		return nil, err
	}
	return func() { p.Stop(); gitSrv.Close(); cleanup() }, nil
}

// startKustomizeController runs the built kustomize-controller with args
// until the test ends.
func startKustomizeController(t *testing.T, args ...string) {
	t.Helper()
	p, err := testenv.StartController(env, kcExe, filepath.Join(t.TempDir(), "kustomize-controller.log"), args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(p.LogPath)
			t.Logf("kustomize-controller log:\n%s", b)
		}
		p.Stop()
	})
}

// setup commits files to a new repository and creates, in a new namespace,
// a GitRepository and a pruning Kustomization of it, both with a 1h
// interval so that only watches explain what happens next.
func setup(t *testing.T, files map[string]string, mutate func(*kustomizev1.Kustomization)) (*sourcev1.GitRepository, *kustomizev1.Kustomization) {
	t.Helper()
	ctx := context.Background()
	repoSeen++
	r, err := gitserver.NewRepo(gitRoot, fmt.Sprintf("repo-%d.git", repoSeen), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Commit(files, "initial commit"); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	hour := metav1.Duration{Duration: time.Hour}
	src := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: "repo", Namespace: ns.Name},
		Spec: sourcev1.GitRepositorySpec{URL: gitSrv.URL + "/" + r.Name, Interval: hour,
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
	}
	if err := env.Client.Create(ctx, src); err != nil {
		t.Fatal(err)
	}
	k := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "apps", Namespace: ns.Name},
		Spec: kustomizev1.KustomizationSpec{Interval: hour, Prune: true, TargetNamespace: ns.Name,
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

// waitFor re-reads obj until cond holds (60s at most).
func waitFor(t *testing.T, obj client.Object, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err == nil && cond() {
			return
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(obj)
			t.Fatalf("%s/%s: %s not reached in 60s: %s", obj.GetNamespace(), obj.GetName(), what, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ready(k *kustomizev1.Kustomization) bool {
	c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && k.Status.ObservedGeneration == k.Generation
}

func configMap(name, data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\ndata:\n" + data
}
