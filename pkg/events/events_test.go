package events_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// sink records the events POSTed to it and answers status(reason).
type sink struct {
	mu     sync.Mutex
	events []events.Event
	hits   map[string]int
	status func(reason string) int
}

func newSink(status func(reason string) int) (*sink, *httptest.Server) {
	s := &sink{hits: map[string]int{}, status: status}
	return s, httptest.NewServer(s)
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var ev events.Event
	if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &ev) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits[ev.Reason]++
	s.events = append(s.events, ev)
	w.WriteHeader(s.status(ev.Reason))
}

// wait returns the events received once reason has been posted hits times.
func (s *sink) wait(t *testing.T, reason string, hits int) []events.Event {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		s.mu.Lock()
		n, evs := s.hits[reason], append([]events.Event(nil), s.events...)
		s.mu.Unlock()
		if n >= hits {
			return evs
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s posted %d times, want %d", reason, n, hits)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func accept(string) int { return http.StatusAccepted }

func newObj() *sourcev1.GitRepository {
	return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{
		Name: "podinfo", Namespace: "flux-system", UID: "1234", ResourceVersion: "7",
		Annotations: map[string]string{"event.toolkit.fluxcd.io/team": "apps", "unrelated": "x"},
	}}
}

func newScheme() *k8sruntime.Scheme {
	scheme := k8sruntime.NewScheme()
	_ = sourcev1.AddToScheme(scheme)
	return scheme
}

// newRecorder has one worker, so the webhook receives events in the order
// they were recorded: a later event observed is a barrier for earlier ones.
func newRecorder(t *testing.T, k8s record.EventRecorder, url string) *events.Recorder {
	rec := events.NewRecorderSized(k8s, newScheme(), url, "source-controller", logr.Discard(), 1, 16)
	t.Cleanup(rec.Close)
	return rec
}

func TestRecorderPostsFluxEventJSON(t *testing.T) {
	s, srv := newSink(accept)
	defer srv.Close()
	k8s := record.NewFakeRecorder(10)
	rec := newRecorder(t, k8s, srv.URL)

	rev := map[string]string{"source.toolkit.fluxcd.io/revision": "main@sha1:abc"}
	rec.Event(newObj(), corev1.EventTypeNormal, "NewArtifact", "stored artifact for commit 'first'", rev)
	rec.Event(newObj(), corev1.EventTypeWarning, "GitOperationFailed", "failed to checkout", nil)
	rec.Event(newObj(), events.EventTypeTrace, "ArtifactUpToDate", "artifact up-to-date", nil)
	rec.Event(newObj(), corev1.EventTypeNormal, "Marker", "recorded after the trace event", nil)

	// A trace event posted would arrive before Marker.
	evs := s.wait(t, "Marker", 1)
	var reasons []string
	for _, e := range evs {
		reasons = append(reasons, e.Reason)
	}
	if strings.Join(reasons, ",") != "NewArtifact,GitOperationFailed,Marker" {
		t.Fatalf("webhook received %v, want NewArtifact,GitOperationFailed,Marker (no trace event)", reasons)
	}
	info := evs[0]
	want := corev1.ObjectReference{Kind: "GitRepository", APIVersion: "source.toolkit.fluxcd.io/v1",
		Namespace: "flux-system", Name: "podinfo", UID: "1234", ResourceVersion: "7"}
	if info.InvolvedObject != want {
		t.Errorf("involvedObject %+v, want %+v", info.InvolvedObject, want)
	}
	if info.Severity != "info" || info.ReportingController != "source-controller" || info.Timestamp.IsZero() {
		t.Errorf("info event %+v", info)
	}
	if info.Metadata["source.toolkit.fluxcd.io/revision"] != "main@sha1:abc" || info.Metadata["event.toolkit.fluxcd.io/team"] != "apps" || info.Metadata["unrelated"] != "" {
		t.Errorf("metadata %v", info.Metadata)
	}
	if evs[1].Severity != "error" {
		t.Errorf("warning event severity %q, want error", evs[1].Severity)
	}
	var k8sEvents []string
	for len(k8s.Events) > 0 {
		k8sEvents = append(k8sEvents, <-k8s.Events)
	}
	if len(k8sEvents) != 4 || !strings.HasPrefix(k8sEvents[2], "Normal ArtifactUpToDate") {
		t.Errorf("Kubernetes events %q: want all four, the trace one as Normal", k8sEvents)
	}
}

// TestRecorderRetries: a 4xx answer (429: the receiver has the event) is
// final, a 503 is retried.
func TestRecorderRetries(t *testing.T) {
	s, srv := newSink(func(reason string) int {
		if reason == "Unavailable" {
			return http.StatusServiceUnavailable
		}
		if reason == "Duplicate" {
			return http.StatusTooManyRequests
		}
		return http.StatusAccepted
	})
	defer srv.Close()
	rec := newRecorder(t, record.NewFakeRecorder(10), srv.URL)
	rec.Event(newObj(), corev1.EventTypeNormal, "Duplicate", "stored", nil)
	rec.Event(newObj(), corev1.EventTypeNormal, "Marker", "after the duplicate", nil)
	s.wait(t, "Marker", 1) // one worker: Duplicate's retries, if any, are over
	s.mu.Lock()
	hits := s.hits["Duplicate"]
	s.mu.Unlock()
	if hits != 1 {
		t.Errorf("a 429 answer was retried: %d requests", hits)
	}
	rec.Event(newObj(), corev1.EventTypeNormal, "Unavailable", "stored", nil)
	s.wait(t, "Unavailable", 2)
}

// TestRecorderNeverBlocks: with the notification-controller not answering,
// a burst of 5,000 events returns at once from every Event call, keeps the
// goroutine count bounded (no goroutine per event) and counts the events
// the full queue dropped.
func TestRecorderNeverBlocks(t *testing.T) {
	const burst, workers, size = 5000, 2, 8
	entered := make(chan struct{}, burst)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		<-release
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	defer close(release)
	rec := events.NewRecorderSized(record.NewFakeRecorder(burst+2), newScheme(), srv.URL, "source-controller", logr.Discard(), workers, size)
	defer rec.Close()
	// Both workers are held by the server: the queue only fills from now on.
	rec.Event(newObj(), corev1.EventTypeNormal, "Held", "1", nil)
	rec.Event(newObj(), corev1.EventTypeNormal, "Held", "2", nil)
	<-entered
	<-entered

	dropped := events.Dropped("recorder")
	before := runtime.NumGoroutine()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range burst {
			rec.Event(newObj(), corev1.EventTypeWarning, "Failed", strings.Repeat("x", i%100), nil)
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute): // a hang, not a timing: the calls do not wait on the network
		t.Fatal("Recorder.Event blocked with the queue full")
	}
	after := runtime.NumGoroutine()
	got := events.Dropped("recorder") - dropped
	t.Logf("burst of %d events, server not answering: goroutines %d before, %d after; %v dropped", burst, before, after, got)
	if after > before+workers {
		t.Errorf("goroutines grew from %d to %d: a goroutine per event", before, after)
	}
	if got != burst-size {
		t.Errorf("dropped %v events, want %d (the queue holds %d)", got, burst-size, size)
	}
}

