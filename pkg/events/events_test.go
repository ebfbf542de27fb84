package events_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/events"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

type sink struct {
	mu     sync.Mutex
	events []events.Event
	hits   int
	status int
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var ev events.Event
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hits++
	if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &ev) != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	s.events = append(s.events, ev)
	w.WriteHeader(s.status)
}

func (s *sink) wait(t *testing.T, hits int) []events.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s.mu.Lock()
		n, evs := s.hits, append([]events.Event(nil), s.events...)
		s.mu.Unlock()
		if n >= hits || time.Now().After(deadline) {
			return evs
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func newObj() *sourcev1.GitRepository {
	return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{
		Name: "podinfo", Namespace: "flux-system", UID: "1234", ResourceVersion: "7",
		Annotations: map[string]string{"event.toolkit.fluxcd.io/team": "apps", "unrelated": "x"},
	}}
}

func TestRecorderPostsFluxEventJSON(t *testing.T) {
	s := &sink{status: http.StatusAccepted}
	srv := httptest.NewServer(s)
	defer srv.Close()
	scheme := runtime.NewScheme()
	_ = sourcev1.AddToScheme(scheme)
	k8s := record.NewFakeRecorder(10)
	rec := events.NewRecorder(k8s, scheme, srv.URL, "source-controller", logr.Discard())

	rev := map[string]string{"source.toolkit.fluxcd.io/revision": "main@sha1:abc"}
	rec.Event(newObj(), corev1.EventTypeNormal, "NewArtifact", "stored artifact for commit 'first'", rev)
	rec.Event(newObj(), corev1.EventTypeWarning, "GitOperationFailed", "failed to checkout", nil)
	rec.Event(newObj(), events.EventTypeTrace, "ArtifactUpToDate", "artifact up-to-date", nil)

	evs := s.wait(t, 2)
	time.Sleep(100 * time.Millisecond) // a trace event would have arrived by now
	if len(evs) != 2 {
		t.Fatalf("webhook received %d events, want 2 (no trace event)", len(evs))
	}
	byReason := map[string]events.Event{}
	for _, e := range evs {
		byReason[e.Reason] = e
	}
	info := byReason["NewArtifact"]
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
	if byReason["GitOperationFailed"].Severity != "error" {
		t.Errorf("warning event severity %q, want error", byReason["GitOperationFailed"].Severity)
	}
	var k8sEvents []string
	for len(k8s.Events) > 0 {
		k8sEvents = append(k8sEvents, <-k8s.Events)
	}
	if len(k8sEvents) != 3 || !strings.HasPrefix(k8sEvents[2], "Normal ArtifactUpToDate") {
		t.Errorf("Kubernetes events %q: want all three, the trace one as Normal", k8sEvents)
	}
}

func TestRecorderDoesNotRetryRejectedEvents(t *testing.T) {
	s := &sink{status: http.StatusTooManyRequests}
	srv := httptest.NewServer(s)
	defer srv.Close()
	scheme := runtime.NewScheme()
	_ = sourcev1.AddToScheme(scheme)
	rec := events.NewRecorder(record.NewFakeRecorder(10), scheme, srv.URL, "source-controller", logr.Discard())
	rec.Event(newObj(), corev1.EventTypeNormal, "NewArtifact", "stored", nil)
	s.wait(t, 1)
	time.Sleep(1500 * time.Millisecond) // past the first retry delay
	s.mu.Lock()
	hits := s.hits
	s.mu.Unlock()
	if hits != 1 {
		t.Errorf("a 429 answer was retried: %d requests", hits)
	}

	s2 := &sink{status: http.StatusServiceUnavailable}
	srv2 := httptest.NewServer(s2)
	defer srv2.Close()
	rec = events.NewRecorder(record.NewFakeRecorder(10), scheme, srv2.URL, "source-controller", logr.Discard())
	rec.Event(newObj(), corev1.EventTypeNormal, "NewArtifact", "stored", nil)
	if got := len(s2.wait(t, 2)); got < 1 {
		t.Fatalf("no event received")
	}
	s2.mu.Lock()
	defer s2.mu.Unlock()
	if s2.hits < 2 {
		t.Errorf("a 503 answer was not retried: %d requests", s2.hits)
	}
}
