package testenv

import (
	"crypto/subtle"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an in-process OCI registry (go-containerregistry's
// pkg/registry, blobs in memory) served over plain HTTP on 127.0.0.1. It
// counts the requests it answers by kind and can be told to fail them.
type Registry struct {
	srv            *httptest.Server
	user, password string

	mu     sync.Mutex
	counts map[string]int
	status int // answer every /v2/<name>/… request with it when non-zero
}

// RegistryOption configures NewRegistry.
type RegistryOption func(*Registry)

// WithBasicAuth makes the registry require HTTP basic auth with this
// username and password on every request (RequireBasicAuth).
func WithBasicAuth(username, password string) RegistryOption {
	return func(r *Registry) { r.user, r.password = username, password }
}

// NewRegistry starts an empty registry and closes it by t.Cleanup.
func NewRegistry(t testing.TB, opts ...RegistryOption) *Registry {
	t.Helper()
	r := &Registry{counts: map[string]int{}}
	for _, opt := range opts {
		opt(r)
	}
	// The registry logs every request; the tests look at results, not at that log.
	var h http.Handler = ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	h = r.count(h)
	if r.user != "" || r.password != "" {
		h = RequireBasicAuth(h, r.user, r.password)
	}
	r.srv = httptest.NewServer(h)
	t.Cleanup(r.srv.Close)
	return r
}

// Host returns the registry's host:port, 127.0.0.1:PORT.
func (r *Registry) Host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// Request kinds Registry.Requests counts (an authorized request to a
// repository path; the /v2/ ping is not counted).
const (
	RegistryBlobGet      = "blob GET"
	RegistryManifestGet  = "manifest GET"
	RegistryManifestHead = "manifest HEAD"
	RegistryTagsList     = "tags list"
)

// Requests returns how many requests of kind the registry has received.
func (r *Registry) Requests(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.counts[kind]
}

// FailWith answers every later repository request (not the /v2/ ping)
// with status and an OCI error body, until FailWith(0).
func (r *Registry) FailWith(status int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = status
}

func (r *Registry) count(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p := req.URL.Path
		kind := ""
		switch {
		case strings.Contains(p, "/blobs/") && req.Method == http.MethodGet:
			kind = RegistryBlobGet
		case strings.Contains(p, "/manifests/") && req.Method == http.MethodGet:
			kind = RegistryManifestGet
		case strings.Contains(p, "/manifests/") && req.Method == http.MethodHead:
			kind = RegistryManifestHead
		case strings.HasSuffix(p, "/tags/list"):
			kind = RegistryTagsList
		}
		r.mu.Lock()
		if kind != "" {
			r.counts[kind]++
		}
		status := r.status
		r.mu.Unlock()
		if status != 0 && p != "/v2/" && p != "/v2" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNKNOWN","message":"`+http.StatusText(status)+`"}]}`)
			return
		}
		next.ServeHTTP(w, req)
	})
}

// RequireBasicAuth answers 401 UNAUTHORIZED with a Basic challenge, as a
// registry without a token service does, to any request without these
// basic-auth credentials (the /v2/ ping included).
func RequireBasicAuth(next http.Handler, username, password string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(username)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="testenv"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		next.ServeHTTP(w, req)
	})
}
