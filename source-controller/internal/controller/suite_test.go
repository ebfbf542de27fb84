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
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/artifact"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/eddyops/eddy/pkg/gitserver"
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
	gitRoot string
	gitSrv  *gitserver.Server
	sink    = &eventSink{}

	repoCount int // makes repository names unique; tests do not run in parallel
)

// shardKey is Flux's sharding label: the reconciler under test, like a
// main Flux controller beside shards, takes only objects without it, so a
// test can run the built binary on its own objects in the same cluster.
const shardKey = "sharding.fluxcd.io/key"

func TestMain(m *testing.M) {
	testenv.Main(m, &env, startController)
}

// startController runs the reconciler in-process against the test cluster,
// with a real artifact file server, a Git server and an event sink.
func startController(e *testenv.Environment) (func(), error) {
	ctrl.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	var err error
	if gitRoot, err = os.MkdirTemp("", "eddy-git-"); err != nil {
		return nil, err
	}
	if gitSrv, err = gitserver.Start(gitserver.Options{Root: gitRoot}); err != nil {
		return nil, err
	}
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
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", storagePort)); err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			cancel()
			<-done
			return nil, fmt.Errorf("the artifact file server does not listen on port %d", storagePort)
		}
	}
	return func() {
		cancel()
		<-done
		events.Close()
		gitSrv.Close()
		os.RemoveAll(gitRoot)
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

func newNamespace(t testing.TB) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "gitrepo-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

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

// waitFor polls the object until cond holds (30s at most).
func waitFor(t testing.TB, obj *sourcev1.GitRepository, what string, cond func(*sourcev1.GitRepository) bool) *sourcev1.GitRepository {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	got := &sourcev1.GitRepository{}
	for {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), got); err == nil && cond(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s: %s not reached in 30s; status: %s", obj.Namespace, obj.Name, what, statusString(got))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func statusString(o *sourcev1.GitRepository) string {
	b, _ := json.Marshal(o.Status)
	return string(b)
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
func update(t testing.TB, obj *sourcev1.GitRepository, mutate func(*sourcev1.GitRepository)) {
	t.Helper()
	for range 5 {
		cur := &sourcev1.GitRepository{}
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
// controller has handled it.
func requestReconcile(t testing.TB, obj *sourcev1.GitRepository) *sourcev1.GitRepository {
	t.Helper()
	token := time.Now().Format(time.RFC3339Nano)
	update(t, obj, func(o *sourcev1.GitRepository) {
		if o.Annotations == nil {
			o.Annotations = map[string]string{}
		}
		o.Annotations[meta.ReconcileRequestAnnotation] = token
	})
	return waitFor(t, obj, "reconcile request "+token, func(o *sourcev1.GitRepository) bool {
		return o.Status.LastHandledReconcileAt == token
	})
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