func TestRecorderCutsOnRuneBoundary(t *testing.T) {
	s, srv := newSink(accept)
	defer srv.Close()
	rec := newRecorder(t, record.NewFakeRecorder(10), srv.URL)
	long := strings.Repeat("é", events.MaxMessageLength+10) // 2 bytes each
	rec.Event(newObj(), corev1.EventTypeNormal, "Long", long, nil)
	evs := s.wait(t, "Long", 1)
	msg := evs[0].Message
	if !utf8.ValidString(msg) || utf8.RuneCountInString(msg) != events.MaxMessageLength {
		t.Errorf("message of %d bytes, %d runes, valid UTF-8 %v: want %d whole characters",
			len(msg), utf8.RuneCountInString(msg), utf8.ValidString(msg), events.MaxMessageLength)
	}
}

func TestTruncate(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{{"abc", 5, "abc"}, {"abcdef", 3, "abc"}, {"héllo", 2, "hé"}, {"日本語", 1, "日"}, {"abc", 0, ""}} {
		if got := events.Truncate(c.in, c.n); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// TestQueue: jobs beyond the running and the queued ones are dropped and
// counted; Add never blocks; the queued jobs run once workers are free and
// Wait returns when they have; Close ends running jobs' context.
func TestQueue(t *testing.T) {
	q := events.NewQueue("test", 2, 3)
	started := make(chan int, 10)
	release := make(chan struct{})
	job := func(i int) func(context.Context) {
		return func(ctx context.Context) {
			started <- i
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
	}
	dropped := events.Dropped("test")
	for i := range 2 {
		if !q.Add(job(i)) {
			t.Fatalf("job %d refused with idle workers", i)
		}
	}
	<-started
	<-started // both workers busy
	for i := 2; i < 5; i++ {
		if !q.Add(job(i)) {
			t.Fatalf("job %d refused with room in the queue", i)
		}
	}
	if q.Add(job(5)) || q.Add(job(6)) {
		t.Error("a full queue took a job")
	}
	if got := events.Dropped("test") - dropped; got != 2 {
		t.Errorf("dropped counter rose by %v, want 2", got)
	}
	close(release)
	q.Wait() // a barrier: every job taken has run
	close(started)
	seen := map[int]bool{}
	for i := range started {
		seen[i] = true
	}
	if len(seen) != 3 || !seen[2] || !seen[3] || !seen[4] {
		t.Errorf("queued jobs run: %v, want 2, 3 and 4", seen)
	}

	q2 := events.NewQueue("test", 1, 1)
	hold := make(chan struct{})
	q2.Add(func(ctx context.Context) { close(hold); <-ctx.Done() })
	<-hold
	q2.Close() // returns: the running job's context ended
	if q2.Add(func(context.Context) {}) {
		t.Error("a closed queue took a job")
	}
	q.Close()
}

// TestRecorderPostsActionAndRelatedObject: the event.toolkit.fluxcd.io/v1
// fields. The action comes from the controller's table by reason (else its
// default), WithAction overrides it for one call site, and WithRelated
// names a relatedObject; the body carries `action` as a JSON key.
func TestRecorderPostsActionAndRelatedObject(t *testing.T) {
	var mu sync.Mutex
	var raw []map[string]any
	s, srv := newSink(accept)
	defer srv.Close()
	tee := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m map[string]any
		_ = json.Unmarshal(body, &m)
		mu.Lock()
		raw = append(raw, m)
		mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		s.ServeHTTP(w, r)
	}))
	defer tee.Close()
	rec := newRecorder(t, record.NewFakeRecorder(10), tee.URL).WithActions(events.ActionTable(sourcev1.ActionReconcile,
		map[string]sourcev1.Action{"ArtifactVerificationFailed": sourcev1.ActionReconcileStorage}))

	src := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: "origin", Namespace: "apps", UID: "99"}}
	rec.Event(newObj(), corev1.EventTypeNormal, "NewArtifact", "stored", nil)
	rec.Event(newObj(), corev1.EventTypeWarning, "ArtifactVerificationFailed", "bad digest", nil)
	rec.WithAction(sourcev1.ActionGarbageCollect.String()).WithRelated(src).Event(newObj(), corev1.EventTypeNormal, "Marker", "collected", nil)
	// The override is a copy: the table still applies to rec.
	rec.Event(newObj(), corev1.EventTypeNormal, "Last", "after the override", nil)

	evs := s.wait(t, "Last", 1)
	got := map[string]string{}
	for _, e := range evs {
		got[e.Reason] = e.Action
	}
	want := map[string]string{"NewArtifact": "Reconcile", "ArtifactVerificationFailed": "ReconcileStorage", "Marker": "GarbageCollect", "Last": "Reconcile"}
	for reason, action := range want {
		if got[reason] != action {
			t.Errorf("%s: action %q, want %q", reason, got[reason], action)
		}
	}
	for _, e := range evs {
		if e.Reason != "Marker" && e.RelatedObject != nil {
			t.Errorf("%s: relatedObject %+v, want none", e.Reason, e.RelatedObject)
		}
	}
	wantRel := corev1.ObjectReference{Kind: "GitRepository", APIVersion: "source.toolkit.fluxcd.io/v1", Namespace: "apps", Name: "origin", UID: "99"}
	if rel := evs[2].RelatedObject; evs[2].Reason != "Marker" || rel == nil || *rel != wantRel {
		t.Errorf("Marker: relatedObject %+v, want %+v", rel, wantRel)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, m := range raw {
		if _, ok := m["action"]; !ok {
			t.Errorf("posted body without an action key: %v", m)
		}
		if _, ok := m["relatedObject"]; ok && m["reason"] != "Marker" {
			t.Errorf("posted body with a relatedObject key: %v", m)
		}
	}
}

