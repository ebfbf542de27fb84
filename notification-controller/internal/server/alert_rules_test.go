package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	kustomizev1 "github.com/eddyops/eddy/api/kustomize/v1"
	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/notification-controller/internal/notifier"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestInvalidRegexpSkipped: an invalid regexp in inclusionList or
// exclusionList is reported and skipped; the valid ones still decide
// (Flux's messageIsIncluded/messageIsExcluded).
func TestInvalidRegexpSkipped(t *testing.T) {
	const msg = "Reconciliation finished in 1s"
	for _, tc := range []struct {
		name               string
		inclusion, exclude []string
		want               bool
		invalid            int
	}{
		{"exclusion: invalid, no match", nil, []string{"(unclosed", "^never$"}, true, 1},
		{"exclusion: invalid, then a match", nil, []string{"(unclosed", "finished"}, false, 1},
		{"inclusion: invalid, then a match", []string{"(unclosed", "finished"}, nil, true, 1},
		{"inclusion: invalid, no match", []string{"(unclosed", "^never$"}, nil, false, 1},
		{"inclusion: only invalid ones", []string{"(unclosed", "[z-a]"}, nil, false, 2},
		{"both valid", []string{"finished"}, []string{"^never$"}, true, 0},
	} {
		a := &notificationv1.Alert{Spec: notificationv1.AlertSpec{InclusionList: tc.inclusion, ExclusionList: tc.exclude}}
		ok, invalid := messageMatches(a, msg)
		if ok != tc.want || len(invalid) != tc.invalid {
			t.Errorf("%s: deliver %v with %d invalid (%q), want %v with %d", tc.name, ok, len(invalid), invalid, tc.want, tc.invalid)
		}
		for _, m := range invalid {
			if !strings.Contains(m, "invalid regexp") {
				t.Errorf("%s: report %q does not say the regexp is invalid", tc.name, m)
			}
		}
	}
}

// TestInvalidRegexpReportedAndDelivered: through the event server, an
// Alert with one invalid exclusion regexp still matches the event and
// gets an InvalidConfig Warning naming the regexp.
func TestInvalidRegexpReportedAndDelivered(t *testing.T) {
	a := &notificationv1.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "al"},
		Spec: notificationv1.AlertSpec{ProviderRef: meta.LocalObjectReference{Name: "p"}, ExclusionList: []string{"(unclosed", "^never$"},
			EventSources: []notificationv1.CrossNamespaceObjectReference{{Kind: "Kustomization", Name: "x"}}}}
	p := &notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"},
		Spec: notificationv1.ProviderSpec{Type: "generic", Address: "http://127.0.0.1:1"}}
	c := fake.NewClientBuilder().WithScheme(fuzzScheme(t)).WithObjects(a, p).Build()
	rec := record.NewFakeRecorder(10)
	s := NewEventServer(c, c, rec, 0, logr.Discard())
	ts, err := s.match(context.Background(), ksEvent("a", "x", "info", nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 {
		t.Errorf("%d deliveries, want 1", len(ts))
	}
	select {
	case e := <-rec.Events:
		if !strings.HasPrefix(e, "Warning "+InvalidConfigReason) || !strings.Contains(e, `"(unclosed"`) {
			t.Errorf("event %q", e)
		}
	default:
		t.Error("no InvalidConfig event")
	}
}

// TestProviderSecretTrimmed: `address` and `token` with a trailing newline
// (kubectl create secret --from-file) are trimmed, as in Flux: the request
// reaches the address and carries the token without the newline.
func TestProviderSecretTrimmed(t *testing.T) {
	var mu sync.Mutex
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"), r.Header.Get("X-Signature"))
		mu.Unlock()
		if r.URL.Path != "/hook" {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "s"},
		Data: map[string][]byte{"address": []byte(" " + srv.URL + "/hook\n"), "token": []byte("tok\n")}}
	c := fake.NewClientBuilder().WithScheme(fuzzScheme(t)).WithObjects(sec).Build()
	s := NewEventServer(c, c, nil, time.Minute, logr.Discard())
	s.Retry = &notifier.Retry{Max: 0}
	for _, typ := range []string{"generic", "slack", "generic-hmac"} {
		p := &notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "p"},
			Spec: notificationv1.ProviderSpec{Type: typ, SecretRef: &meta.LocalObjectReference{Name: "s"}}}
		n, err := s.notifier(context.Background(), p)
		if err != nil {
			t.Errorf("%s: %v", typ, err)
			continue
		}
		if err := n.Post(context.Background(), ksEvent("a", "x", "info", nil)); err != nil {
			t.Errorf("%s: %v", typ, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(auth, "Bearer tok") {
		t.Errorf("slack Authorization headers %q, want one to be %q", auth, "Bearer tok")
	}
	for _, h := range auth {
		if strings.Contains(h, "\n") {
			t.Errorf("header %q carries the newline", h)
		}
	}
}

// TestNamedSourceWithMatchLabels: an eventSource with a fixed name and
// matchLabels needs both to match (Flux's eventMatchesAlertSource).
func TestNamedSourceWithMatchLabels(t *testing.T) {
	sch := fuzzScheme(t)
	if err := kustomizev1.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	ks := func(name string, labels map[string]string) *kustomizev1.Kustomization {
		return &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name, Labels: labels},
			Spec: kustomizev1.KustomizationSpec{Interval: metav1.Duration{Duration: time.Minute}}}
	}
	a := &notificationv1.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "al"},
		Spec: notificationv1.AlertSpec{ProviderRef: meta.LocalObjectReference{Name: "p"},
			EventSources: []notificationv1.CrossNamespaceObjectReference{
				{Kind: "Kustomization", Name: "web", MatchLabels: map[string]string{"team": "web"}},
				{Kind: "Kustomization", Name: "db", MatchLabels: map[string]string{"team": "web"}},
			}}}
	c := fake.NewClientBuilder().WithScheme(sch).WithObjects(
		ks("web", map[string]string{"team": "web"}), ks("db", map[string]string{"team": "db"}), ks("other", map[string]string{"team": "web"})).Build()
	s := NewEventServer(c, c, nil, 0, logr.Discard())
	for name, want := range map[string]bool{"web": true, "db": false, "other": false} {
		if got := s.sourceMatches(context.Background(), a, ksEvent("a", name, "info", nil)); got != want {
			t.Errorf("Kustomization %s: matches %v, want %v", name, got, want)
		}
	}
}
