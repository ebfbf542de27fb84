package testenv

import (
	"crypto/subtle"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is an in-process OCI registry (go-containerregistry's
// pkg/registry, blobs in memory) served over plain HTTP on 127.0.0.1. It
// counts the requests it answers by kind and can be told to fail them.
type Registry struct {
	srv            *httptest.Server
	user, password string
	tls            bool

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

// WithTLS serves the registry over HTTPS with a certificate of its own
// (httptest's, for 127.0.0.1): CACert is its PEM, Transport trusts it.
func WithTLS() RegistryOption {
	return func(r *Registry) { r.tls = true }
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
	if r.tls {
		r.srv = httptest.NewTLSServer(h)
	} else {
		r.srv = httptest.NewServer(h)
	}
	t.Cleanup(r.srv.Close)
	return r
}

// Host returns the registry's host:port, 127.0.0.1:PORT.
func (r *Registry) Host() string {
	return strings.TrimPrefix(strings.TrimPrefix(r.srv.URL, "http://"), "https://")
}

// Transport is an HTTP transport that trusts the registry's certificate.
func (r *Registry) Transport() http.RoundTripper { return r.srv.Client().Transport }

// CACert is the PEM of the registry's certificate (with WithTLS), to put
// in a Secret's ca.crt.
func (r *Registry) CACert() []byte {
	if r.srv.Certificate() == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
}

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

// Push writes one new random image to repo under each of tags, with the
// registry's credentials and transport, and returns the image's digest.
// It fails t on any error; not for a WithTLS registry (go-containerregistry
// speaks plain HTTP to 127.0.0.1).
func (r *Registry) Push(t testing.TB, repo string, tags ...string) v1.Hash {
	t.Helper()
	if r.tls {
		t.Fatal("Registry.Push: a WithTLS registry is not supported")
	}
	img, err := random.Image(64, 1)
	if err != nil {
		t.Fatal(err)
	}
	opts := []remote.Option{remote.WithTransport(r.Transport())}
	if r.user != "" || r.password != "" {
		opts = append(opts, remote.WithAuth(&authn.Basic{Username: r.user, Password: r.password}))
	}
	for _, tag := range tags {
		ref, err := name.NewTag(r.Host() + "/" + repo + ":" + tag)
		if err != nil {
			t.Fatal(err)
		}
		if err := remote.Write(ref, img, opts...); err != nil {
			t.Fatal(err)
		}
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}
