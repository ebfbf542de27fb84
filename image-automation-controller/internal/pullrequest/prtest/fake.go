// Package prtest is a fake GitHub and GitLab pull request API for tests:
// an httptest server keeping pull requests (merge requests) and comments
// in memory, checking the token, and answering with a chosen error.
package prtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"sync"
)

// PR is a pull request as the fake keeps it.
type PR struct {
	Number      int
	Head, Base  string
	Title, Body string
	Open        bool
	Comments    []string
	Edits       int
}

// Server is the fake API: GitHub's routes under /repos/{owner}/{repo}/,
// GitLab's under /projects/{id}/.
type Server struct {
	*httptest.Server
	Token string

	mu   sync.Mutex
	prs  []*PR
	fail *failure
	// Requests counts the calls answered.
	Requests int
}

type failure struct {
	status  int
	message string
}

// New starts a fake accepting token.
func New(token string) *Server {
	s := &Server{Token: token}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// Fail makes every later call answer status with message (0: succeed).
func (s *Server) Fail(status int, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = nil
	if status != 0 {
		s.fail = &failure{status, message}
	}
}

// PRs returns a copy of the pull requests.
func (s *Server) PRs() []PR {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]PR, len(s.prs))
	for i, p := range s.prs {
		out[i] = *p
		out[i].Comments = append([]string(nil), p.Comments...)
	}
	return out
}

var (
	ghList    = regexp.MustCompile(`^/repos/[^/]+/[^/]+/pulls$`)
	ghPull    = regexp.MustCompile(`^/repos/[^/]+/[^/]+/pulls/(\d+)$`)
	ghComment = regexp.MustCompile(`^/repos/[^/]+/[^/]+/issues/(\d+)/comments$`)
	glList    = regexp.MustCompile(`^/projects/[^/]+/merge_requests$`)
	glMR      = regexp.MustCompile(`^/projects/[^/]+/merge_requests/(\d+)$`)
	glNote    = regexp.MustCompile(`^/projects/[^/]+/merge_requests/(\d+)/notes$`)
)

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Requests++
	gitlab := glList.MatchString(r.URL.EscapedPath()) || glMR.MatchString(r.URL.EscapedPath()) || glNote.MatchString(r.URL.EscapedPath())
	if s.fail != nil {
		answer(w, s.fail.status, map[string]string{"message": s.fail.message})
		return
	}
	tok := r.Header.Get("Authorization")
	if gitlab {
		tok = "Bearer " + r.Header.Get("PRIVATE-TOKEN")
	}
	if tok != "Bearer "+s.Token {
		answer(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials"})
		return
	}
	var in map[string]string
	if r.Body != nil && r.Method != http.MethodGet {
		_ = json.NewDecoder(r.Body).Decode(&in)
	}
	p := r.URL.EscapedPath()
	switch {
	case (ghList.MatchString(p) || glList.MatchString(p)) && r.Method == http.MethodGet:
		var list []any
		for _, pr := range s.prs {
			if pr.Open {
				list = append(list, render(pr, gitlab))
			}
		}
		if list == nil {
			list = []any{}
		}
		answer(w, http.StatusOK, list)
	case (ghList.MatchString(p) || glList.MatchString(p)) && r.Method == http.MethodPost:
		pr := &PR{Number: len(s.prs) + 1, Open: true, Head: in["head"] + in["source_branch"], Base: in["base"] + in["target_branch"],
			Title: in["title"], Body: in["body"] + in["description"]}
		for _, o := range s.prs {
			switch {
			case o.Open && o.Head == pr.Head && gitlab:
				answer(w, http.StatusConflict, map[string][]string{"message": {fmt.Sprintf("Another open merge request already exists for this source branch: !%d", o.Number)}})
				return
			case o.Open && o.Head == pr.Head:
				answer(w, http.StatusUnprocessableEntity, map[string]string{"message": "Validation Failed"})
				return
			}
		}
		s.prs = append(s.prs, pr)
		answer(w, http.StatusCreated, render(pr, gitlab))
	case ghComment.MatchString(p) || glNote.MatchString(p):
		pr := s.find(w, p)
		if pr != nil {
			pr.Comments = append(pr.Comments, in["body"])
			answer(w, http.StatusCreated, map[string]int{"id": len(pr.Comments)})
		}
	case (ghPull.MatchString(p) || glMR.MatchString(p)) && (r.Method == http.MethodPatch || r.Method == http.MethodPut):
		pr := s.find(w, p)
		if pr == nil {
			return
		}
		if in["state"] == "closed" || in["state_event"] == "close" {
			pr.Open = false
		}
		if t, ok := in["title"]; ok {
			pr.Title = t
			pr.Body = in["body"] + in["description"]
			pr.Edits++
		}
		answer(w, http.StatusOK, render(pr, gitlab))
	default:
		answer(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
	}
}

var number = regexp.MustCompile(`/(\d+)(/[a-z]+)?$`)

func (s *Server) find(w http.ResponseWriter, p string) *PR {
	m := number.FindStringSubmatch(p)
	n, _ := strconv.Atoi(m[1])
	if n < 1 || n > len(s.prs) {
		answer(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return nil
	}
	return s.prs[n-1]
}

func render(pr *PR, gitlab bool) any {
	url := fmt.Sprintf("https://example.test/pulls/%d", pr.Number)
	if gitlab {
		url = fmt.Sprintf("https://example.test/-/merge_requests/%d", pr.Number)
		return map[string]any{"iid": pr.Number, "web_url": url, "title": pr.Title, "description": pr.Body,
			"source_branch": pr.Head, "target_branch": pr.Base}
	}
	return map[string]any{"number": pr.Number, "html_url": url, "title": pr.Title, "body": pr.Body,
		"head": map[string]string{"ref": pr.Head}, "base": map[string]string{"ref": pr.Base}}
}

func answer(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
