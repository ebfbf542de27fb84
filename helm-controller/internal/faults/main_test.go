package faults

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
	gitSrv *testenv.GitServer
	// work holds the binaries, logs and source-controller's storage.
	work string
	// sourceCtl serves the artifacts of every test; tests kill it too.
	sourceCtl *controller
)

// TestMain starts the api profile (ConfigMaps and Secrets need no nodes),
// a Git server and the built source-controller.
func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.WithGitServer(&gitSrv), startSource)
}

func startSource(e *testenv.Environment) (func(), error) {
	var err error
	if work, err = os.MkdirTemp("", "eddy-faults-"); err != nil {
		return nil, err
	}
	storage, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	sourceCtl, err = newController(e, work, "source-controller",
		"--storage-path="+filepath.Join(work, "storage"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", storage), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", storage),
		"--concurrent=4", "--min-retry-delay=200ms", "--max-retry-delay=2s")
	if err != nil {
		return nil, err
	}
	if err := sourceCtl.start(true); err != nil {
		return nil, err
	}
	return func() { sourceCtl.stop(); os.RemoveAll(work) }, nil
}

// kustomizeArgs are kustomize-controller's flags in the suite: short
// retries, so that a restarted controller converges quickly.
var kustomizeArgs = []string{"--concurrent=4", "--min-retry-delay=200ms", "--max-retry-delay=2s", "--requeue-dependency=1s"}

func newNamespace(t testing.TB) string { return testenv.NewNamespace(t, env.Client, "faults-") }

// newSource creates a GitRepository for url in ns polling every interval.
func newSource(t testing.TB, ns, name, url string, interval time.Duration) *sourcev1.GitRepository {
	t.Helper()
	src := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{URL: url, Interval: metav1.Duration{Duration: interval},
			Timeout: &metav1.Duration{Duration: 10 * time.Second}, Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
	}
	if err := env.Client.Create(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	return src
}

// newKustomization creates a pruning Kustomization of path in source.
func newKustomization(t testing.TB, ns, name, source, path string, interval time.Duration) *kustomizev1.Kustomization {
	t.Helper()
	k := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: interval}, Prune: true, Path: path,
			TargetNamespace: ns, RetryInterval: &metav1.Duration{Duration: 2 * time.Second},
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: source}},
	}
	if err := env.Client.Create(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return k
}

// waitFor re-reads obj until cond holds, failing t after d.
func waitFor(t testing.TB, obj client.Object, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err == nil && cond() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s %s/%s: not %s after %s", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetNamespace(), obj.GetName(), what, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// readyAt tells whether k is Ready with revision applied.
func readyAt(k *kustomizev1.Kustomization, rev string) bool {
	c := apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
	return c != nil && c.Status == metav1.ConditionTrue && k.Status.LastAppliedRevision == rev && c.ObservedGeneration == k.Generation
}

// requestReconcile sets reconcile.fluxcd.io/requestedAt on obj.
func requestReconcile(t testing.TB, obj client.Object) {
	t.Helper()
	patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
	a := obj.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[meta.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
	obj.SetAnnotations(a)
	if err := env.Client.Patch(context.Background(), obj, patch); err != nil {
		t.Fatal(err)
	}
}

// artifactAt waits until src has an artifact of revision rev.
func artifactAt(t testing.TB, src *sourcev1.GitRepository, rev string) {
	t.Helper()
	requestReconcile(t, src)
	waitFor(t, src, time.Minute, "at "+rev, func() bool { return src.Status.Artifact != nil && src.Status.Artifact.Revision == rev })
}

func configMap(name string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {k: v}\n"
}

func create(t testing.TB, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}
