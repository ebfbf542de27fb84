package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/webhook"
	"github.com/fluxcd/pkg/apis/meta"
	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// readyReceiver is a Ready generic Receiver in flux-system using Secret
// "token", with status.webhookPath set to path.
func readyReceiver(name, path string, resources ...notificationv1.CrossNamespaceObjectReference) *notificationv1.Receiver {
	r := &notificationv1.Receiver{
		ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: name},
		Spec:       notificationv1.ReceiverSpec{Type: notificationv1.GenericReceiver, SecretRef: &meta.LocalObjectReference{Name: "token"}},
		Status: notificationv1.ReceiverStatus{WebhookPath: path, Conditions: []metav1.Condition{{
			Type: meta.ReadyCondition, Status: metav1.ConditionTrue, Reason: meta.SucceededReason, LastTransitionTime: metav1.Now()}}},
	}
	for _, res := range resources {
		r.Spec.Resources = append(r.Spec.Resources, notificationv1.ReceiverResource{CrossNamespaceObjectReference: res})
	}
	return r
}

func gitRepo(ns, name string) *sourcev1.GitRepository {
	return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/app.git", Interval: metav1.Duration{Duration: time.Minute}}}
}

func receiverServer(t *testing.T, objs ...client.Object) (*ReceiverServer, client.Client) {
	t.Helper()
	objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "flux-system", Name: "token"},
		Data: map[string][]byte{"token": []byte(fuzzToken)}})
	c := fake.NewClientBuilder().WithScheme(fuzzScheme(t)).WithObjects(objs...).
		WithIndex(&notificationv1.Receiver{}, WebhookPathIndex, IndexWebhookPath).Build()
	return &ReceiverServer{Client: c, Secrets: c, Log: logr.Discard()}, c
}

func requested(t *testing.T, c client.Client, ns, name string) bool {
	t.Helper()
	obj := &sourcev1.GitRepository{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	return obj.Annotations[meta.ReconcileRequestAnnotation] != ""
}

// TestReceiverRequestsEveryResource: failing resources[] entries (missing
// object, cross-namespace refused, Kustomization without apiVersion) do
// not stop the others from being annotated; the answer is 500 and names
// each failed entry, and carries no token.
func TestReceiverRequestsEveryResource(t *testing.T) {
	path := webhook.Path(fuzzToken, "multi", "flux-system")
	rcv := readyReceiver("multi", path,
		notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "deleted"},
		notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "app"},
		notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "other", Namespace: "team-b"},
		notificationv1.CrossNamespaceObjectReference{Kind: "Kustomization", Name: "apps"},
		notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "last"},
	)
	s, c := receiverServer(t, rcv, gitRepo("flux-system", "app"), gitRepo("flux-system", "last"), gitRepo("team-b", "other"))
	s.NoCrossNamespaceRefs = true
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}")))
	body := w.Body.String()
	if w.Code != http.StatusInternalServerError {
		t.Errorf("answered %d %q, want 500", w.Code, body)
	}
	if !requested(t, c, "flux-system", "app") || !requested(t, c, "flux-system", "last") {
		t.Error("the resources that exist were not asked to reconcile")
	}
	if requested(t, c, "team-b", "other") {
		t.Error("a cross-namespace resource was annotated with --no-cross-namespace-refs")
	}
	for _, want := range []string{`GitRepository/flux-system/deleted: gitrepositories.source.toolkit.fluxcd.io "deleted" not found`, "GitRepository/team-b/other: cross-namespace",
		"Kustomization/flux-system/apps: apiVersion is required", "reconcile requested for 2 resources; failed for 3"} {
		if !strings.Contains(body, want) {
			t.Errorf("answer %q does not contain %q", body, want)
		}
	}
	if strings.Contains(body, fuzzToken) {
		t.Errorf("answer %q carries the token", body)
	}
}

// TestReceiverFoundByStatusPath: the server serves status.webhookPath, as
// Flux does, even when the Secret already holds a rotated token; a path
// computed from the new token is unknown until the reconciler writes it.
func TestReceiverFoundByStatusPath(t *testing.T) {
	oldPath := webhook.Path("old-token", "rot", "flux-system")
	s, c := receiverServer(t, readyReceiver("rot", oldPath,
		notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "app"}), gitRepo("flux-system", "app"))
	newPath := webhook.Path(fuzzToken, "rot", "flux-system")
	w := httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, newPath, strings.NewReader("{}")))
	if w.Code != http.StatusNotFound {
		t.Errorf("a path not in any status answered %d, want 404", w.Code)
	}
	w = httptest.NewRecorder()
	s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, oldPath, strings.NewReader("{}")))
	if w.Code != http.StatusOK || !requested(t, c, "flux-system", "app") {
		t.Errorf("status.webhookPath answered %d %q, want 200 and a reconcile request", w.Code, w.Body)
	}
}

// TestResourceFiltersSelectResources: resourceFilter and a resource's own
// filter both decide, over `res` (the object's metadata) and `req` (the
// JSON body): resources they reject are skipped and the answer is 200; a
// body that is not JSON leaves `req` empty, so a filter reading it fails
// to evaluate (500, naming the resource); invalid JSON is a 500 too.
func TestResourceFiltersSelectResources(t *testing.T) {
	path := webhook.Path(fuzzToken, "cel", "flux-system")
	rcv := readyReceiver("cel", path,
		notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "app"},
		notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "api"},
		notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "web"},
		notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "assets"},
	)
	rcv.Spec.ResourceFilter = `res.kind == 'GitRepository' && res.metadata.name.startsWith(req.prefix)`
	rcv.Spec.Resources[1].Filter = `req.tag != 'latest'`
	s, c := receiverServer(t, rcv, gitRepo("flux-system", "app"), gitRepo("flux-system", "api"), gitRepo("flux-system", "web"), gitRepo("flux-system", "assets"))
	serve := func(body, contentType string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		r.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		return w
	}
	if w := serve(`{"prefix":"a","tag":"latest"}`, "application/json; charset=utf-8"); w.Code != http.StatusOK {
		t.Fatalf("answered %d %q", w.Code, w.Body)
	}
	for name, want := range map[string]bool{"app": true, "api": false, "web": false, "assets": true} {
		if requested(t, c, "flux-system", name) != want {
			t.Errorf("%s requested: %v, want %v", name, !want, want)
		}
	}
	w := serve(`{"prefix":"a"}`, "text/plain")
	if w.Code != http.StatusInternalServerError || !strings.Contains(w.Body.String(), "GitRepository/flux-system/app: failed to evaluate the CEL expression") ||
		!strings.Contains(w.Body.String(), "no such key: prefix") {
		t.Errorf("filter over an empty req answered %d %q", w.Code, w.Body)
	}
	if w := serve(`{"prefix":`, "application/json"); w.Code != http.StatusInternalServerError ||
		!strings.Contains(w.Body.String(), "unable to create resource filters: failed to parse request body as JSON") {
		t.Errorf("invalid JSON answered %d %q", w.Code, w.Body)
	}
}
