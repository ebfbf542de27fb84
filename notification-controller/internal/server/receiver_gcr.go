package server

import (
	"bytes"
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// googleCertsURL is Google's JWKS of the keys that sign service accounts'
// ID tokens (Pub/Sub push tokens). Only tests point it elsewhere: no flag
// or setting changes it.
var googleCertsURL = "https://www.googleapis.com/oauth2/v3/certs"

// googleKeys caches googleCertsURL's keys for its Cache-Control max-age.
var googleKeys = &jwksCache{client: &http.Client{Timeout: 10 * time.Second}}

// verifyGCR checks a Google Pub/Sub push of a GCR (Artifact Registry)
// event and returns the event inside it, as Flux does: the Secret has
// `email` (the push subscription's service account) and `audience`; the
// `Authorization: Bearer <ID token>` is an RS256 JWT signed by one of
// Google's keys, whose `aud` is the audience, `exp` in the future, `iss`
// accounts.google.com (with or without https://), `email` the account and
// `email_verified` true. The payload is the message's base64 `data`, as
// JSON with its action, digest and tag only. Failing to fetch Google's
// keys is an error answered 503 (Flux answers 400).
func verifyGCR(ctx context.Context, sec map[string][]byte, h http.Header, body []byte) ([]byte, error) {
	email, audience := string(sec["email"]), string(sec["audience"])
	if email == "" {
		return nil, errVerify{"invalid secret data: required field 'email' for GCR receiver"}
	}
	if audience == "" {
		return nil, errVerify{"invalid secret data: required field 'audience' for GCR receiver"}
	}
	if err := verifyGoogleIDToken(ctx, h.Get("Authorization"), email, audience); err != nil {
		var ve errVerify
		if errors.As(err, &ve) {
			return nil, errVerify{"cannot authenticate GCR request: " + ve.msg}
		}
		return nil, err
	}
	var p struct {
		Message struct {
			Data string `json:"data"`
		} `json:"message"`
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&p); err != nil {
		return nil, errVerify{fmt.Sprintf("cannot decode GCR webhook payload: %v", err)}
	}
	raw, _ := base64.StdEncoding.DecodeString(p.Message.Data)
	var d struct {
		Action string `json:"action"`
		Digest string `json:"digest"`
		Tag    string `json:"tag"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, errVerify{fmt.Sprintf("cannot decode GCR webhook body: %v", err)}
	}
	return json.Marshal(d)
}

// verifyGoogleIDToken checks the bearer ID token; errVerify for a token
// that does not verify, another error when Google's keys are unavailable.
func verifyGoogleIDToken(ctx context.Context, bearer, email, audience string) error {
	token, ok := strings.CutPrefix(bearer, "Bearer ")
	if !ok {
		return errVerify{"the Authorization header is missing or malformed"}
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errVerify{fmt.Sprintf("invalid ID token: token must have three segments; found %d", len(parts))}
	}
	var header struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}
	var claims struct {
		Aud           any    `json:"aud"`
		Exp           int64  `json:"exp"`
		Iss           string `json:"iss"`
		Email         string `json:"email"`
		EmailVerified bool   `json:"email_verified"`
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || decodeSegment(parts[0], &header) != nil || decodeSegment(parts[1], &claims) != nil {
		return errVerify{"invalid ID token: not a JWT"}
	}
	if aud, _ := claims.Aud.(string); aud != audience {
		return errVerify{fmt.Sprintf("invalid ID token: audience is '%v', want '%s'", claims.Aud, audience)}
	}
	if time.Now().Unix() > claims.Exp {
		return errVerify{"invalid ID token: token expired"}
	}
	if header.Alg != "RS256" {
		return errVerify{fmt.Sprintf("invalid ID token: expected JWT signed with RS256 but found %q", header.Alg)}
	}
	key, err := googleKeys.key(ctx, googleCertsURL, header.Kid)
	if err != nil {
		return err
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if err := rsa.VerifyPKCS1v15(key, crypto.SHA256, digest[:], sig); err != nil {
		return errVerify{"invalid ID token: the signature does not verify"}
	}
	if claims.Iss != "accounts.google.com" && claims.Iss != "https://accounts.google.com" {
		return errVerify{fmt.Sprintf("token issuer is '%s', want 'accounts.google.com' or 'https://accounts.google.com'", claims.Iss)}
	}
	if claims.Email != email {
		return errVerify{fmt.Sprintf("token email is '%s', want '%s'", claims.Email, email)}
	}
	if !claims.EmailVerified {
		return errVerify{fmt.Sprintf("token email '%s' is not verified", claims.Email)}
	}
	return nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// jwksCache holds one JWKS's RSA keys by key id until it expires.
type jwksCache struct {
	client  *http.Client
	mu      sync.Mutex
	url     string
	keys    map[string]*rsa.PublicKey
	expires time.Time
}

// key returns the key kid of the JWKS at url, fetched again once the
// answer's max-age (5 minutes without one) has passed. An unknown kid is
// errVerify: the token was not signed by Google.
func (c *jwksCache) key(ctx context.Context, url, kid string) (*rsa.PublicKey, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.url != url || time.Now().After(c.expires) {
		keys, maxAge, err := fetchJWKS(ctx, c.client, url)
		if err != nil {
			return nil, fmt.Errorf("cannot fetch Google's ID token keys: %w", err)
		}
		c.url, c.keys, c.expires = url, keys, time.Now().Add(maxAge)
	}
	k, ok := c.keys[kid]
	if !ok {
		return nil, errVerify{"invalid ID token: could not find matching cert keyId for the token provided"}
	}
	return k, nil
}

func fetchJWKS(ctx context.Context, client *http.Client, url string) (map[string]*rsa.PublicKey, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	var set struct {
		Keys []struct {
			Kty, Kid, N, E string
		} `json:"keys"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(nil, resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, 0, err
	}
	keys := map[string]*rsa.PublicKey{}
	for _, k := range set.Keys {
		n, errN := base64.RawURLEncoding.DecodeString(k.N)
		e, errE := base64.RawURLEncoding.DecodeString(k.E)
		if k.Kty != "RSA" || errN != nil || errE != nil || len(e) == 0 || len(e) > 4 {
			continue
		}
		keys[k.Kid] = &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}
	}
	maxAge := 5 * time.Minute
	for _, d := range strings.Split(resp.Header.Get("Cache-Control"), ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(d), "max-age="); ok {
			if s, err := strconv.Atoi(v); err == nil && s > 0 {
				maxAge = time.Duration(s) * time.Second
			}
		}
	}
	return keys, maxAge, nil
}
