// Package webui serves `eddy ui`: a web UI of the GitOps state of a
// cluster, acting with the user's own credentials. The page is static
// (assets, embedded); it reads JSON from /api/ and is told of changes over
// server-sent events (/api/stream).
package webui

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

//go:embed assets
var assets embed.FS

// DefaultListen is where `eddy ui` listens unless told otherwise.
const DefaultListen = "127.0.0.1:9080"

// Options configure a Server.
type Options struct {
	// Config is the user's client configuration: every read and action is
	// done with it, so the page shows what the user's RBAC allows.
	Config *rest.Config
	// Context and Server name the cluster on the page (display only).
	Context string
	// Listen is host:port; DefaultListen when empty. A host that is not
	// loopback needs AuthToken or TLS; with TLS and no AuthToken, a random
	// token is required (URL carries it).
	Listen string
	// Namespaces limits the UI to these namespaces; empty: every namespace
	// the user may read each kind in.
	Namespaces []string
	// ReadOnly leaves the actions (reconcile, suspend, resume, an
	// Application's sync) out.
	ReadOnly bool
	// AuthToken, when set, is required of every request: once as ?token=
	// (the server then sets a cookie) or as `Authorization: Bearer`.
	AuthToken string
	// TLSCertFile and TLSKeyFile serve HTTPS.
	TLSCertFile, TLSKeyFile string
	// Log receives one line per failed request and per connection change;
	// io.Discard when nil.
	Log io.Writer
}

// Server is a listening UI server.
type Server struct {
	opts   Options
	ln     net.Listener
	csrf   string
	cookie string       // name of the auth cookie
	h      http.Handler // the routes, once Start has run
	st     *store       // the watches, once Start has run
	log    io.Writer
	// tokenInURL: the auth token was generated, so URL tells it.
	tokenInURL bool
}

// errNeedsAuth is returned for a non-loopback listen address without
// AuthToken or TLS.
var errNeedsAuth = errors.New("--listen on a non-loopback address needs --auth-token or --tls-cert-file/--tls-key-file: anyone who reaches it would act with your credentials")

// Listen checks opts and binds the listen address (port 0 picks a free
// port; URL tells which).
func Listen(opts Options) (*Server, error) {
	if opts.Config == nil {
		return nil, errors.New("webui: no client configuration")
	}
	if opts.Listen == "" {
		opts.Listen = DefaultListen
	}
	if (opts.TLSCertFile == "") != (opts.TLSKeyFile == "") {
		return nil, errors.New("--tls-cert-file and --tls-key-file go together")
	}
	host, _, err := net.SplitHostPort(opts.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: want host:port", opts.Listen)
	}
	generated := false
	if !isLoopback(host) && opts.AuthToken == "" {
		if opts.TLSCertFile == "" {
			return nil, errNeedsAuth
		}
		// TLS encrypts but does not tell who connects: without a token
		// anyone who reaches the port would act with the user's credentials.
		opts.AuthToken, generated = randomHex(16), true
	}
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("--listen %s: the port is taken (another eddy ui, or eddy dev up --ui?): pick another, or 127.0.0.1:0 for any free port", opts.Listen)
		}
		return nil, fmt.Errorf("listening on %s: %w", opts.Listen, err)
	}
	s := &Server{opts: opts, ln: ln, csrf: randomHex(32), cookie: "eddy-ui-token-" + portOfAddr(ln.Addr().String()), log: opts.Log, tokenInURL: generated}
	if s.log == nil {
		s.log = io.Discard
	}
	return s, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return hex.EncodeToString(b)
}

// URL is the address to open: http(s)://host:port/, with ?token= when
// the auth token was generated (TLS off loopback without AuthToken).
func (s *Server) URL() string {
	scheme := "http"
	if s.opts.TLSCertFile != "" {
		scheme = "https"
	}
	host, port, _ := net.SplitHostPort(s.ln.Addr().String())
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		// Every address: the machine's name is one to give others.
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	u := scheme + "://" + net.JoinHostPort(host, port) + "/"
	if s.tokenInURL {
		u += "?token=" + s.opts.AuthToken
	}
	return u
}

// Start watches the cluster (informers over the Flux kinds and their
// events) and waits for their first list, so that the page has data once
// URL is announced; the watches end with ctx. It fails when the API server
// does not answer within 30 s, or with ctx's error when ctx ends first.
func (s *Server) Start(ctx context.Context) error {
	if s.h != nil {
		return nil
	}
	h, err := s.handler(ctx)
	if err != nil {
		return err
	}
	s.h = h
	return nil
}

