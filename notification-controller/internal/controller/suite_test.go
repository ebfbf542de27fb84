package controller

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/notification-controller/internal/notifier"
	"github.com/eddyops/eddy/notification-controller/internal/server"
	"github.com/eddyops/eddy/pkg/gitserver"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The suite runs on the api profile: source-controller and
// kustomize-controller as their own processes, built from this workspace,
// POSTing events to the notification-controller under test, which runs
// in-process (reconcilers, event server, receiver server).
var (
	env         *testenv.Environment
	gitSrv      *testenv.GitServer
	eventsURL   string // http://127.0.0.1:<port>/
	receiverURL string // http://127.0.0.1:<port>
	eventStats  = &codeCounter{codes: map[int]int{}, served: map[string]int{}}
	eventServer *server.EventServer
	kcLog       *lockedFile
	stopEvents  func()
	startEvents func() error
)

// testRetry keeps provider retries short; the policy's shape is Flux's.
var testRetry = notifier.Retry{Max: 3, Min: 50 * time.Millisecond, Cap: 200 * time.Millisecond}

// shardKey is Flux's sharding label: the notification-controller under
// test, like a main Flux controller beside shards, takes only objects
// without it, so a test can run the built binary on its own objects in the
// same cluster.
const shardKey = "sharding.fluxcd.io/key"

func TestMain(m *testing.M) {
	testenv.Main(m, &env, testenv.WithGitServer(&gitSrv), startNotificationController, startControllers)
}

// codeCounter counts the event server's answers by status code, and the
// events it has answered by "<namespace>/<name>/<reason>" of their object.
type codeCounter struct {
	mu     sync.Mutex
	codes  map[int]int
	served map[string]int
}

// servedCount is how many events with reason about ns/name the event
// server has answered: once it has, the deliveries they cause are queued,
// and eventServer.Wait is a barrier for them.
func (c *codeCounter) servedCount(ns, name, reason string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.served[ns+"/"+name+"/"+reason]
}

func (c *codeCounter) get(code int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.codes[code]
}

type countingWriter struct {
	http.ResponseWriter
	code int
}

func (w *countingWriter) WriteHeader(code int) { w.code = code; w.ResponseWriter.WriteHeader(code) }

func (c *codeCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var ev eventJSON
		_ = json.Unmarshal(body, &ev)
		cw := &countingWriter{ResponseWriter: w, code: http.StatusOK}
		h.ServeHTTP(cw, r)
		c.mu.Lock()
		c.codes[cw.code]++
		c.served[ev.InvolvedObject.Namespace+"/"+ev.InvolvedObject.Name+"/"+ev.Reason]++
		c.mu.Unlock()
	})
}

func startNotificationController(e *testenv.Environment) (func(), error) {
	ctrl.SetLogger(logr.Discard())
	evPort, _ := testenv.FreePort()
	rcvPort, _ := testenv.FreePort()
	eventsURL = fmt.Sprintf("http://127.0.0.1:%d/", evPort)
	receiverURL = fmt.Sprintf("http://127.0.0.1:%d", rcvPort)
	// The manager is built by NewManager, as the binary's is (same scheme
	// and wiring). The event server is left out of it (empty
	// --events-addr) and served below, so a test can stop and restart it.
	var c Config
	fs := flag.NewFlagSet(ControllerName, flag.ContinueOnError)
	c.BindFlags(fs)
	if err := fs.Parse([]string{"--metrics-addr=0", "--health-addr=0", "--concurrent=4",
		"--min-retry-delay=200ms", "--max-retry-delay=2s", "--watch-label-selector=!" + shardKey,
		"--events-addr=", fmt.Sprintf("--receiverAddr=127.0.0.1:%d", rcvPort)}); err != nil {
		return nil, err
	}
	c.RESTConfig = e.Config
	mgr, evs, err := NewManager(c)
	if err != nil {
		return nil, err
	}
	evs.Retry = &testRetry
	eventServer = evs
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mgr.Start(ctx)
	}()
	// The event server runs beside the manager so a test can stop and
	// restart it, as if notification-controller went away.
	var evCancel context.CancelFunc
	var evDone chan struct{}
	startEvents = func() error {
		ectx, c := context.WithCancel(ctx)
		evCancel, evDone = c, make(chan struct{})
		d := evDone
		go func() {
			defer close(d)
			_ = server.Serve(ectx, fmt.Sprintf("127.0.0.1:%d", evPort), eventStats.wrap(evs))
		}()
		return testenv.WaitListening(fmt.Sprintf("127.0.0.1:%d", evPort))
	}
	stopEvents = func() { evCancel(); <-evDone }
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		cancel()
		return nil, fmt.Errorf("cache not synced")
	}
	if err := startEvents(); err != nil {
		cancel()
		return nil, err
	}
	if err := testenv.WaitListening(fmt.Sprintf("127.0.0.1:%d", rcvPort)); err != nil {
		cancel()
		return nil, err
	}
	return func() { cancel(); <-done }, nil
}

