package testenv

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// OIDCIssuer is a local OpenID Connect issuer: it serves a discovery
// document at /.well-known/openid-configuration and its RS256 signing key
// at /jwks, and signs ID tokens, as GitHub Actions' or a cluster's issuer
// does. Its URL is the `iss` of every token it signs.
type OIDCIssuer struct {
	URL string
	key *rsa.PrivateKey
	kid string
}

// NewOIDCIssuer starts an issuer on 127.0.0.1, stopped at the test's end.
func NewOIDCIssuer(tb testing.TB) *OIDCIssuer {
	tb.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		tb.Fatal(err)
	}
	iss := &OIDCIssuer{key: key, kid: "eddy-test-1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"issuer":%q,"jwks_uri":%q,"id_token_signing_alg_values_supported":["RS256"],"response_types_supported":["id_token"],"subject_types_supported":["public"]}`,
			iss.URL, iss.URL+"/jwks")
	})
	mux.HandleFunc("/jwks", func(w http.ResponseWriter, _ *http.Request) {
		b64 := base64.RawURLEncoding.EncodeToString
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"keys":[{"kty":"RSA","alg":"RS256","use":"sig","kid":%q,"n":%q,"e":%q}]}`,
			iss.kid, b64(key.N.Bytes()), b64(big.NewInt(int64(key.E)).Bytes()))
	})
	srv := httptest.NewServer(mux)
	tb.Cleanup(srv.Close)
	iss.URL = srv.URL
	return iss
}

// Token signs an ID token with claims, adding `iss` and, unless given,
// `iat` and an `exp` one hour ahead.
func (o *OIDCIssuer) Token(tb testing.TB, claims map[string]any) string {
	tb.Helper()
	all := map[string]any{"iss": o.URL, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		all[k] = v
	}
	seg := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			tb.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signed := seg(map[string]string{"alg": "RS256", "kid": o.kid, "typ": "JWT"}) + "." + seg(all)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, o.key, crypto.SHA256, digest[:])
	if err != nil {
		tb.Fatal(err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}
