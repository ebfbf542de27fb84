package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/eddyops/eddy/pkg/events"
)

// ChangeRequestMetadataKey carries the number of the pull request an event
// is about; comment providers get only events that have it.
const ChangeRequestMetadataKey = "event.toolkit.fluxcd.io/change_request"

// IsChangeRequest reports whether t comments on pull requests.
func IsChangeRequest(t string) bool { return t == "githubpullrequestcomment" }

// GitHubPRComment keeps one comment per Provider and object on the pull
// request of the event's `change_request` metadata, through GitHub's REST
// API: it reads the token's login (GET `<api>/user`), lists the first 100
// comments (GET `…/issues/<n>/comments`) and edits the one of that login
// holding the comment's hidden key (PATCH `…/issues/comments/<id>`), else
// creates it (POST `…/issues/<n>/comments`). Address, API and token as for
// GitHub. Flux compatible (github_pull_request_comment.go); no GitHub App
// auth.
type GitHubPRComment struct {
	gh    *GitHub
	mu    sync.Mutex
	login string
	known bool
}

func newGitHubPRComment(opts Options) (*GitHubPRComment, error) {
	if opts.ProviderUID == "" {
		return nil, fmt.Errorf("%s provider: the Provider has no UID", opts.Type)
	}
	g, err := newGitHub(opts)
	if err != nil {
		return nil, err
	}
	return &GitHubPRComment{gh: g}, nil
}

type ghComment struct {
	ID   int64  `json:"id"`
	Body string `json:"body"`
	User struct {
		Login string `json:"login"`
	} `json:"user"`
}

// Post sends ev.
func (g *GitHubPRComment) Post(ctx context.Context, ev *events.Event) error {
	n, err := strconv.Atoi(ev.Metadata["change_request"])
	if err != nil || n <= 0 {
		return fmt.Errorf("githubpullrequestcomment: metadata change_request is not a pull request number")
	}
	login, err := g.userLogin(ctx)
	if err != nil {
		return fmt.Errorf("githubpullrequestcomment: reading the token's user: %w", err)
	}
	headers := map[string]string{"Authorization": "Bearer " + g.gh.token, "Accept": "application/vnd.github+json"}
	repo := fmt.Sprintf("%s/repos/%s/%s/issues", g.gh.api, g.gh.owner, g.gh.repo)
	var comments []ghComment
	list := Request{URL: fmt.Sprintf("%s/%d/comments?sort=created&direction=asc&per_page=100", repo, n), Headers: headers}
	if _, err := getExisting(ctx, g.gh.client, list, &comments); err != nil {
		return fmt.Errorf("githubpullrequestcomment: listing the comments: %w", err)
	}
	marker := commentMarker("flux-pr-comment-key", g.gh.uid, ev)
	body, _ := json.Marshal(map[string]string{"body": marker + "\n\n" + markdownPost(ev)})
	r := Request{URL: fmt.Sprintf("%s/%d/comments", repo, n), Body: body, Headers: headers}
	for _, c := range comments {
		if c.User.Login == login && strings.Contains(c.Body, marker) {
			r.Method, r.URL = http.MethodPatch, fmt.Sprintf("%s/comments/%d", repo, c.ID)
			break
		}
	}
	if _, err := g.gh.client.Send(ctx, r); err != nil {
		return fmt.Errorf("githubpullrequestcomment: %w", err)
	}
	return nil
}

// userLogin is the token's login, read once.
func (g *GitHubPRComment) userLogin(ctx context.Context) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.known {
		return g.login, nil
	}
	var u struct {
		Login string `json:"login"`
	}
	headers := map[string]string{"Authorization": "Bearer " + g.gh.token, "Accept": "application/vnd.github+json"}
	out, err := g.gh.client.Send(ctx, Request{Method: http.MethodGet, URL: g.gh.api + "/user", Headers: headers})
	if err != nil {
		return "", err
	}
	_ = json.Unmarshal(out, &u)
	g.login, g.known = u.Login, true
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
