package server

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/notification-controller/internal/notifier"
	"github.com/eddyops/eddy/pkg/webhook"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// The fuzz tests use controller-runtime's in-memory fake client: they
// exercise the HTTP handlers on arbitrary input, not the cluster, which
// the integration tests in internal/controller cover.

func fuzzScheme(t testing.TB) *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, notificationv1.AddToScheme,
		notificationv1.AddToScheme, sourcev1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

const fuzzEvent = `{"involvedObject":{"kind":"Kustomization","namespace":"flux-system","name":"apps","uid":"0c7a2b1e-1",` +
	`"apiVersion":"kustomize.toolkit.fluxcd.io/v1","resourceVersion":"42"},"severity":"error","timestamp":"2026-01-01T00:00:00Z",` +
	`"message":"kustomize build failed: accumulating resources","reason":"BuildFailed",` +
	`"metadata":{"kustomize.toolkit.fluxcd.io/revision":"main@sha1:0123456789abcdef0123456789abcdef01234567",` +
	`"kustomize.toolkit.fluxcd.io/token":"t","event.toolkit.fluxcd.io/cluster":"prod"},` +
	`"reportingController":"kustomize-controller","reportingInstance":"kc-0"}`

// FuzzEventHandler posts arbitrary bodies, methods, paths and headers to
// the event server: it must answer one of its documented codes, never
// panic, and keep its dedup memory within bounds.
func FuzzEventHandler(f *testing.F) {
	f.Add([]byte(fuzzEvent), "POST", "/", "application/json")
	f.Add([]byte(`{"involvedObject":{"kind":"GitRepository","namespace":"a","name":"b"},"severity":"info","message":"m"}`), "GET", "/x", "")
	f.Add([]byte(`{"involvedObject":{}}`), "PUT", "/", "text/plain")
	f.Add([]byte(`{"metadata":{"a/b":"c"},"involvedObject":{"apiVersion":"/","kind":"K","namespace":"n","name":"x"}}`), "POST", "/", "")
	f.Add([]byte("\x00\xff{"), "POST", "/", "application/json")

	sink := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer sink.Close()
	c := fake.NewClientBuilder().WithScheme(fuzzScheme(f)).WithObjects(
		&notificationv1.Provider{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "sink"},
			Spec: notificationv1.ProviderSpec{Type: "generic", Address: sink.URL}},
		&notificationv1.Alert{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "all"},
			Spec: notificationv1.AlertSpec{ProviderRef: meta.LocalObjectReference{Name: "sink"},
				EventSources:  []notificationv1.CrossNamespaceObjectReference{{Kind: "Kustomization", Name: "*"}},
				ExclusionList: []string{"^never$"}}},
	).Build()
	s := NewEventServer(c, c, nil, time.Minute, logr.Discard())
	s.dedup = newDedup(time.Minute, 64)
	defer s.Close()
	s.Retry = &notifier.Retry{Max: 0}
	f.Fuzz(func(t *testing.T, body []byte, method, path, contentType string) {
		if !validMethod(method) {
			method = http.MethodPost
		}
		req := httptest.NewRequest(method, "/", bytes.NewReader(body))
		req.URL.Path = path
		req.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		switch w.Code {
		case http.StatusAccepted, http.StatusBadRequest, http.StatusTooManyRequests, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("answered %d: %s", w.Code, w.Body)
		}
		if len(body) > MaxBodyBytes && w.Code != http.StatusRequestEntityTooLarge {
			t.Fatalf("a %d-byte body answered %d, want 413", len(body), w.Code)
		}
		if n := s.dedup.len(); n > 64 {
			t.Fatalf("dedup holds %d keys, more than 64", n)
		}
	})
}