// lockedFile is a log file the test reads while a process writes it.
type lockedFile struct{ path string }

func (f *lockedFile) String() string {
	b, _ := os.ReadFile(f.path)
	return string(b)
}

// startControllers builds source- and kustomize-controller and runs them
// with --events-addr pointing at the event server.
func startControllers(e *testenv.Environment) (func(), error) {
	work, err := os.MkdirTemp("", "eddy-nc-test-")
	if err != nil {
		return nil, err
	}
	var stops []func()
	stopAll := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		os.RemoveAll(work)
	}
	for _, name := range []string{"source-controller", "kustomize-controller"} {
		exe, err := testenv.BuildController(name, work)
		if err != nil {
			stopAll()
			return nil, err
		}
		args := []string{"--events-addr=" + eventsURL, "--min-retry-delay=200ms", "--max-retry-delay=2s", "--log-level=debug"}
		if name == "source-controller" {
			storagePort, _ := testenv.FreePort()
			args = append(args, "--storage-path="+filepath.Join(work, "data"),
				fmt.Sprintf("--storage-addr=127.0.0.1:%d", storagePort), fmt.Sprintf("--storage-adv-addr=127.0.0.1:%d", storagePort))
		} else {
			args = append(args, "--requeue-dependency=1s")
		}
		p, err := testenv.StartController(e, exe, filepath.Join(work, name+".log"), args...)
		if err != nil {
			stopAll()
			return nil, err
		}
		if name == "kustomize-controller" {
			kcLog = &lockedFile{path: p.LogPath}
		}
		stops = append(stops, func() {
			p.Stop()
			if os.Getenv("EDDY_TEST_LOGS") != "" {
				b, _ := os.ReadFile(p.LogPath)
				fmt.Fprintf(os.Stderr, "--- %s log:\n%s\n", name, b)
			}
		})
	}
	return stopAll, nil
}

// sink is a local HTTP endpoint that records what it receives.
type sink struct {
	*http.Server
	URL    string
	mu     sync.Mutex
	reqs   []sinkRequest
	status int // answer; 0 means 200
}

type sinkRequest struct {
	Header http.Header
	Body   []byte
	Path   string
}

func newSink(t *testing.T, status int) *sink { return newSinkStatus(t, status) }

func newSinkTB(t testing.TB) *sink { return newSinkStatus(t, 0) }

func newSinkStatus(t testing.TB, status int) *sink {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{URL: "http://" + l.Addr().String(), status: status}
	s.Server = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, sinkRequest{Header: r.Header.Clone(), Body: b, Path: r.URL.Path})
		s.mu.Unlock()
		if s.status != 0 {
			w.WriteHeader(s.status)
		}
	})}
	go s.Serve(l)
	t.Cleanup(func() { s.Close() })
	return s
}

func (s *sink) requests() []sinkRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sinkRequest(nil), s.reqs...)
}

// waitRequest waits until a request satisfies pred and returns it.
func (s *sink) waitRequest(t *testing.T, what string, pred func(sinkRequest) bool) sinkRequest {
	t.Helper()
	return s.waitRequestTB(t, what, pred)
}

