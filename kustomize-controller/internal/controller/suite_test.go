package controller

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	env    *testenv.Environment
	gitSrv *testenv.GitServer
)

// TestMain runs the tests on the full profile (fake nodes make Deployments
// Available) with source-controller as its own process, built from this
// workspace, and the reconciler under test in-process; the built
// kustomize-controller runs the scenarios of shard binaryShard.
func TestMain(m *testing.M) {
	testenv.MainWithOptions(m, &env, testenv.Options{Cluster: localcluster.Options{Profile: localcluster.ProfileFull}},
		testenv.WithGitServer(&gitSrv), startEventSink, startSourceController, startReconciler, startKustomizeController)
}

func startSourceController(e *testenv.Environment) (func(), error) {
	work, err := os.MkdirTemp("", "eddy-kc-test-")
	if err != nil {
		return nil, err
	}
	exe, err := testenv.BuildController("source-controller", work)
	if err != nil {
		return nil, err
	}
	storagePort, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	cleanup := func() { os.RemoveAll(work) }
	p, err := testenv.StartController(e, exe, filepath.Join(work, "source-controller.log"),
		"--storage-path="+filepath.Join(work, "data"),
		fmt.Sprintf("--storage-addr=127.0.0.1:%d", storagePort),
		fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", storagePort),
		"--concurrent=4", "--min-retry-delay=200ms", "--max-retry-delay=2s", "--events-addr="+eventSink.url)
	if err != nil {
		cleanup()
		return nil, err
	}
	return func() { p.Stop(); cleanup() }, nil
}

// shardKey is Flux's sharding label: the reconciler under test, like a
// main Flux controller beside shards, takes only objects without it, so a
// test can run the built binary on its own objects in the same cluster.
const shardKey = "sharding.fluxcd.io/key"

// testFlags are the flags the in-process reconciler is started with.
var testFlags = []string{"--metrics-addr=0", "--health-addr=0", "--concurrent=4", "--min-retry-delay=200ms",
	"--max-retry-delay=2s", "--requeue-dependency=1s", "--http-retry=2", "--watch-label-selector=!" + shardKey}

// startReconciler runs the reconciler in-process, in a manager built by
// NewManager as the binary's is (same scheme and wiring), with short waits.
func startReconciler(e *testenv.Environment) (func(), error) {
	ctrl.SetLogger(logrDiscard())
	var c Config
	fs := flag.NewFlagSet(ControllerName, flag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse(testFlags); err != nil {
		return nil, err
	}
	c.RESTConfig, c.HealthPoll, c.HTTPRetryWait = e.Config, 200*time.Millisecond, 100*time.Millisecond
	mgr, err := NewManager(c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	return func() { cancel(); <-done }, nil
}

// repo is a repository of the suite's Git server.
type repo = testenv.Repo

func newRepo(t testing.TB, files map[string]string) *repo { return gitSrv.NewRepo(t, files) }

// push commits files to r and has the GitRepository src fetch the new
// commit; it returns the revision `main@sha1:<hash>`.
func push(t *testing.T, r *repo, src *sourcev1.GitRepository, files map[string]string, msg string) string {
	t.Helper()
	rev := "main@sha1:" + r.MustCommit(t, files, msg)
	requestReconcile(t, src, func() string { return src.Status.LastHandledReconcileAt })
	waitFor(t, src, "artifact "+rev, func() bool { return src.Status.Artifact != nil && src.Status.Artifact.Revision == rev })
	return rev
}

func newNamespace(t testing.TB) string { return testenv.NewNamespace(t, env.Client, "ks-") }

// newSource creates a GitRepository for r in ns and waits for its artifact.
func newSource(t testing.TB, ns, name string, r *repo) *sourcev1.GitRepository {
	t.Helper()
	src := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{URL: r.URL(), Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
	}
	if err := env.Client.Create(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	waitFor(t, src, "artifact", func() bool { return src.Status.Artifact != nil })
	return src
}

func newKustomization(t testing.TB, ns, name, source string, mutate func(*kustomizev1.Kustomization)) *kustomizev1.Kustomization {
	t.Helper()
	k := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: kustomizev1.KustomizationSpec{
			Interval:  metav1.Duration{Duration: time.Hour},
			Prune:     true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: "GitRepository", Name: source},
		},
	}
	if ns == binaryNS {
		k.Labels = map[string]string{shardKey: binaryShard} // the built binary's
	}
	if mutate != nil {
		mutate(k)
	}
	if err := env.Client.Create(context.Background(), k); err != nil {
		t.Fatal(err)
	}
	return k
}

// waitFor re-reads obj until cond holds (testenv.WaitFor).
func waitFor(t testing.TB, obj client.Object, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, env.Client, obj, what, cond)
}

func readyCond(k *kustomizev1.Kustomization) *metav1.Condition {
	return apimeta.FindStatusCondition(k.Status.Conditions, meta.ReadyCondition)
}

// waitApplied waits until Ready=True for revision rev at the current generation.
func waitApplied(t *testing.T, k *kustomizev1.Kustomization, rev string) {
	t.Helper()
	waitFor(t, k, "Applied revision "+rev, func() bool {
		c := readyCond(k)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == k.Generation &&
			k.Status.LastAppliedRevision == rev && k.Status.ObservedGeneration == k.Generation
	})
}

// waitFailed waits until Ready=False with reason.
func waitFailed(t *testing.T, k *kustomizev1.Kustomization, reason string) *metav1.Condition {
	t.Helper()
	waitFor(t, k, "Ready=False "+reason, func() bool {
		c := readyCond(k)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason && c.ObservedGeneration == k.Generation
	})
	return readyCond(k)
}

// requestReconcile sets reconcile.fluxcd.io/requestedAt on obj and waits
// until the controller has handled it (handled returns the token).
func requestReconcile(t *testing.T, obj client.Object, handled func() string) {
	t.Helper()
	testenv.RequestReconcile(t, env.Client, obj, handled)
}

func kubeEvents(t *testing.T, ns, name, reason string) []string {
	t.Helper()
	return testenv.KubeEvents(t, env.Client, ns, name, reason)
}
