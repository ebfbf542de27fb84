package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
	"github.com/eddyops/eddy/pkg/testenv"
	"github.com/eddyops/eddy/pkg/webhook"
	"github.com/fluxcd/pkg/apis/meta"
)

// oidcReceiver is a Ready generic-oidc Receiver trusting iss for tokens of
// repository owner acme (through a variable), whose resourceFilter reads
// the claims.
func oidcReceiver(iss string) *notificationv1.Receiver {
	path := webhook.Path("", "ci", "flux-system")
	rcv := readyReceiver("ci", path, notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "app"},
		notificationv1.CrossNamespaceObjectReference{Kind: "GitRepository", Name: "other"})
	rcv.Spec.Type, rcv.Spec.SecretRef = notificationv1.GenericOIDCReceiver, nil
	rcv.Spec.ResourceFilter = "res.metadata.name == claims.repository"
	rcv.Spec.OIDCProviders = []notificationv1.OIDCProvider{{IssuerURL: iss,
		Variables:   []notificationv1.OIDCVariable{{Name: "owner", Expression: "claims.repository_owner"}},
		Validations: []notificationv1.OIDCValidation{{Expression: "vars.owner == 'acme'", Message: "only acme's workflows"}}}}
	return rcv
}

// TestGenericOIDCTokenVerifiedAgainstTheIssuer: a bearer token signed by
// the issuer's key, for the default audience, whose claims pass the
// validations, requests the resources the filter picks by the claims;
// every other token is refused (400) with a message that names why and
// carries no token.
func TestGenericOIDCTokenVerifiedAgainstTheIssuer(t *testing.T) {
	iss, other := testenv.NewOIDCIssuer(t), testenv.NewOIDCIssuer(t)
	good := map[string]any{"aud": DefaultOIDCAudience, "sub": "repo:acme/app:ref:refs/heads/main", "repository_owner": "acme", "repository": "app"}
	with := func(k string, v any) map[string]any {
		c := map[string]any{}
		for key, val := range good {
			c[key] = val
		}
		c[k] = v
		return c
	}
	path := webhook.Path("", "ci", "flux-system")
	for _, c := range []struct {
		name, auth string
		code       int
		want       string
	}{
		{"trusted", "Bearer " + iss.Token(t, good), http.StatusOK, ""},
		{"no header", "", http.StatusBadRequest, "the Authorization header is missing or malformed"},
		{"not a JWT", "Bearer abc", http.StatusBadRequest, "failed to parse bearer token: token is not a JWT"},
		{"other audience", "Bearer " + iss.Token(t, with("aud", "sts.amazonaws.com")), http.StatusBadRequest, "failed to verify OIDC token"},
		{"expired", "Bearer " + iss.Token(t, with("exp", time.Now().Add(-time.Hour).Unix())), http.StatusBadRequest, "token is expired"},
		{"validation fails", "Bearer " + iss.Token(t, with("repository_owner", "mallory")), http.StatusBadRequest, "token validation failed: only acme's workflows"},
		{"unknown issuer", "Bearer " + other.Token(t, good), http.StatusBadRequest, "no oidcProvider configured for issuer"},
		{"forged issuer", "Bearer " + other.Token(t, with("iss", iss.URL)), http.StatusBadRequest, "failed to verify signature"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, cl := receiverServer(t, oidcReceiver(iss.URL), gitRepo("flux-system", "app"), gitRepo("flux-system", "other"))
			req := httptest.NewRequest(http.MethodPost, path, strings.NewReader("{}"))
			if c.auth != "" {
				req.Header.Set("Authorization", c.auth)
			}
			w := httptest.NewRecorder()
			s.ServeHTTP(w, req)
			if w.Code != c.code || !strings.Contains(w.Body.String(), c.want) {
				t.Errorf("answered %d %q, want %d containing %q", w.Code, w.Body, c.code, c.want)
			}
			if strings.Contains(w.Body.String(), "eyJ") {
				t.Errorf("answer %q carries a token", w.Body)
			}
			if got := requested(t, cl, "flux-system", "app"); got != (c.code == http.StatusOK) {
				t.Errorf("app requested: %v", got)
			}
			if requested(t, cl, "flux-system", "other") {
				t.Error("the filter on claims.repository did not skip other")
			}
		})
	}
}

// TestOIDCSpecRefusedAsFlux: the CRD's cross-field rules and the
// providers' CEL are checked by the controller too, with Flux's messages.
func TestOIDCSpecRefusedAsFlux(t *testing.T) {
	ok := oidcReceiver("https://token.actions.githubusercontent.com")
	if celErr, err := ValidateOIDC(ok); err != nil || celErr {
		t.Fatalf("a valid generic-oidc Receiver refused: %v", err)
	}
	for _, c := range []struct {
		name   string
		edit   func(r *notificationv1.Receiver)
		celErr bool
		want   string
	}{
		{"secretRef set", func(r *notificationv1.Receiver) { r.Spec.SecretRef = &meta.LocalObjectReference{Name: "token"} }, false, "secretRef cannot be set when type is generic-oidc"},
		{"no providers", func(r *notificationv1.Receiver) { r.Spec.OIDCProviders = nil }, false, "generic-oidc receiver requires at least one oidcProvider"},
		{"providers on github", func(r *notificationv1.Receiver) {
			r.Spec.Type, r.Spec.SecretRef = notificationv1.GitHubReceiver, &meta.LocalObjectReference{Name: "token"}
		}, false, "oidcProviders can only be set when type is generic-oidc"},
		{"no validations", func(r *notificationv1.Receiver) { r.Spec.OIDCProviders[0].Validations = nil }, false, "at least one validation is required"},
		{"bad issuer", func(r *notificationv1.Receiver) { r.Spec.OIDCProviders[0].IssuerURL = "ftp://x" }, false, `issuerURL "ftp://x" must start with http:// or https://`},
		{"bad CEL", func(r *notificationv1.Receiver) { r.Spec.OIDCProviders[0].Validations[0].Expression = "claims.sub ==" }, true, `invalid expression for validation "only acme's workflows"`},
		{"not bool", func(r *notificationv1.Receiver) { r.Spec.OIDCProviders[0].Validations[0].Expression = "'x'" }, true, "output type mismatch"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := oidcReceiver("https://token.actions.githubusercontent.com")
			c.edit(r)
			celErr, err := ValidateOIDC(r)
			if err == nil || celErr != c.celErr || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v (CEL error %v), want %q (CEL error %v)", err, celErr, c.want, c.celErr)
			}
		})
	}
}
