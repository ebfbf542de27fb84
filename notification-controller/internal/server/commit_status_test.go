package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/notification-controller/internal/notifier"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestCommitStatusExprNamesTheStatus: a github Provider's commitStatusExpr
// over `event` (metadata as presented, the Alert's eventMetadata merged),
// `alert` and `provider` is the status context GitHub receives; an
// expression that fails to evaluate delivers nothing and records Flux's
// NotificationDispatchFailed Warning on the Alert; without one the default
// `<kind>/<name>/<uid segment>` stays.
func TestCommitStatusExprNamesTheStatus(t *testing.T) {
	var mu sync.Mutex
	var contexts []string
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var st map[string]string
		if r.Method == http.MethodPost && json.Unmarshal(body, &st) == nil {
			mu.Lock()
			contexts = append(contexts, st["context"])
			mu.Unlock()
		}
		w.WriteHeader(http.StatusCreated)
	}))
	defer gh.Close()
	a := &notificationv1.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "al", UID: "alert-uid"},
		Spec: notificationv1.AlertSpec{ProviderRef: meta.LocalObjectReference{Name: "gh"}, EventMetadata: map[string]string{"cluster": "prod-eu"},
			EventSources: []notificationv1.CrossNamespaceObjectReference{{Kind: "Kustomization", Name: "apps"}}}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "gh"}, Data: map[string][]byte{"token": []byte("ghp")}}
	c := fake.NewClientBuilder().WithScheme(fuzzScheme(t)).WithObjects(a, sec).Build()
	rec := record.NewFakeRecorder(10)
	s := NewEventServer(c, c, rec, 0, logr.Discard())
	s.Retry = &notifier.Retry{Max: 0}
	defer s.Close()
	ev := ksEvent("a", "apps", "error", map[string]string{"kustomize.toolkit.fluxcd.io/revision": "main@sha1:0123456789abcdef0123456789abcdef01234567"})
	deliver := func(expr string) {
		p := &notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "gh", UID: "4e8a9c1d-aaaa"},
			Spec: notificationv1.ProviderSpec{Type: "github", Address: gh.URL + "/acme/app", SecretRef: &meta.LocalObjectReference{Name: "gh"}, CommitStatusExpr: expr}}
		shown, _ := presented(ev, a)
		s.dispatch(context.Background(), target{alert: a, provider: p, event: shown})
	}
	deliver(`event.metadata.cluster + '/' + event.involvedObject.kind + '/' + event.involvedObject.name + '/' + alert.metadata.name + '/' + provider.spec.type`)
	deliver(``)
	deliver(`event.metadata.missing`)
	deliver(`string(event.metadata.missing)`)
	mu.Lock()
	got := strings.Join(contexts, " ")
	mu.Unlock()
	if got != "prod-eu/Kustomization/apps/al/github kustomization/apps/4e8a9c1d" {
		t.Errorf("contexts %q", got)
	}
	for _, want := range []string{"CEL expression output type mismatch: expected string, got dyn", "no such key: missing"} {
		select {
		case e := <-rec.Events:
			if !strings.HasPrefix(e, "Warning NotificationDispatchFailed failed to dispatch notification for Kustomization/a/apps: failed to create commit status: "+
				"failed to evaluate the spec.commitStatusExpr CEL expression for the event: ") || !strings.Contains(e, want) {
				t.Errorf("event %q, want one containing %q", e, want)
			}
		default:
			t.Errorf("no Warning event for %q", want)
		}
	}
}