// Serve serves until ctx is done, then closes the listener. It calls
// Start first unless the caller did.
func (s *Server) Serve(ctx context.Context) error {
	if err := s.Start(ctx); err != nil {
		s.ln.Close()
		return err
	}
	srv := &http.Server{Handler: s.h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	var err error
	if s.opts.TLSCertFile != "" {
		err = srv.ServeTLS(s.ln, s.opts.TLSCertFile, s.opts.TLSKeyFile)
	} else {
		err = srv.Serve(s.ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// contentSecurityPolicy: only the page's own scripts, styles and
// connections; nothing inline, no frames.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// secure wraps every response: security headers, the auth token, and a
// Host check (a page of another site that rebinds its name to loopback
// must not reach the API).
func (s *Server) secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		if !s.hostAllowed(r.Host) {
			http.Error(w, "unexpected Host header", http.StatusMisdirectedRequest)
			return
		}
		// The API is the page's own: a browser says where a request comes
		// from, and another site's <img src> or form must not run a diff
		// (a build and a dry-run) with the user's credentials. Links to
		// pages from elsewhere still open.
		if strings.HasPrefix(r.URL.Path, "/api/") && !fromPage(r) {
			http.Error(w, "cross-site request to the API refused", http.StatusForbidden)
			return
		}
		if s.opts.AuthToken != "" {
			ok, answered := s.authorized(w, r)
			if answered {
				return
			}
			if !ok {
				http.Error(w, "unauthorized: open the address with ?token=<the --auth-token>", http.StatusUnauthorized)
				return
			}
		}
		if !strings.HasPrefix(r.URL.Path, "/api/") {
			next.ServeHTTP(w, r)
			return
		}
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.code >= 500 || rec.code == http.StatusForbidden {
			fmt.Fprintf(s.log, "%s %s %s: %d %s\n", time.Now().UTC().Format(time.RFC3339), r.Method, r.URL.Path, rec.code, strings.TrimSpace(rec.body.String()))
		}
	})
}

// recorder keeps an API response's status and the start of an error's
// body, for the log.
type recorder struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

func (r *recorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.code == 0 {
		r.code = http.StatusOK
	}
	if r.code >= 400 && r.body.Len() < 512 {
		r.body.Write(b[:min(len(b), 512-r.body.Len())])
	}
	return r.ResponseWriter.Write(b)
}

// Flush lets the event stream through.
func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// fromPage: the request comes from the page itself (Sec-Fetch-Site
// same-origin), was typed by the user (none), or from no browser (absent).
func fromPage(r *http.Request) bool {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
		return true
	}
	return false
}

// hostAllowed accepts the listen address, and loopback names on its port.
func (s *Server) hostAllowed(host string) bool {
	_, port, _ := net.SplitHostPort(s.ln.Addr().String())
	h, p, err := net.SplitHostPort(host)
	if err != nil {
		h, p = host, ""
	}
	if p != port && !(p == "" && (port == "80" || port == "443")) {
		return false
	}
	lh, _, _ := net.SplitHostPort(s.opts.Listen)
	if isLoopback(strings.Trim(h, "[]")) || h == lh {
		return true
	}
	// A non-loopback listen address has a token or TLS: any name then.
	return !isLoopback(lh)
}

// authorized checks the auth token: ?token= (then kept in a cookie; a page
// is redirected to its address without the token, so that it stays out of
// the address bar and the history: answered), the cookie, or a bearer token.
func (s *Server) authorized(w http.ResponseWriter, r *http.Request) (ok, answered bool) {
	want := []byte(s.opts.AuthToken)
	if t := r.URL.Query().Get("token"); t != "" && subtle.ConstantTimeCompare([]byte(t), want) == 1 {
		http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: t, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: s.opts.TLSCertFile != ""})
		if r.Method == http.MethodGet && !strings.HasPrefix(r.URL.Path, "/api/") {
			u := *r.URL
			q := u.Query()
			q.Del("token")
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return true, true
		}
		return true, false
	}
	if c, err := r.Cookie(s.cookie); err == nil && subtle.ConstantTimeCompare([]byte(c.Value), want) == 1 {
		return true, false
	}
	if a, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && subtle.ConstantTimeCompare([]byte(a), want) == 1 {
		return true, false
	}
	return false, false
}

// checkCSRF refuses a mutating request without the session's token.
func (s *Server) checkCSRF(r *http.Request) bool {
	return r.Method == http.MethodPost && subtle.ConstantTimeCompare([]byte(r.Header.Get("X-CSRF-Token")), []byte(s.csrf)) == 1
}

// staticFiles serves the embedded assets; every other path that is not
// /api/ gets index.html, so each page's URL is stable (the page routes).
func staticFiles() (http.Handler, error) {
	sub, err := fs.Sub(assets, "assets")
	if err != nil {
		return nil, err
	}
	index, err := fs.ReadFile(sub, "index.html")
	if err != nil {
		return nil, err
	}
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p := strings.TrimPrefix(r.URL.Path, "/"); p != "" && p != "index.html" {
			if _, err := fs.Stat(sub, p); err == nil {
				files.ServeHTTP(w, r)
				return
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(index)
	}), nil
}

// portOfAddr is the port of host:port: the auth cookie is named after it,
// since cookies do not tell ports apart and two UIs on one host would
// overwrite each other's.
func portOfAddr(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// Hidden lists the kinds that are not shown, once Start has run: not
// installed, or not readable by the user in any namespace watched.
func (s *Server) Hidden() []string {
	if s.st == nil {
		return nil
	}
	return s.st.hidden
}
