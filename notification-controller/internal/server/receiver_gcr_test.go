package server

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	notificationv1 "github.com/eddyops/eddy/api/notification/v1"
)

// googleFake serves a JWKS in Google's shape and signs ID tokens as
// Google signs a Pub/Sub push subscription's.
type googleFake struct {
	key *rsa.PrivateKey
	kid string
}

// newGoogleFake points googleCertsURL at a local JWKS for the test.
func newGoogleFake(t *testing.T) *googleFake {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	g := &googleFake{key: key, kid: "f2e11986282de93f27b264fd2a4de192993dcb8c"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=21600")
		b64 := base64.RawURLEncoding.EncodeToString
		fmt.Fprintf(w, `{"keys":[{"kty":"RSA","alg":"RS256","use":"sig","kid":%q,"n":%q,"e":%q}]}`,
			g.kid, b64(key.N.Bytes()), b64(big.NewInt(int64(key.E)).Bytes()))
	}))
	t.Cleanup(srv.Close)
	oldURL, oldKeys := googleCertsURL, googleKeys
	googleCertsURL, googleKeys = srv.URL, &jwksCache{client: srv.Client()}
	t.Cleanup(func() { googleCertsURL, googleKeys = oldURL, oldKeys })
	return g
}

func (g *googleFake) token(t *testing.T, claims map[string]any) string {
	t.Helper()
	seg := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signed := seg(map[string]string{"alg": "RS256", "kid": g.kid, "typ": "JWT"}) + "." + seg(claims)
	digest := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(rand.Reader, g.key, crypto.SHA256, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// pubsubPush wraps a GCR event as a Pub/Sub push request body.
func pubsubPush(data []byte) []byte {
	return fmt.Appendf(nil, `{"message":{"attributes":{},"data":%q,"messageId":"2070443601311540","publishTime":"2026-02-26T19:13:55.749Z"},"subscription":"projects/acme/subscriptions/flux"}`,
		base64.StdEncoding.EncodeToString(data))
}

// TestGCRPushVerifiedAgainstGoogleKeys: a Pub/Sub push whose ID token is
// signed by a key of the JWKS, for the Secret's audience and service
// account, is accepted and yields the GCR event; every other token is
// refused (400), and unreachable keys are a 503 error. The JWKS is local:
// Google's is the only one the binary reads.
func TestGCRPushVerifiedAgainstGoogleKeys(t *testing.T) {
	g := newGoogleFake(t)
	const email, aud = "flux-push@acme.iam.gserviceaccount.com", "https://flux.example.com/hook/abc"
	sec := map[string][]byte{"token": []byte("t"), "email": []byte(email), "audience": []byte(aud)}
	data := payload(t, "gcr-data")
	claims := func(change func(map[string]any)) map[string]any {
		c := map[string]any{"aud": aud, "azp": "1234", "email": email, "email_verified": true, "exp": time.Now().Add(time.Hour).Unix(),
			"iat": time.Now().Unix(), "iss": "https://accounts.google.com", "sub": "1234"}
		if change != nil {
			change(c)
		}
		return c
	}
	verify := func(sec map[string][]byte, bearer string, body []byte) ([]byte, error) {
		return Verify(context.Background(), notificationv1.GCRReceiver, nil, sec, http.Header{"Authorization": {bearer}}, body)
	}
	got, err := verify(sec, "Bearer "+g.token(t, claims(nil)), pubsubPush(data))
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]string
	if err := json.Unmarshal(got, &ev); err != nil || ev["action"] != "INSERT" || !strings.HasSuffix(ev["tag"], "/app:v1.2.3") {
		t.Errorf("payload %s (%v), want the GCR event", got, err)
	}

	tampered := g.token(t, claims(nil))
	tampered = tampered[:len(tampered)-4] + "AAAA"
	refused := map[string]string{
		"wrong audience":   "Bearer " + g.token(t, claims(func(c map[string]any) { c["aud"] = "other" })),
		"expired":          "Bearer " + g.token(t, claims(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() })),
		"other account":    "Bearer " + g.token(t, claims(func(c map[string]any) { c["email"] = "x@acme.iam.gserviceaccount.com" })),
		"email unverified": "Bearer " + g.token(t, claims(func(c map[string]any) { c["email_verified"] = false })),
		"other issuer":     "Bearer " + g.token(t, claims(func(c map[string]any) { c["iss"] = "https://token.actions.githubusercontent.com" })),
		"bad signature":    "Bearer " + tampered,
		"no bearer":        g.token(t, claims(nil)),
	}
	for name, bearer := range refused {
		_, err := verify(sec, bearer, pubsubPush(data))
		var ve errVerify
		if !errors.As(err, &ve) {
			t.Errorf("%s: %v, want a verification error", name, err)
		}
	}
	if _, err := verify(map[string][]byte{"token": []byte("t"), "email": []byte(email)}, "Bearer "+g.token(t, claims(nil)), pubsubPush(data)); err == nil ||
		err.Error() != "invalid secret data: required field 'audience' for GCR receiver" {
		t.Errorf("no audience: %v", err)
	}
	if _, err := verify(sec, "Bearer "+g.token(t, claims(nil)), pubsubPush([]byte("not json"))); err == nil {
		t.Error("a message that is not a GCR event accepted")
	}

	googleCertsURL = "http://127.0.0.1:1/certs"
	googleKeys = &jwksCache{client: http.DefaultClient}
	_, err = verify(sec, "Bearer "+g.token(t, claims(nil)), pubsubPush(data))
	var ve errVerify
	if err == nil || errors.As(err, &ve) || !strings.HasPrefix(err.Error(), "cannot fetch Google's ID token keys") {
		t.Errorf("unreachable keys: %v, want a 503 error", err)
	}
}
