package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/eddyops/eddy/pkg/events"
)

// GitLab sets a commit status through GitLab's REST API: POST
// `<scheme>://<host>/api/v4/projects/<url-encoded path>/statuses/<sha>`
// with `PRIVATE-TOKEN: <token>`. The address is the project URL.
// State: error ⇒ failed, else success. Flux compatible (gitlab.go).
type GitLab struct {
	api, project, token, uid string
	client                   *Client
}

func newGitLab(opts Options) (*GitLab, error) {
	base, project, err := gitAddress(opts)
	if err != nil {
		return nil, err
	}
	return &GitLab{api: base.String() + "/api/v4", project: project, token: opts.Token, uid: opts.ProviderUID, client: opts.Client}, nil
}

// Post sends ev.
func (g *GitLab) Post(ctx context.Context, ev *events.Event) error {
	sha, err := Commit(ev)
	if err != nil {
		return fmt.Errorf("gitlab: %w", err)
	}
	state := "success"
	if ev.Severity == events.SeverityError {
		state = "failed"
	}
	body, _ := json.Marshal(map[string]string{"state": state, "name": statusID(ctx, ev, g.uid), "description": statusDescription(ev)})
	u := fmt.Sprintf("%s/projects/%s/statuses/%s", g.api, url.PathEscape(g.project), sha)
	if _, err := g.client.PostJSON(ctx, u, body, map[string]string{"PRIVATE-TOKEN": g.token}); err != nil {
		return fmt.Errorf("gitlab: %w", err)
	}
	return nil
}
