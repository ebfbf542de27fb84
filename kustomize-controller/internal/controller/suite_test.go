package controller

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/localcluster"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var (
	env       *testenv.Environment
	gitRoot   string
	gitSrv    *gitserver.Server
	repoCount int
)

// TestMain runs the tests on the full profile (fake nodes make Deployments
// Available) with source-controller as its own process, built from this
// workspace, and the reconciler under test in-process; the built
// kustomize-controller runs the scenarios of shard binaryShard.
func TestMain(m *testing.M) {
	testenv.MainWithOptions(m, &env, testenv.Options{Cluster: localcluster.Options{Profile: localcluster.ProfileFull}},
		startEventSink, startSourceController, startReconciler, startKustomizeController)
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
	if gitRoot, err = os.MkdirTemp("", "eddy-git-"); err != nil {
		return nil, err
	}
	if gitSrv, err = gitserver.Start(gitserver.Options{Root: gitRoot}); err != nil {
		return nil, err
	}
	storagePort, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	cleanup := func() {
		gitSrv.Close()
		os.RemoveAll(gitRoot)
		os.RemoveAll(work)
	}
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

// repo is a bare repository served by the Git server and its work tree.
type repo struct{ *gitserver.Repo }

func (r *repo) url() string { return gitSrv.URL + "/" + r.Name }

func newRepo(t testing.TB, files map[string]string) *repo {
	t.Helper()
	repoCount++
	name := fmt.Sprintf("%s-%d.git", strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())), repoCount)
	gr, err := gitserver.NewRepo(gitRoot, name, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := &repo{gr}
	if files != nil {
		r.commit(t, files, "initial commit")
	}
	return r
}

func (r *repo) git(t testing.TB, args ...string) string {
	t.Helper()
	out, err := r.Git(args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// commit writes files ("" deletes), commits, pushes to main and returns the hash.
func (r *repo) commit(t testing.TB, files map[string]string, msg string) string {
	t.Helper()
	hash, err := r.Commit(files, msg)
	if err != nil {
		t.Fatal(err)
	}
	return hash
}

// push commits files to r and has the GitRepository src fetch the new
// commit; it returns the revision `main@sha1:<hash>`.
func push(t *testing.T, r *repo, src *sourcev1.GitRepository, files map[string]string, msg string) string {
	t.Helper()
	rev := "main@sha1:" + r.commit(t, files, msg)
	requestReconcile(t, src, func() string { return src.Status.LastHandledReconcileAt })
	waitFor(t, src, "artifact "+rev, func() bool { return src.Status.Artifact != nil && src.Status.Artifact.Revision == rev })
	return rev
}

func newNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "ks-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// newSource creates a GitRepository for r in ns and waits for its artifact.
func newSource(t testing.TB, ns, name string, r *repo) *sourcev1.GitRepository {
	t.Helper()
	src := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{URL: r.url(), Interval: metav1.Duration{Duration: time.Hour},
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

// waitFor re-reads obj until cond holds (60s at most).
func waitFor(t testing.TB, obj client.Object, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err == nil && cond() {
			return
		}
		if time.Now().After(deadline) {
			var status any = obj
			switch o := obj.(type) {
			case *kustomizev1.Kustomization:
				status = o.Status
			case *sourcev1.GitRepository:
				status = o.Status
			}
			b, _ := json.Marshal(status)
			t.Fatalf("%s/%s: %s not reached in 60s; status: %s", obj.GetNamespace(), obj.GetName(), what, b)
		}
		time.Sleep(100 * time.Millisecond)
	}
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
// until the controller has handled it.
func requestReconcile(t *testing.T, obj client.Object, handled func() string) {
	t.Helper()
	token := time.Now().Format(time.RFC3339Nano)
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, token))
	if err := env.Client.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, obj, "reconcile request", func() bool { return handled() == token })
}

func kubeEvents(t *testing.T, ns, name, reason string) []string {
	t.Helper()
	list := &corev1.EventList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}
