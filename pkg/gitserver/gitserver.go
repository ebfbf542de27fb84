// Package gitserver serves Git repositories over HTTP(S) with the real Git:
// Debian's `git http-backend` behind net/http/cgi, with optional basic or
// bearer authentication and a log of the requests it answered. Tests use it
// as the remote of GitRepository objects; `eddy dev` serves local
// repositories with it.
package gitserver

import (
	"bytes"
	"crypto/subtle"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
)

// Options configure a Server. Credentials left empty are not required.
type Options struct {
	// Root holds the served repositories: a request for /<path> serves the
	// repository at <Root>/<path> (bare `x.git` or a work tree's `x/.git`).
	Root string
	// Username and Password, when set, are required as HTTP basic auth.
	Username, Password string
	// BearerToken, when set, is required as `Authorization: Bearer <token>`.
	// With both set, either is accepted.
	BearerToken string
	// TLS serves HTTPS with a self-signed certificate; see Server.CACert.
	TLS bool
	// Addr is the host:port to listen on, e.g. the node profile's node IP
	// with port 0 so that pods reach the server. Default: a free loopback port.
	Addr string
	// Config is Git configuration ("key=value") given to `git http-backend`
	// through its environment (GIT_CONFIG_COUNT/KEY_n/VALUE_n), so the
	// served repositories' own config files are not written: e.g.
	// "http.receivepack=true" to take pushes without a REMOTE_USER.
	Config []string
	// OnPush, when set, is called with the repository path (below Root,
	// e.g. "podinfo.git") after each receive-pack request answered 200: a
	// push the server took (a ref the server refused is still a 200, with
	// the refusal in the reply). It runs on the request's goroutine.
	OnPush func(path string)
}

// Request is one request the server answered.
type Request struct {
	Method string
	// Path is the URL path, e.g. /podinfo.git/git-upload-pack.
	Path string
	// Status is the HTTP status code of the answer.
	Status int
	// Fetch is true for an upload-pack request that asks for objects: a clone
	// or fetch, as opposed to a ref listing (info/refs, or a protocol v2
	// `command=ls-refs`).
	Fetch bool
	// Authorization is the request's Authorization header as received
	// (e.g. `Bearer <token>`), empty when it carried none: tests assert
	// which credentials reached which server.
	Authorization string
}

// Server is a running Git HTTP server.
type Server struct {
	// URL is the base URL, e.g. http://127.0.0.1:41234; a repository's URL is
	// URL + "/" + its path below Options.Root.
	URL  string
	opts Options
	srv  *httptest.Server

	mu       sync.Mutex
	requests []Request
}

// Start starts a server on opts.Addr, by default a free loopback port. It
// needs `git` on PATH.
func Start(opts Options) (*Server, error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("git is required to serve repositories: %w", err)
	}
	s := &Server{opts: opts}
	backend := &cgi.Handler{
		Path: git,
		Args: []string{"http-backend"},
		Env:  append([]string{"GIT_PROJECT_ROOT=" + opts.Root, "GIT_HTTP_EXPORT_ALL=1"}, configEnv(opts.Config)...),
	}
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		fetch := false
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack") {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			fetch = !bytes.Contains(body, []byte("command=ls-refs"))
		}
		if s.authorized(r) {
			backend.ServeHTTP(rec, r)
		} else {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			rec.WriteHeader(http.StatusUnauthorized)
		}
		s.mu.Lock()
		s.requests = append(s.requests, Request{Method: r.Method, Path: r.URL.Path, Status: rec.status, Fetch: fetch,
			Authorization: r.Header.Get("Authorization")})
		s.mu.Unlock()
		if repo, ok := strings.CutSuffix(r.URL.Path, "/git-receive-pack"); ok && opts.OnPush != nil &&
			r.Method == http.MethodPost && rec.status == http.StatusOK {
			opts.OnPush(strings.TrimPrefix(repo, "/"))
		}
	})
	s.srv = httptest.NewUnstartedServer(handler)
	if opts.Addr != "" {
		l, err := net.Listen("tcp", opts.Addr)
		if err != nil {
			return nil, fmt.Errorf("git server: %w", err)
		}
		s.srv.Listener.Close()
		s.srv.Listener = l
	}
	if opts.TLS {
		s.srv.StartTLS()
	} else {
		s.srv.Start()
	}
	s.URL = s.srv.URL
	return s, nil
}

// configEnv returns the environment that gives Git the settings kvs
// ("key=value"), as `git -c` would.
func configEnv(kvs []string) []string {
	if len(kvs) == 0 {
		return nil
	}
	env := []string{fmt.Sprintf("GIT_CONFIG_COUNT=%d", len(kvs))}
	for i, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, k), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, v))
	}
	return env
}

func (s *Server) authorized(r *http.Request) bool {
	if s.opts.Username == "" && s.opts.Password == "" && s.opts.BearerToken == "" {
		return true
	}
	if s.opts.BearerToken != "" {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok &&
			subtle.ConstantTimeCompare([]byte(tok), []byte(s.opts.BearerToken)) == 1 {
			return true
		}
	}
	if s.opts.Username != "" || s.opts.Password != "" {
		u, p, ok := r.BasicAuth()
		return ok && subtle.ConstantTimeCompare([]byte(u), []byte(s.opts.Username)) == 1 &&
			subtle.ConstantTimeCompare([]byte(p), []byte(s.opts.Password)) == 1
	}
	return false
}

// Requests returns the requests answered so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Fetches counts the successful clones and fetches of the repository at
// path (below Root); ref listings do not count.
func (s *Server) Fetches(path string) int {
	n := 0
	for _, r := range s.Requests() {
		if r.Fetch && r.Path == "/"+strings.Trim(path, "/")+"/git-upload-pack" && r.Status == http.StatusOK {
			n++
		}
	}
	return n
}

// CACert returns the PEM certificate that clients of a TLS server must
// trust; nil without TLS.
func (s *Server) CACert() []byte {
	if !s.opts.TLS {
		return nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.srv.Certificate().Raw})
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}
