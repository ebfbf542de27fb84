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
// State: error ⇒ failed, else success; Progressing events are skipped and
// a status the commit already has (GET `…/repository/commits/<sha>/statuses?name=<name>`,
// any with the same state and description) is not posted again. Flux
// compatible (gitlab.go).
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

// Post sends ev, unless it is Progressing or the commit already has a
// status of the same name, state and description.
func (g *GitLab) Post(ctx context.Context, ev *events.Event) error {
	if ev.Reason == progressingReason {
		return nil
	}
	sha, err := commitOf("gitlab", ev)
	if err != nil {
		return err
	}
	state := "success"
	if ev.Severity == events.SeverityError {
		state = "failed"
	}
	name, desc := statusID(ctx, ev, g.uid), statusDescription(ev)
	project := fmt.Sprintf("%s/projects/%s", g.api, url.PathEscape(g.project))
	headers := map[string]string{"PRIVATE-TOKEN": g.token}
	var have []struct {
		SHA         string `json:"sha"`
		Status      string `json:"status"`
		Name        string `json:"name"`
		Description string `json:"description"`
	}
	list := Request{URL: fmt.Sprintf("%s/repository/commits/%s/statuses?name=%s", project, sha, url.QueryEscape(name)), Headers: headers}
	if _, err := getExisting(ctx, g.client, list, &have); err != nil {
		return fmt.Errorf("gitlab: listing the commit's statuses: %w", err)
	}
	for _, s := range have {
		if s.SHA == sha && s.Status == state && s.Name == name && s.Description == desc {
			return nil
		}
	}
	body, _ := json.Marshal(map[string]string{"state": state, "name": name, "description": desc})
	if _, err := g.client.PostJSON(ctx, fmt.Sprintf("%s/statuses/%s", project, sha), body, headers); err != nil {
		return fmt.Errorf("gitlab: %w", err)
	}
	return nil
}
