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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestHealthyProviderNotStarvedByDeadOne: with one delivery queue (8
// workers, 512 places) for every Provider, Providers whose endpoints hang
// (each delivery holds a worker for the Provider's timeout, 15s by
// default) would fill the queue, and the deliveries to a healthy Provider
// behind them would be dropped while the event server still answers 202.
// Here: a burst of as many events as one Provider may have pending
// (ProviderInFlight + ProviderWaiting), each matching an Alert to a
// healthy Provider and one to each of three hanging Providers (timeout
// 50ms to keep the test short); every event must reach the healthy one.
// The burst fits the healthy Provider's own lane however slowly the
// machine delivers, so only the hanging Providers can crowd it out.
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
	objs := []client.Object{alert("to-healthy", "healthy"), provider("healthy", ok.URL, 15*time.Second)}
	for i := range 3 {
		dead := fmt.Sprintf("dead-%d", i)
		objs = append(objs, alert("to-"+dead, dead), provider(dead, hang.URL, 50*time.Millisecond))
	}
	c := fake.NewClientBuilder().WithScheme(fuzzScheme(t)).WithObjects(objs...).Build()
	s := NewEventServer(c, c, nil, 0, logr.Discard())
	s.Retry = &notifier.Retry{Max: 0}
	defer s.Close()

	const n = ProviderInFlight + ProviderWaiting
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
		t.Errorf("the healthy Provider received %d of %d events (answered 202 each); the rest were dropped behind the hanging Providers' deliveries", got, n)
	}
}
