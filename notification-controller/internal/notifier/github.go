package notifier

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/eddyops/eddy/pkg/events"
)

// GitHub sets a commit status through GitHub's REST API: POST
// `<api>/repos/<owner>/<repo>/statuses/<sha>` with `Authorization: Bearer
// <token>`. The address is the repository URL; its API is
// https://api.github.com for github.com and `<scheme>://<host>/api/v3`
// otherwise (GitHub Enterprise, or a local test server).
// State: error ⇒ failure, else success. Flux compatible (github.go).
type GitHub struct {
	api, owner, repo, token, uid string
	client                       *Client
}

func newGitHub(opts Options) (*GitHub, error) {
	base, project, err := gitAddress(opts)
	if err != nil {
		return nil, err
	}
	api := base.String() + "/api/v3"
	if base.Host == "github.com" {
		api = "https://api.github.com"
	}
	owner, repo := splitLast(project)
	return &GitHub{api: api, owner: owner, repo: repo, token: opts.Token, uid: opts.ProviderUID, client: opts.Client}, nil
}

// Post sends ev.
func (g *GitHub) Post(ctx context.Context, ev *events.Event) error {
	sha, err := Commit(ev)
	if err != nil {
		return fmt.Errorf("github: %w", err)
	}
	state := "success"
	if ev.Severity == events.SeverityError {
		state = "failure"
	}
	desc := events.Truncate(statusDescription(ev), 140) // GitHub's limit
	body, _ := json.Marshal(map[string]string{"state": state, "context": statusID(ctx, ev, g.uid), "description": desc})
	url := fmt.Sprintf("%s/repos/%s/%s/statuses/%s", g.api, g.owner, g.repo, sha)
	headers := map[string]string{"Authorization": "Bearer " + g.token, "Accept": "application/vnd.github+json"}
	if _, err := g.client.PostJSON(ctx, url, body, headers); err != nil {
		return fmt.Errorf("github: %w", err)
	}
	return nil
}

func splitLast(project string) (string, string) {
	for i := len(project) - 1; i >= 0; i-- {
		if project[i] == '/' {
			return project[:i], project[i+1:]
		}
	}
	return "", project
}
