// Package pullrequest opens, updates and closes the pull request (GitLab:
// merge request) of an ImageUpdateAutomation's spec.git.push.pullRequest,
// an Eddy extension, through the GitHub REST API and GitLab's REST API v4.
// An automation's pull requests are found by a marker line in their body
// (Marker), not by their head branch, so that a pull request left on an
// old branch (the branch template changed) is still found and closed.
package pullrequest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/eddyops/eddy/pkg/events"
)

// PullRequest is an open pull request (GitLab: merge request).
type PullRequest struct {
	// Number is GitHub's number, GitLab's iid.
	Number int
	URL    string
	// Head is the source branch, Base the target branch.
	Head, Base  string
	Title, Body string
	// Ref is how the host's comments refer to it: "#12" on GitHub, "!12"
	// on GitLab (where "#12" is an issue).
	Ref string
	// Kind is "pull request" (GitHub) or "merge request" (GitLab).
	Kind string
}

// Name is the pull request as messages name it: "pull request #12",
// "merge request !12".
func (pr PullRequest) Name() string { return pr.Kind + " " + pr.Ref }

// Provider is a Git host's pull request API.
type Provider interface {
	// Open lists the open pull requests whose body holds marker.
	Open(ctx context.Context, marker string) ([]PullRequest, error)
	// Create opens a pull request from head into base.
	Create(ctx context.Context, head, base, title, body string) (PullRequest, error)
	// Edit sets the title and body of pr.
	Edit(ctx context.Context, pr PullRequest, title, body string) (PullRequest, error)
	// Close comments on pr, then closes it.
	Close(ctx context.Context, pr PullRequest, comment string) error
}

// APIError is a refused API call: the HTTP status code and the API's own
// message, never the request (which carries the token).
type APIError struct {
	Provider string
	Status   int
	Message  string
}

func (e *APIError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("%s API: %d %s", e.Provider, e.Status, http.StatusText(e.Status))
	}
	// GitLab's messages often start with the status ("401 Unauthorized").
	return fmt.Sprintf("%s API: %d %s", e.Provider, e.Status, strings.TrimPrefix(e.Message, fmt.Sprintf("%d ", e.Status)))
}

// Marker is the line an automation writes at the end of its pull
// requests' bodies (an HTML comment, invisible once rendered).
func Marker(namespace, name string) string {
	return fmt.Sprintf("<!-- eddy image automation: %s/%s -->", namespace, name)
}

// ErrNoAPIURL: the API cannot be derived from the Git URL's host.
var ErrNoAPIURL = errors.New("spec.git.push.pullRequest.apiURL is required for this Git host")

