package controller

import (
	"net/http"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	sourcev1 "github.com/eddyops/eddy/api/source/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestBinaryGenericOIDCReceiver: with the built binary, a generic-oidc
// Receiver (no Secret) is served at the path of its name and namespace; a
// CI job's ID token from the trusted issuer, for the default audience and
// passing the validations, requests the resource the filter picks by its
// claims; a token of another repository owner is refused (400) and
// requests nothing.
func TestBinaryGenericOIDCReceiver(t *testing.T) {
	post := binaryReceiver(t, "rcvoidc")
	ns := newNamespace(t)
	iss := testenv.NewOIDCIssuer(t)
	repo := func(name string) *sourcev1.GitRepository {
		return &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: sourcev1.GitRepositorySpec{URL: "https://example.com/app.git", Interval: metav1.Duration{Duration: time.Hour}, Suspend: true}}
	}
	app, other := repo("app"), repo("other")
	r := receiver(ns, "ci", notificationv1.GenericOIDCReceiver, "",
		notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: "app"},
		notificationv1.CrossNamespaceObjectReference{Kind: sourcev1.GitRepositoryKind, Name: "other"})
	r.Spec.SecretRef = nil
	r.Spec.ResourceFilter = "res.metadata.name == claims.repository.split('/')[1]"
	r.Spec.OIDCProviders = []notificationv1.OIDCProvider{{IssuerURL: iss.URL,
		Validations: []notificationv1.OIDCValidation{{Expression: "claims.repository_owner == 'acme'", Message: "only acme's workflows"}}}}
	r.SetLabels(map[string]string{shardKey: "rcvoidc"})
	create(t, app, other, client.Object(r))
	path := waitServed(t, r, "", post)

	claims := map[string]any{"aud": "notification-controller", "repository_owner": "mallory", "repository": "mallory/app"}
	if code := post(path, []byte("{}"), map[string]string{"Authorization": "Bearer " + iss.Token(t, claims)}); code != http.StatusBadRequest {
		t.Errorf("another owner's token answered %d, want 400", code)
	}
	if v := requestedAt(t, app); v != "" {
		t.Fatalf("a refused token requested a reconcile: %q", v)
	}
	claims["repository_owner"], claims["repository"] = "acme", "acme/app"
	if code := post(path, []byte("{}"), map[string]string{"Authorization": "Bearer " + iss.Token(t, claims)}); code != http.StatusOK {
		t.Fatalf("the trusted token answered %d, want 200", code)
	}
	if requestedAt(t, app) == "" {
		t.Error("app has no reconcile request")
	}
	if v := requestedAt(t, other); v != "" {
		t.Errorf("the filter on the claims did not skip other: %q", v)
	}
}