func validMethod(m string) bool {
	switch m {
	case http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

const fuzzToken = "s3cr3t-token"

var fuzzTypes = []string{notificationv1.GenericReceiver, notificationv1.GenericHMACReceiver, notificationv1.GitHubReceiver, notificationv1.GitLabReceiver}

// fuzzReceivers returns a receiver server with one Ready Receiver of each
// supported type, all annotating the GitRepository flux-system/app.
func fuzzReceivers(t testing.TB) (*ReceiverServer, []string) {
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "token"}, Data: map[string][]byte{"token": []byte(fuzzToken)}},
		&sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "app"},
			Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/app.git", Interval: metav1.Duration{Duration: time.Minute}}},
	}
	var paths []string
	for _, typ := range fuzzTypes {
		path := webhook.Path(fuzzToken, typ, "flux-system")
		paths = append(paths, path)
		objs = append(objs, &notificationv1.Receiver{
			ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: typ},
			Spec: notificationv1.ReceiverSpec{Type: typ, Events: []string{"push", "Push Hook"}, SecretRef: &meta.LocalObjectReference{Name: "token"},
				Resources: []notificationv1.ReceiverResource{{CrossNamespaceObjectReference: notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "app"}}}},
			Status: notificationv1.ReceiverStatus{WebhookPath: path, Conditions: []metav1.Condition{{
				Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, LastTransitionTime: metav1.Now()}}},
		})
	}
	c := fake.NewClientBuilder().WithScheme(fuzzScheme(t)).WithObjects(objs...).
		WithIndex(&notificationv1.Receiver{}, WebhookPathIndex, IndexWebhookPath).Build()
	return &ReceiverServer{Client: c, Secrets: c, Log: logr.Discard()}, paths
}

func sign(body []byte) string {
	mac := hmac.New(sha256.New, []byte(fuzzToken))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// FuzzReceiverHandler sends arbitrary bodies and headers to each receiver
// type (and to unknown paths): no panic, only documented codes, and a 200
// only for a request that carries valid credentials for its type.
func FuzzReceiverHandler(f *testing.F) {
	push := []byte(`{"ref":"refs/heads/main","after":"0123456789abcdef0123456789abcdef01234567","repository":{"full_name":"acme/app"},"commits":[]}`)
	for i := range fuzzTypes {
		f.Add(uint8(i), push, "push", sign(push), fuzzToken)
		f.Add(uint8(i), push, "ping", "sha256=00", "wrong")
		f.Add(uint8(i), []byte{}, "", "", "")
	}
	f.Add(uint8(9), push, "push", sign(push), fuzzToken)
	f.Add(uint8(1), push, "push", "sha512="+strings.Repeat("ab", 64), fuzzToken)

	s, paths := fuzzReceivers(f)
	f.Fuzz(func(t *testing.T, which uint8, body []byte, event, signature, gitlabToken string) {
		path := "/hook/" + strings.Repeat("f", 64)
		typ := ""
		if int(which) < len(paths) {
			path, typ = paths[which], fuzzTypes[which]
		}
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		setIfValid(req.Header, "X-GitHub-Event", event)
		setIfValid(req.Header, "X-Gitlab-Event", event)
		setIfValid(req.Header, "X-Hub-Signature-256", signature)
		setIfValid(req.Header, "X-Signature", signature)
		setIfValid(req.Header, "X-Gitlab-Token", gitlabToken)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req.WithContext(context.Background()))
		switch w.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusNotFound, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("%s answered %d: %s", typ, w.Code, w.Body)
		}
		if typ == "" && w.Code != http.StatusNotFound {
			t.Fatalf("an unknown path answered %d", w.Code)
		}
		if w.Code != http.StatusOK {
			return
		}
		switch typ {
		case notificationv1.GitHubReceiver, notificationv1.GenericHMACReceiver:
			// Hex digits may be in either case; the MAC bytes are what count.
			if !strings.EqualFold(signature, sign(body)) && !strings.HasPrefix(signature, "sha1=") && !strings.HasPrefix(signature, "sha512=") {
				t.Fatalf("%s accepted signature %q for body %q", typ, signature, body)
			}
		case notificationv1.GitLabReceiver:
			if gitlabToken != fuzzToken {
				t.Fatalf("gitlab accepted token %q", gitlabToken)
			}
		}
	})
}

// setIfValid sets a header the way a client could send it: net/http
// refuses values with control characters.
func setIfValid(h http.Header, k, v string) {
	for _, r := range v {
		if r < 0x20 || r == 0x7f {
			return
		}
	}
	h.Set(k, v)
}

// TestBodyLimits: bodies over MaxBodyBytes are answered 413 by both servers.
func TestBodyLimits(t *testing.T) {
	big := bytes.Repeat([]byte("a"), MaxBodyBytes+1)
	c := fake.NewClientBuilder().WithScheme(fuzzScheme(t)).Build()
	w := httptest.NewRecorder()
	NewEventServer(c, c, nil, time.Minute, logr.Discard()).ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(big)))
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("event server answered %d, want 413", w.Code)
	}
	s, paths := fuzzReceivers(t)
	w = httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, paths[0], bytes.NewReader(big)))
	if w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("receiver server answered %d, want 413", w.Code)
	}
}
