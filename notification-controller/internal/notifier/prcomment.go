package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/eddyops/eddy/pkg/events"
)

// ChangeRequestMetadataKey carries the number of the pull request an event
// is about; comment providers get only events that have it.
const ChangeRequestMetadataKey = "event.toolkit.fluxcd.io/change_request"

// IsChangeRequest reports whether t comments on pull requests.
func IsChangeRequest(t string) bool {
	return t == "githubpullrequestcomment" || t == "giteapullrequestcomment" || t == "gitlabmergerequestcomment"
}

// PRComment keeps one comment per Provider and object on the pull request
// of the event's `change_request` metadata, through GitHub's or Gitea's
// REST API, which agree here: it reads the token's login (GET
// `<api>/user`), lists the first 100 comments (GET
// `<api>/repos/<owner>/<repo>/issues/<n>/comments`) and edits the one of
// that login holding the comment's hidden key (PATCH
// `…/issues/comments/<id>`), else creates it (POST `…/issues/<n>/comments`).
// Address and token as for github (Bearer) or gitea (`token`). Flux
// compatible (github_pull_request_comment.go,
// gitea_pull_request_comment.go); no GitHub App auth.
//
// gitlabmergerequestcomment does the same with GitLab's notes: GET
// `<host>/api/v4/user`, GET, PUT `…/notes/<id>` or POST
// `<host>/api/v4/projects/<url-encoded path>/merge_requests/<iid>/notes`,
// with `PRIVATE-TOKEN`, the note's `author.username` and key prefix
// `flux-mr-comment-key` (gitlab_merge_request_comment.go).
type PRComment struct {
	typ, api, issues, listQuery, uid string
	// notes: GitLab's names and PUT; else GitHub's and Gitea's.
	notes   bool
	headers map[string]string
	client  *Client
	mu      sync.Mutex
	login   string
	known   bool
}

func newPRComment(opts Options) (*PRComment, error) {
	if opts.ProviderUID == "" {
		return nil, fmt.Errorf("%s provider: the Provider has no UID", opts.Type)
	}
	c := &PRComment{typ: opts.Type, uid: opts.ProviderUID, client: opts.Client}
	switch opts.Type {
	case "gitlabmergerequestcomment":
		g, err := newGitLab(opts)
		if err != nil {
			return nil, err
		}
		c.api, c.listQuery, c.notes, c.headers = g.api, "sort=asc&order_by=created_at&per_page=100", true, map[string]string{"PRIVATE-TOKEN": g.token}
		c.issues = fmt.Sprintf("%s/projects/%s/merge_requests", g.api, url.PathEscape(g.project))
		return c, nil
	case "giteapullrequestcomment":
		g, err := newGitea(opts)
		if err != nil {
			return nil, err
		}
		c.api, c.listQuery, c.headers = g.api, "page=1&limit=100", map[string]string{"Authorization": "token " + g.token}
		c.issues = fmt.Sprintf("%s/repos/%s/%s/issues", g.api, url.PathEscape(g.owner), url.PathEscape(g.repo))
		return c, nil
	}
	g, err := newGitHub(opts)
	if err != nil {
		return nil, err
	}
	c.api, c.listQuery = g.api, "sort=created&direction=asc&per_page=100"
	c.headers = map[string]string{"Authorization": "Bearer " + g.token, "Accept": "application/vnd.github+json"}
	c.issues = fmt.Sprintf("%s/repos/%s/%s/issues", g.api, g.owner, g.repo)
	return c, nil
}

type prComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
	Author struct {
		Username string `json:"username"`
	} `json:"author"`
}

// Post sends ev.
func (g *PRComment) Post(ctx context.Context, ev *events.Event) error {
	n, err := strconv.Atoi(ev.Metadata["change_request"])
	if err != nil || n <= 0 {
		return fmt.Errorf("%s: metadata change_request is not a pull request number", g.typ)
	}
	login, err := g.userLogin(ctx)
	if err != nil {
		return fmt.Errorf("%s: reading the token's user: %w", g.typ, err)
	}
	coll, prefix := fmt.Sprintf("%s/%d/comments", g.issues, n), "flux-pr-comment-key"
	if g.notes {
		coll, prefix = fmt.Sprintf("%s/%d/notes", g.issues, n), "flux-mr-comment-key"
	}
	var comments []prComment
	if _, err := getExisting(ctx, g.client, Request{URL: coll + "?" + g.listQuery, Headers: g.headers}, &comments); err != nil {
		return fmt.Errorf("%s: listing the comments: %w", g.typ, err)
	}
	marker := commentMarker(prefix, g.uid, ev)
	body, _ := json.Marshal(map[string]string{"body": marker + "\n\n" + markdownPost(ev)})
	r := Request{URL: coll, Body: body, Headers: g.headers}
	for _, c := range comments {
		switch {
		case g.notes && c.Author.Username == login && strings.Contains(c.Body, marker):
			r.Method, r.URL = http.MethodPut, fmt.Sprintf("%s/%d", coll, c.ID)
		case !g.notes && c.User.Login == login && strings.Contains(c.Body, marker):
			r.Method, r.URL = http.MethodPatch, fmt.Sprintf("%s/comments/%d", g.issues, c.ID)
		default:
			continue
		}
		break
	}
	if _, err := g.client.Send(ctx, r); err != nil {
		return fmt.Errorf("%s: %w", g.typ, err)
	}
	return nil
}

// userLogin is the token's login, read once.
func (g *PRComment) userLogin(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.known {
		return g.login, nil
	}
	var u struct {
		Login    string `json:"login"`
		Username string `json:"username"`
	}
	out, err := g.client.Send(ctx, Request{Method: http.MethodGet, URL: g.api + "/user", Headers: g.headers})
	if err != nil {
		return "", err
	}
	_ = json.Unmarshal(out, &u)
	g.login, g.known = u.Login, true
	if g.notes {
		g.login = u.Username
	}
	return g.login, nil
}

// commentMarker is the hidden key of a Provider's comment about one
// object: `<!-- <prefix>:<provider UID>/<kind>/<namespace>/<name> -->`.
func commentMarker(prefix, providerUID string, ev *events.Event) string {
	o := ev.InvolvedObject
	return fmt.Sprintf("<!-- %s:%s/%s/%s/%s -->", prefix, providerUID, o.Kind, o.Namespace, o.Name)
}

// markdownPost is Flux's Markdown rendering of an event: a heading, the
// severity mark and object, the message and the metadata but the pull
// request number, sorted.
func markdownPost(ev *events.Event) string {
	var b strings.Builder
	o := ev.InvolvedObject
	fmt.Fprintf(&b, "## Flux Status\n\n%s %s/%s/%s\n\n%s\n\nMetadata:\n", severityMark(ev, "ℹ️", "⚠️"), o.Kind, o.Namespace, o.Name, ev.Message)
	for _, k := range sortedKeys(ev.Metadata) {
		if k != "change_request" {
			fmt.Fprintf(&b, "* `%s`: %s\n", k, ev.Metadata[k])
		}
	}
	return b.String()
}
