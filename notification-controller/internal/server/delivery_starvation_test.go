package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/notification-controller/internal/notifier"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestHealthyProviderNotStarvedByDeadOne (adversarial review of issue
// #11): one delivery queue (8 workers, 512 places) serves every Provider,
// so a Provider whose endpoint hangs (a black-holed address; each delivery
// holds a worker for the Provider's timeout, 15s by default) fills the
// queue, and the deliveries to a healthy Provider behind it are dropped
// while the event server still answers 202. Before the change each
// delivery had its own goroutine and every event reached the healthy
// Provider. Here: 400 events, each matching one Alert to a healthy
// Provider and one to a hanging Provider (timeout 200ms to keep the test
// short); every event must reach the healthy one.
func TestHealthyProviderNotStarvedByDeadOne(t *testing.T) {
	var healthy atomic.Int64
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { healthy.Add(1) }))
	defer ok.Close()
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer hang.Close()
	defer close(release)

	src := []notificationv1.CrossNamespaceObjectReference{{Kind: "Kustomization", Name: "x"}}
	alert := func(name, provider string) *notificationv1.Alert {
		return &notificationv1.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name},
			Spec: notificationv1.AlertSpec{ProviderRef: meta.LocalObjectReference{Name: provider}, EventSources: src}}
	}
	provider := func(name, addr string, timeout time.Duration) *notificationv1.Provider {
		return &notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, UID: types.UID("uid-" + name)},
			Spec: notificationv1.ProviderSpec{Type: "generic", Address: addr, Timeout: &metav1.Duration{Duration: timeout}}}
	}
	c := fake.NewClientBuilder().WithScheme(fuzzScheme(t)).WithObjects(
		alert("to-healthy", "healthy"), alert("to-dead", "dead"),
		provider("healthy", ok.URL, 15*time.Second), provider("dead", hang.URL, 200*time.Millisecond)).Build()
	s := NewEventServer(c, c, nil, 0, logr.Discard())
	s.Retry = &notifier.Retry{Max: 0}
	defer s.Close()

	const n = 400
	for i := range n {
		ev := ksEvent("a", "x", "info", nil)
		ev.Message = fmt.Sprintf("Reconciliation finished in %dms", i)
		ev.Timestamp = metav1.Now()
		body, _ := json.Marshal(ev)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body)))
		if w.Code != http.StatusAccepted {
			t.Fatalf("event %d answered %d", i, w.Code)
		}
	}
	s.Wait()
	if got := healthy.Load(); got != n {
		t.Errorf("the healthy Provider received %d of %d events (answered 202 each); the rest were dropped behind the hanging Provider's deliveries", got, n)
	}
}
