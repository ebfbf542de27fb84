package testenv

import (
	"crypto/subtle"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
)

// Registry is an in-process OCI registry (go-containerregistry's
// pkg/registry, blobs in memory) served over plain HTTP on 127.0.0.1:
// go-containerregistry clients and the flux CLI reach a loopback registry
// over HTTP without an insecure flag.
type Registry struct {
	srv            *httptest.Server
	user, password string
}

// RegistryOption configures NewRegistry.
type RegistryOption func(*Registry)

// WithBasicAuth makes the registry require HTTP basic auth with this
// username and password on every request (the ping /v2/ included): any
// other request is answered 401 UNAUTHORIZED with a Basic challenge, as a
// registry without a token service does.
func WithBasicAuth(username, password string) RegistryOption {
	return func(r *Registry) { r.user, r.password = username, password }
}

// NewRegistry starts an empty registry and closes it by t.Cleanup.
func NewRegistry(t testing.TB, opts ...RegistryOption) *Registry {
	t.Helper()
	r := &Registry{}
	for _, opt := range opts {
		opt(r)
	}
	// The registry logs every request; tests look at results, not at that log.
	var h http.Handler = ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0)))
	if r.user != "" || r.password != "" {
		h = r.requireAuth(h)
	}
	r.srv = httptest.NewServer(h)
	t.Cleanup(r.srv.Close)
	return r
}

// Host returns the registry's host:port, 127.0.0.1:PORT.
func (r *Registry) Host() string { return strings.TrimPrefix(r.srv.URL, "http://") }

// Credentials returns the username and password of WithBasicAuth (empty without).
func (r *Registry) Credentials() (username, password string) { return r.user, r.password }

// requireAuth answers 401 to any request without the registry's credentials.
func (r *Registry) requireAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		u, p, ok := req.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(r.user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(r.password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="testenv"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		next.ServeHTTP(w, req)
	})
}