func (s *sink) waitRequestTB(t testing.TB, what string, pred func(sinkRequest) bool) sinkRequest {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		for _, r := range s.requests() {
			if pred(r) {
				return r
			}
		}
		if time.Now().After(deadline) {
			var got []string
			for _, r := range s.requests() {
				got = append(got, string(r.Body))
			}
			t.Fatalf("sink: %s not received in 60s; got %d requests: %s", what, len(got), strings.Join(got, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// genericEvents decodes the sink's requests as Flux events.
func (s *sink) events(t *testing.T) []eventJSON {
	t.Helper()
	var out []eventJSON
	for _, r := range s.requests() {
		var ev eventJSON
		if err := json.Unmarshal(r.Body, &ev); err != nil {
			t.Fatalf("sink got a body that is not an event: %v: %s", err, r.Body)
		}
		out = append(out, ev)
	}
	return out
}

// eventJSON is the event shape as a receiving webhook sees it.
type eventJSON struct {
	InvolvedObject      corev1.ObjectReference `json:"involvedObject"`
	Severity            string                 `json:"severity"`
	Message             string                 `json:"message"`
	Reason              string                 `json:"reason"`
	Action              string                 `json:"action"`
	Metadata            map[string]string      `json:"metadata"`
	ReportingController string                 `json:"reportingController"`
}

func newNamespace(t testing.TB) string { return testenv.NewNamespace(t, env.Client, "nc-") }

func create(t testing.TB, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

func secret(ns, name string, data map[string]string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data}
}

func provider(ns, name, typ, secretName string, mutate ...func(*notificationv1.Provider)) *notificationv1.Provider {
	p := &notificationv1.Provider{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       notificationv1.ProviderSpec{Type: typ},
	}
	if secretName != "" {
		p.Spec.SecretRef = &meta.LocalObjectReference{Name: secretName}
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func alert(ns, name, providerName, severity string, sources ...notificationv1.CrossNamespaceObjectReference) *notificationv1.Alert {
	return &notificationv1.Alert{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: notificationv1.AlertSpec{
			ProviderRef: meta.LocalObjectReference{Name: providerName}, EventSeverity: severity, EventSources: sources,
		},
	}
}

func ksSource(name string) notificationv1.CrossNamespaceObjectReference {
	return notificationv1.CrossNamespaceObjectReference{Kind: kustomizev1.KustomizationKind, Name: name}
}

// newRepo creates a repository on the suite's Git server with files
// committed (none when nil).
func newRepo(t testing.TB, files map[string]string) *gitserver.Repo {
	return gitSrv.NewRepo(t, files).Repo
}

func gitRepository(ns, name string, r *gitserver.Repo) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.GitRepositorySpec{URL: gitSrv.URL + "/" + r.Name, Interval: metav1.Duration{Duration: time.Hour},
			Reference: &sourcev1.GitRepositoryRef{Branch: "main"}},
	}
}

func kustomization(ns, name, source, path string, mutate ...func(*kustomizev1.Kustomization)) *kustomizev1.Kustomization {
	k := &kustomizev1.Kustomization{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: kustomizev1.KustomizationSpec{
			Interval: metav1.Duration{Duration: time.Hour}, Path: path, Prune: true,
			SourceRef: kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: source},
		},
	}
	for _, m := range mutate {
		m(k)
	}
	return k
}

// waitFor re-reads obj until cond holds (testenv.WaitFor).
func waitFor(t testing.TB, obj client.Object, what string, cond func() bool) {
	t.Helper()
	testenv.WaitFor(t, env.Client, obj, what, cond)
}

// postEvent POSTs a Flux event JSON to the event server and returns the code.
func postEvent(t testing.TB, ev map[string]any) int {
	t.Helper()
	return postEventTo(t, eventsURL, ev)
}

// postEventTo posts ev to the event server at url and returns the answer's code.
func postEventTo(t testing.TB, url string, ev map[string]any) int {
	t.Helper()
	b, _ := json.Marshal(ev)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// kubeEvents returns the messages of Kubernetes Events about name with reason.
func kubeEvents(t testing.TB, ns, name, reason string) []string {
	t.Helper()
	return testenv.KubeEvents(t, env.Client, ns, name, reason)
}

// waitAlertsSynced waits until the event server sees the Alerts and
// Providers created so far in ns: it creates a probe Provider and Alert
// last and posts probe events until one is delivered. Watch events of one
// kind arrive in order, so everything created before is cached too.
func waitAlertsSynced(t *testing.T, ns string) {
	t.Helper()
	s := newSink(t, 0)
	create(t, provider(ns, "probe", "generic", "", func(p *notificationv1.Provider) { p.Spec.Address = s.URL }),
		alert(ns, "probe", "probe", "", notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "probe"}))
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; len(s.requests()) == 0; i++ {
		if time.Now().After(deadline) {
			t.Fatal("the event server did not see the probe Alert in 30s")
		}
		postEvent(t, fluxEvent(ns, "GitRepository", "probe", "info", fmt.Sprintf("probe %d", i), nil))
		time.Sleep(50 * time.Millisecond)
	}
}
