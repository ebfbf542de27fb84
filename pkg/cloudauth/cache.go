// Package cloudauth gets short-lived credentials from a cloud's or a Git
// host's token service, as Flux's spec.provider does: a GitHub App's
// installation token, ECR's authorization token (aws), an access token of
// the GCE metadata server (gcp) and an Entra ID token exchanged at ACR
// (azure). Tokens are cached in the process until 80% of their lifetime,
// at most an hour, as Flux's token cache keeps them. No function here puts
// a token or a key in an error.
package cloudauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"
)

// Credentials are what a client presents: basic auth, or a bearer token
// when Username is empty.
type Credentials struct {
	Username, Password string
	// ExpiresAt is when the token stops being accepted.
	ExpiresAt time.Time
}

// maxCacheDuration caps how long a token is reused, as Flux's
// --token-cache-max-duration default.
const maxCacheDuration = time.Hour

type cacheEntry struct {
	creds     Credentials
	reuseTill time.Time
}

// tokenCache holds credentials by a digest of everything that made them.
type tokenCache struct {
	mu      sync.Mutex
	entries map[string]cacheEntry
}

var cache = &tokenCache{entries: map[string]cacheEntry{}}

// cacheKey digests parts, so that a key (or secret) never sits in memory
// as a map key and two inputs differing anywhere get their own entry.
func cacheKey(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// getOrNew returns the cached credentials of key, or those of newCreds,
// kept for 80% of their lifetime (kubelet's rotation threshold, Flux's
// too), at most maxCacheDuration. Failures are not cached.
func (c *tokenCache) getOrNew(ctx context.Context, key string, newCreds func(context.Context) (Credentials, error)) (Credentials, error) {
	now := time.Now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.reuseTill) {
		return e.creds, nil
	}
	creds, err := newCreds(ctx)
	if err != nil {
		return Credentials{}, err
	}
	keep := creds.ExpiresAt.Sub(now) * 8 / 10
	if keep > maxCacheDuration {
		keep = maxCacheDuration
	}
	if keep > 0 {
		c.mu.Lock()
		c.entries[key] = cacheEntry{creds: creds, reuseTill: now.Add(keep)}
		c.mu.Unlock()
	}
	return creds, nil
}

// forget drops every cached token; for tests.
func (c *tokenCache) forget() {
	c.mu.Lock()
	c.entries = map[string]cacheEntry{}
	c.mu.Unlock()
}
