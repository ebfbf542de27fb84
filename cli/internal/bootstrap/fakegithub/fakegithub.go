// Package fakegithub is a test double of the few GitHub REST endpoints
// `eddy bootstrap github` calls (repositories and deploy keys), in front of
// a Git HTTP server (pkg/gitserver) whose bare repositories it creates.
package fakegithub

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/eddyops/eddy/pkg/gitserver"
)

// Key is a deploy key as the fake stores it.
type Key struct {
	ID       int64  `json:"id"`
	Title    string `json:"title"`
	Key      string `json:"key"`
	ReadOnly bool   `json:"read_only"`
}

// Server answers, below /api/, GET /repos/{o}/{r}, POST /user/repos, POST
// /orgs/{o}/repos and GET/POST/DELETE /repos/{o}/{r}/keys[/{id}], with
// Token required as a bearer token; elsewhere it serves the repositories
// (<owner>/<repo>.git) over Git HTTP to any user name with Token as the
// password, as GitHub takes a token.
type Server struct {
	// URL is the API's base URL (for --api-url), <GitURL>/api/.
	URL string
	// GitURL is the base of the clone URLs.
	GitURL string
	// Git is the Git server behind the token check.
	Git *gitserver.Server
	// Token is the accepted token.
	Token string
	// User is the owner of /user/repos.
	User string

	root string
	srv  *httptest.Server

	mu       sync.Mutex
	repos    map[string]bool // "owner/repo" → private
	keys     map[string][]Key
	nextID   int64
	requests []string
}

// Start starts the fake with its Git server over root.
func Start(root, user, token string) (*Server, error) {
	s := &Server{Token: token, User: user, root: root, repos: map[string]bool{}, keys: map[string][]Key{}}
	g, err := gitserver.Start(gitserver.Options{Root: root})
	if err != nil {
		return nil, err
	}
	s.Git = g
	target, _ := url.Parse(g.URL)
	proxy := httputil.NewSingleHostReverseProxy(target)
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, "/api/"); ok {
			r.URL.Path = "/" + rest
			s.serve(w, r)
			return
		}
		if _, pw, ok := r.BasicAuth(); !ok || pw != s.Token {
			w.Header().Set("WWW-Authenticate", `Basic realm="github"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	s.GitURL = s.srv.URL
	s.URL = s.srv.URL + "/api/"
	return s, nil
}

// Close stops both servers.
func (s *Server) Close() { s.srv.Close(); s.Git.Close() }

// Requests are "METHOD /path" of the API calls, oldest first.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// Keys returns the deploy keys of owner/repo.
func (s *Server) Keys(owner, repo string) []Key {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Key(nil), s.keys[owner+"/"+repo]...)
}

// Private reports whether owner/repo exists and is private.
func (s *Server) Private(owner, repo string) (private, exists bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	private, exists = s.repos[owner+"/"+repo]
	return
}

// CreateRepo makes an empty repository as if it existed on GitHub.
func (s *Server) CreateRepo(owner, repo string, private bool) error {
	if _, err := gitserver.InitBare(s.root, filepath.Join(owner, repo+".git")); err != nil {
		return err
	}
	// git http-backend takes pushes only from authenticated users unless
	// the repository allows them.
	if _, err := gitserver.Git(filepath.Join(s.root, owner, repo+".git"), "config", "http.receivepack", "true"); err != nil {
		return err
	}
	s.mu.Lock()
	s.repos[owner+"/"+repo] = private
	s.mu.Unlock()
	return nil
}

func (s *Server) repoJSON(owner, repo string, private bool) map[string]any {
	return map[string]any{
		"name": repo, "full_name": owner + "/" + repo, "private": private, "default_branch": "main",
		"owner":     map[string]any{"login": owner},
		"clone_url": fmt.Sprintf("%s/%s/%s.git", s.GitURL, owner, repo),
		"ssh_url":   fmt.Sprintf("git@fake.github:%s/%s.git", owner, repo),
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	if r.Header.Get("Authorization") != "Bearer "+s.Token {
		writeJSON(w, http.StatusUnauthorized, map[string]any{"message": "Bad credentials"})
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodPost && (r.URL.Path == "/user/repos" || len(parts) == 3 && parts[0] == "orgs" && parts[2] == "repos"):
		owner := s.User
		if parts[0] == "orgs" {
			owner = parts[1]
		}
		var body struct {
			Name    string `json:"name"`
			Private bool   `json:"private"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Name == "" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "name is required"})
			return
		}
		if _, exists := s.Private(owner, body.Name); exists {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "name already exists on this account"})
			return
		}
		if err := s.CreateRepo(owner, body.Name, body.Private); err != nil {
			writeJSON(w, http.StatusInternalServerError, map[string]any{"message": err.Error()})
			return
		}
		writeJSON(w, http.StatusCreated, s.repoJSON(owner, body.Name, body.Private))
	case len(parts) == 3 && parts[0] == "repos" && r.Method == http.MethodGet:
		private, ok := s.Private(parts[1], parts[2])
		if !ok {
			writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
			return
		}
		writeJSON(w, http.StatusOK, s.repoJSON(parts[1], parts[2], private))
	case len(parts) >= 4 && parts[0] == "repos" && parts[3] == "keys":
		s.serveKeys(w, r, parts[1]+"/"+parts[2], parts[4:])
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
	}
}

func (s *Server) serveKeys(w http.ResponseWriter, r *http.Request, full string, rest []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.repos[full]; !ok {
		writeJSON(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
		return
	}
	switch {
	case r.Method == http.MethodGet && len(rest) == 0:
		writeJSON(w, http.StatusOK, append([]Key{}, s.keys[full]...))
	case r.Method == http.MethodPost && len(rest) == 0:
		var k Key
		if err := json.NewDecoder(r.Body).Decode(&k); err != nil || k.Key == "" {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]any{"message": "key is invalid"})
			return
		}
		s.nextID++
		k.ID = s.nextID
		s.keys[full] = append(s.keys[full], k)
		writeJSON(w, http.StatusCreated, k)
	case r.Method == http.MethodDelete && len(rest) == 1:
		id, _ := strconv.ParseInt(rest[0], 10, 64)
		keys := s.keys[full][:0]
		for _, k := range s.keys[full] {
			if k.ID != id {
				keys = append(keys, k)
			}
		}
		s.keys[full] = keys
		w.WriteHeader(http.StatusNoContent)
	default:
		writeJSON(w, http.StatusMethodNotAllowed, map[string]any{"message": "Method Not Allowed"})
	}
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// Root is the directory of the repositories: <Root>/<owner>/<repo>.git.
func (s *Server) Root() string { return s.root }