// New is the provider ("github" or "gitlab") for the repository at
// gitURL (https, ssh or scp-like), at apiURL or, when empty, at the API
// derived from the host: github.com is https://api.github.com, gitlab.com
// https://gitlab.com/api/v4; other hosts (GitHub Enterprise, self-hosted
// GitLab) need apiURL (ErrNoAPIURL).
func New(provider, apiURL, gitURL, token string, hc *http.Client) (Provider, error) {
	host, path, err := splitGitURL(gitURL)
	if err != nil {
		return nil, err
	}
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	hc = sameHostRedirects(hc)
	if apiURL == "" {
		switch {
		case provider == "github" && host == "github.com":
			apiURL = "https://api.github.com"
		case provider == "gitlab" && host == "gitlab.com":
			apiURL = "https://gitlab.com/api/v4"
		default:
			return nil, fmt.Errorf("%w (host '%s')", ErrNoAPIURL, host)
		}
	}
	c := &api{base: strings.TrimSuffix(apiURL, "/"), token: token, hc: hc, provider: provider}
	switch provider {
	case "github":
		owner, repo, ok := strings.Cut(path, "/")
		if !ok || strings.Contains(repo, "/") {
			return nil, fmt.Errorf("git URL path '%s' is not owner/repository", path)
		}
		c.auth = func(h http.Header) {
			h.Set("Authorization", "Bearer "+token)
			h.Set("Accept", "application/vnd.github+json")
		}
		return &gitHub{api: c, repo: "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(repo)}, nil
	case "gitlab":
		c.auth = func(h http.Header) { h.Set("PRIVATE-TOKEN", token) }
		return &gitLab{api: c, project: "/projects/" + url.PathEscape(path)}, nil
	}
	return nil, fmt.Errorf("pull request provider '%s' not supported (github, gitlab)", provider)
}

// splitGitURL returns the host and the repository path (no leading
// slash, no .git suffix) of a Git URL.
func splitGitURL(gitURL string) (host, path string, err error) {
	if !strings.Contains(gitURL, "://") {
		// scp-like: [user@]host:path
		at := strings.LastIndex(gitURL, "@")
		h, p, ok := strings.Cut(gitURL[at+1:], ":")
		if !ok {
			return "", "", errors.New("git URL has no host")
		}
		host, path = h, p
	} else {
		u, err := url.Parse(gitURL)
		if err != nil {
			return "", "", errors.New("git URL cannot be parsed")
		}
		host, path = u.Hostname(), u.Path
	}
	path = strings.TrimSuffix(strings.Trim(path, "/"), ".git")
	if host == "" || path == "" {
		return "", "", errors.New("git URL has no host or path")
	}
	return host, path, nil
}

// api is the HTTP side shared by both providers.
type api struct {
	base, token, provider string
	hc                    *http.Client
	auth                  func(http.Header)
}

// call sends in (JSON, unless nil) and decodes the answer into out
// (unless nil); a status >= 300 is an *APIError with the API's message.
func (c *api) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("%s API: bad request URL", c.provider)
	}
	c.auth(req.Header)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.scrub(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return c.scrub(err)
	}
	if resp.StatusCode >= 300 {
		return &APIError{Provider: c.provider, Status: resp.StatusCode, Message: events.Truncate(c.scrubText(apiMessage(b)), maxMessage)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s API: %s %s: answer is not the expected JSON", c.provider, method, path)
	}
	return nil
}

// scrub keeps the token out of a transport error (it is never in the URL,
// but a proxy or a redirect could echo it).
func (c *api) scrub(err error) error {
	return fmt.Errorf("%s API: %s", c.provider, events.Truncate(c.scrubText(err.Error()), maxMessage))
}

// scrubText is s with the token replaced by "***".
func (c *api) scrubText(s string) string {
	if c.token != "" {
		s = strings.ReplaceAll(s, c.token, "***")
	}
	return s
}

// maxMessage bounds an API's message as conditions and events carry it
// (a condition's message holds at most 32768 characters; an error page
// can be megabytes).
const maxMessage = 1024

// ErrRedirectOtherHost: the API answered with a redirect to another host,
// which would be sent the token (Go's client drops Authorization on such a
// redirect, not GitLab's PRIVATE-TOKEN).
var ErrRedirectOtherHost = errors.New("redirect to another host refused")

// sameHostRedirects is a copy of hc that follows redirects only within the
// first request's host (and its CheckRedirect, if any).
func sameHostRedirects(hc *http.Client) *http.Client {
	c := *hc
	next := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host != via[0].URL.Host {
			return ErrRedirectOtherHost
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	}
	return &c
}

// apiMessage is the "message" of a GitHub error (with its errors'
// messages) or GitLab's "message"/"error", else "".
func apiMessage(b []byte) string {
	var e struct {
		Message any    `json:"message"`
		Error   string `json:"error"`
		Errors  []struct {
			Message string `json:"message"`
		} `json:"errors"`
	}
	if json.Unmarshal(b, &e) != nil {
		return ""
	}
	var parts []string
	switch m := e.Message.(type) {
	case string:
		parts = append(parts, m)
	case nil:
	case []any: // GitLab: {"message": ["..."]}
		for _, x := range m {
			if s, ok := x.(string); ok {
				parts = append(parts, s)
			} else if j, err := json.Marshal(x); err == nil {
				parts = append(parts, string(j))
			}
		}
	default:
		if j, err := json.Marshal(m); err == nil {
			parts = append(parts, string(j))
		}
	}
	if e.Error != "" {
		parts = append(parts, e.Error)
	}
	for _, x := range e.Errors {
		if x.Message != "" {
			parts = append(parts, x.Message)
		}
	}
	return strings.Join(parts, ": ")
}
