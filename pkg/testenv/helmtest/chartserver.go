package helmtest

import (
	"crypto/subtle"
	"encoding/pem"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"helm.sh/helm/v3/pkg/repo"
	"sigs.k8s.io/yaml"
)

// ChartServer is a Helm chart repository over HTTP (or HTTPS) on 127.0.0.1: it serves
// /index.yaml, built with Helm's repo.IndexDirectory from the archives added to it, and each
// archive at /<file>.tgz. Its methods are safe for concurrent use; a failing Add fails the test
// given to NewChartServer.
type ChartServer struct {
	t        testing.TB
	srv      *httptest.Server
	dir      string
	user     string
	password string
	absolute bool

	mu       sync.Mutex
	index    []byte // served at /index.yaml
	override []byte // SetIndex bytes, served instead of index when non-nil
	status   int    // FailWith status, 0 for none
	counts   RequestCounts
}

// RequestCounts counts the requests a ChartServer received, whatever it answered.
type RequestCounts struct {
	// Total counts every request.
	Total int
	// Index counts requests for /index.yaml.
	Index int
	// Charts counts requests for a path ending in .tgz.
	Charts int
	// Unauthorized counts requests answered 401 for missing or wrong credentials.
	Unauthorized int
}

// ServerOption configures NewChartServer.
type ServerOption func(*ChartServer, *bool)

// WithBasicAuth makes the server require HTTP basic auth with this username and password: any
// other request is answered 401 with a WWW-Authenticate challenge.
func WithBasicAuth(username, password string) ServerOption {
	return func(s *ChartServer, _ *bool) { s.user, s.password = username, password }
}

// WithTLS serves HTTPS with httptest's self-signed certificate (valid for 127.0.0.1); CAPEM
// returns it for a client's CA file or a secret's ca.crt.
func WithTLS() ServerOption {
	return func(_ *ChartServer, tls *bool) { *tls = true }
}

// WithAbsoluteURLs writes absolute chart URLs (<server URL>/<file>.tgz) into index.yaml instead
// of URLs relative to the repository, which is the default.
func WithAbsoluteURLs() ServerOption {
	return func(s *ChartServer, _ *bool) { s.absolute = true }
}

// NewChartServer starts an empty chart repository (its index.yaml lists no chart) and closes
// it by t.Cleanup.
func NewChartServer(t testing.TB, opts ...ServerOption) *ChartServer {
	t.Helper()
	s := &ChartServer{t: t, dir: t.TempDir()}
	useTLS := false
	for _, opt := range opts {
		opt(s, &useTLS)
	}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serveHTTP))
	// Handshakes that tests make fail on purpose (an untrusted CA) are not news.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	if useTLS {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	t.Cleanup(s.srv.Close)
	s.reindex()
	return s
}

// URL returns the repository URL, http(s)://127.0.0.1:PORT, without a trailing slash.
func (s *ChartServer) URL() string { return s.srv.URL }

// CAPEM returns the PEM-encoded certificate that signs the server's TLS certificate (it is
// self-signed), or nil for a plain HTTP server.
func (s *ChartServer) CAPEM() []byte {
	if s.srv.TLS == nil {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
}

// Client returns an HTTP client that trusts the server's certificate (no credentials).
func (s *ChartServer) Client() *http.Client { return s.srv.Client() }

// Add copies the chart archive tgzPath into the repository and rebuilds index.yaml, so that its
// version is listed from the next request on. An archive of the same file name is replaced.
func (s *ChartServer) Add(tgzPath string) {
	s.t.Helper()
	data, err := os.ReadFile(tgzPath)
	if err != nil {
		s.t.Fatalf("helmtest: ChartServer.Add: %v", err)
	}
	if err := os.WriteFile(filepath.Join(s.dir, filepath.Base(tgzPath)), data, 0o644); err != nil {
		s.t.Fatalf("helmtest: ChartServer.Add: %v", err)
	}
	s.reindex()
}

// reindex rebuilds the served index.yaml from the archives in s.dir.
func (s *ChartServer) reindex() {
	s.t.Helper()
	base := ""
	if s.absolute {
		base = s.srv.URL
	}
	idx, err := repo.IndexDirectory(s.dir, base)
	if err != nil {
		s.t.Fatalf("helmtest: indexing charts: %v", err)
	}
	idx.SortEntries()
	data, err := yaml.Marshal(idx)
	if err != nil {
		s.t.Fatalf("helmtest: writing index: %v", err)
	}
	s.mu.Lock()
	s.index = data
	s.mu.Unlock()
}

// Index returns the index.yaml the server builds from its archives (not the SetIndex bytes).
func (s *ChartServer) Index() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.index...)
}

// SetIndex makes the server answer /index.yaml with exactly these bytes (e.g. not YAML, or an
// index naming charts it does not have) until SetIndex(nil) restores the built index.
func (s *ChartServer) SetIndex(data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if data == nil {
		s.override = nil
		return
	}
	s.override = append([]byte{}, data...)
}

// FailWith makes the server answer every request, authenticated or not, with this HTTP status
// code (e.g. 401, 404, 500) and a short body; FailWith(0) restores normal service.
func (s *ChartServer) FailWith(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

// Requests returns the counts of requests received so far.
func (s *ChartServer) Requests() RequestCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts
}

func (s *ChartServer) serveHTTP(w http.ResponseWriter, r *http.Request) {
	name := path.Clean("/" + r.URL.Path)
	s.mu.Lock()
	s.counts.Total++
	switch {
	case name == "/index.yaml":
		s.counts.Index++
	case strings.HasSuffix(name, ".tgz"):
		s.counts.Charts++
	}
	status := s.status
	index := s.index
	if s.override != nil {
		index = s.override
	}
	authorized := s.authorized(r)
	if !authorized && status == 0 {
		s.counts.Unauthorized++
	}
	s.mu.Unlock()

	switch {
	case status != 0:
		http.Error(w, http.StatusText(status), status)
	case !authorized:
		w.Header().Set("WWW-Authenticate", `Basic realm="helmtest"`)
		http.Error(w, http.StatusText(http.StatusUnauthorized), http.StatusUnauthorized)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
	case name == "/index.yaml":
		w.Header().Set("Content-Type", "application/x-yaml")
		_, _ = w.Write(index)
	case strings.HasSuffix(name, ".tgz") && path.Dir(name) == "/":
		f, err := os.Open(filepath.Join(s.dir, path.Base(name)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = io.Copy(w, f)
	default:
		http.NotFound(w, r)
	}
}

// authorized reports whether r carries the configured credentials (always true without
// WithBasicAuth). Called with s.mu held.
func (s *ChartServer) authorized(r *http.Request) bool {
	if s.user == "" && s.password == "" {
		return true
	}
	u, p, ok := r.BasicAuth()
	return ok && subtle.ConstantTimeCompare([]byte(u), []byte(s.user)) == 1 &&
		subtle.ConstantTimeCompare([]byte(p), []byte(s.password)) == 1
}
