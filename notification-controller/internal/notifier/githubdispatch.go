package notifier

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/eddyops/eddy/pkg/events"
)

// GitHubDispatch triggers a repository_dispatch through GitHub's REST API:
// POST `<api>/repos/<owner>/<repo>/dispatches` with `Authorization: Bearer
// <token>`, event_type `<Kind>/<name>.<namespace>` and the event as
// client_payload. Address and API as for GitHub. It gets every event, not
// only commit statuses. Flux compatible (github_dispatch.go).
type GitHubDispatch struct {
	api, owner, repo, token string
	client                  *Client
}

func newGitHubDispatch(opts Options) (*GitHubDispatch, error) {
	g, err := newGitHub(opts)
	if err != nil {
		return nil, err
	}
	return &GitHubDispatch{api: g.api, owner: g.owner, repo: g.repo, token: g.token, client: g.client}, nil
}

// Post sends ev.
func (g *GitHubDispatch) Post(ctx context.Context, ev *events.Event) error {
	payload := map[string]any{
		"event_type":     ev.InvolvedObject.Kind + "/" + ev.InvolvedObject.Name + "." + ev.InvolvedObject.Namespace,
		"client_payload": ev,
	}
	headers := map[string]string{"Authorization": "Bearer " + g.token, "Accept": "application/vnd.github+json"}
	url := fmt.Sprintf("%s/repos/%s/%s/dispatches", g.api, g.owner, g.repo)
	body, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("githubdispatch: %w", err)
	}
	if _, err := g.client.PostJSON(ctx, url, body, headers); err != nil {
		return fmt.Errorf("githubdispatch: %w", err)
	}
	return nil
}
