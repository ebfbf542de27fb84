package controller

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

var (
	env     *testenv.Environment
	storage *artifact.Storage
	gitSrv  *testenv.GitServer
	sink    = &eventSink{}
)

// shardKey is Flux's sharding label: the reconciler under test, like a
// main Flux controller beside shards, takes only objects without it, so a
// test can run the built binary on its own objects in the same cluster.
const shardKey = "sharding.fluxcd.io/key"

func TestMain(m *testing.M) {
	trustCloudFakes()
	testenv.Main(m, &env, testenv.WithGitServer(&gitSrv), startController)
}

// startController runs the reconciler in-process against the test cluster,
// with a real artifact file server and an event sink.
func startController(e *testenv.Environment) (func(), error) {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	storageDir, err := os.MkdirTemp("", "eddy-storage-")
	if err != nil {
		return nil, err
	}
	storagePort, err := testenv.FreePort()
	if err != nil {
		return nil, err
	}
	events := httptest.NewServer(sink)

	// The manager is built by NewManager, as the binary's is (same scheme
	// and wiring); the tests shorten the retries.
	var c Config
	fs := flag.NewFlagSet(ControllerName, flag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse([]string{"--metrics-addr=0", "--health-addr=0", "--concurrent=4",
		"--min-retry-delay=100ms", "--max-retry-delay=2s", "--watch-label-selector=!" + shardKey,
		"--storage-path=" + storageDir, fmt.Sprintf("--storage-addr=127.0.0.1:%d", storagePort),
		"--events-addr=" + events.URL}); err != nil {
		return nil, err
	}
	c.RESTConfig = e.Config
	c.OCILimits = artifact.Limits{MaxBytes: ociTestMaxBytes}
	mgr, st, err := NewManager(c)
	if err != nil {
		return nil, err
	}
	storage = st
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "manager: %v\n", err)
		}
	}()
	// The file server is the manager's; wait until it listens.
	if err := testenv.WaitListening(fmt.Sprintf("127.0.0.1:%d", storagePort)); err != nil {
		cancel()
		<-done
		return nil, fmt.Errorf("the artifact file server: %w", err)
	}
	return func() {
		cancel()
		<-done
		events.Close()
		os.RemoveAll(storageDir)
	}, nil
}

// eventSink collects the Flux events POSTed by the recorder.
type eventSink struct {
	mu     sync.Mutex
	events []events.Event
}

func (s *eventSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var ev events.Event
	if err := json.NewDecoder(r.Body).Decode(&ev); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	w.WriteHeader(http.StatusAccepted)
}

// find returns the events about namespace/name with the given reason.
func (s *eventSink) find(namespace, name, reason string) []events.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []events.Event
	for _, e := range s.events {
		if e.InvolvedObject.Namespace == namespace && e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// repo is a repository of the suite's Git server.
type repo = testenv.Repo

func newRepo(t testing.TB, files map[string]string) *repo { return gitSrv.NewRepo(t, files) }

func newNamespace(t testing.TB) string { return testenv.NewNamespace(t, env.Client, "gitrepo-") }

func newGitRepository(t testing.TB, ns, name, url string, mutate func(*sourcev1.GitRepository)) *sourcev1.GitRepository {
	t.Helper()
	obj := &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: sourcev1.GitRepositorySpec{
			URL:       url,
			Interval:  metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"},
		},
	}
	if mutate != nil {
		mutate(obj)
	}
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// newRepositoryWithSecret creates the Secret ns/name holding data and a
// GitRepository ns/name of url whose secretRef names it.
func newRepositoryWithSecret(t testing.TB, ns, name, url string, data map[string]string) *sourcev1.GitRepository {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
	if err := env.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	return newGitRepository(t, ns, name, url, func(o *sourcev1.GitRepository) {
		o.Spec.SecretRef = &meta.LocalObjectReference{Name: name}
	})
}

// waitFor reads the object until cond holds (testenv.WaitFor) and returns
// what it read; obj is left as it was.
func waitFor(t testing.TB, obj *sourcev1.GitRepository, what string, cond func(*sourcev1.GitRepository) bool) *sourcev1.GitRepository {
	t.Helper()
	got := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: obj.Namespace, Name: obj.Name}}
	testenv.WaitFor(t, env.Client, got, what, func() bool { return cond(got) })
	return got
}

// settled is true when the current generation was reconciled to Ready=True or a failure.
func settled(o *sourcev1.GitRepository) bool {
	c := apimeta.FindStatusCondition(o.Status.Conditions, meta.ReadyCondition)
	return c != nil && c.ObservedGeneration == o.Generation && (c.Status == metav1.ConditionTrue || c.Status == metav1.ConditionFalse)
}

func waitReady(t testing.TB, obj *sourcev1.GitRepository) *sourcev1.GitRepository {
	t.Helper()
	return waitFor(t, obj, "Ready", func(o *sourcev1.GitRepository) bool {
		return settled(o) && apimeta.IsStatusConditionTrue(o.Status.Conditions, meta.ReadyCondition) &&
			o.Status.ObservedGeneration == o.Generation
	})
}

func waitNotReady(t testing.TB, obj *sourcev1.GitRepository) *sourcev1.GitRepository {
	t.Helper()
	return waitFor(t, obj, "Ready=False", func(o *sourcev1.GitRepository) bool {
		return settled(o) && apimeta.IsStatusConditionFalse(o.Status.Conditions, meta.ReadyCondition)
	})
}

// update re-reads obj, applies mutate and writes it.
func update[T client.Object](t testing.TB, obj T, mutate func(T)) {
	t.Helper()
	for range 5 {
		cur := obj.DeepCopyObject().(T)
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), cur); err != nil {
			t.Fatal(err)
		}
		mutate(cur)
		if err := env.Client.Update(context.Background(), cur); err == nil {
			return
		}
	}
	t.Fatal("update kept conflicting")
}

// requestReconcile sets reconcile.fluxcd.io/requestedAt and waits until the
// controller has handled it; it returns the object then read.
func requestReconcile(t testing.TB, obj *sourcev1.GitRepository) *sourcev1.GitRepository {
	t.Helper()
	got := obj.DeepCopy()
	testenv.RequestReconcile(t, env.Client, got, func() string { return got.Status.LastHandledReconcileAt })
	return got
}

// download fetches the artifact's URL and checks the bytes against its
// digest and size.
func download(t testing.TB, a *meta.Artifact) []byte {
	t.Helper()
	resp, err := http.Get(a.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", a.URL, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != a.Digest {
		t.Errorf("downloaded bytes have digest %s, status.artifact.digest is %s", got, a.Digest)
	}
	if a.Size == nil || *a.Size != int64(len(body)) {
		t.Errorf("downloaded %d bytes, status.artifact.size is %v", len(body), a.Size)
	}
	return body
}

// untar returns the regular files of a tar.gz, name → content.
func untar(t testing.TB, data []byte) map[string][]byte {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			files[h.Name], _ = io.ReadAll(tr)
		}
	}
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