// annotationsRecorder keeps the annotations of each Kubernetes Event.
type annotationsRecorder struct {
	record.EventRecorder
	mu          sync.Mutex
	annotations []map[string]string
}

func (a *annotationsRecorder) AnnotatedEventf(_ k8sruntime.Object, annotations map[string]string, _, _, _ string, _ ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.annotations = append(a.annotations, annotations)
}

func TestWithAnnotationsReachTheKubernetesEventOnly(t *testing.T) {
	s, srv := newSink(accept)
	defer srv.Close()
	k8s := &annotationsRecorder{}
	rec := newRecorder(t, k8s, srv.URL)

	rev := map[string]string{"source.toolkit.fluxcd.io/revision": "main@sha1:abc"}
	rec.WithAnnotations(map[string]string{"eddy.dev/drift": "[]"}).Event(newObj(), corev1.EventTypeNormal, "DriftCorrected", "drifted", rev)
	rec.Event(newObj(), corev1.EventTypeNormal, "Marker", "without annotations", nil)

	evs := s.wait(t, "Marker", 1)
	if _, ok := evs[0].Metadata["eddy.dev/drift"]; ok || evs[0].Metadata["source.toolkit.fluxcd.io/revision"] != "main@sha1:abc" {
		t.Errorf("posted metadata %v: want the revision and no eddy.dev/drift", evs[0].Metadata)
	}
	k8s.mu.Lock()
	defer k8s.mu.Unlock()
	if got := k8s.annotations[0]; got["eddy.dev/drift"] != "[]" || got["source.toolkit.fluxcd.io/revision"] != "main@sha1:abc" || got["event.toolkit.fluxcd.io/team"] != "apps" {
		t.Errorf("Kubernetes Event annotations %v: want the metadata and eddy.dev/drift", got)
	}
	if _, ok := k8s.annotations[1]["eddy.dev/drift"]; ok {
		t.Errorf("the recorder itself kept the annotation: %v", k8s.annotations[1])
	}
}
