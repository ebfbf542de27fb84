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
// State: error ⇒ failure, else success; Progressing events are skipped and
// a status equal to the newest of its context (GET `…/commits/<sha>/statuses`)
// is not posted again. Flux compatible (github.go).
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

// Post sends ev, unless it is Progressing or the commit's newest status
// of the same context already has its state and description.
func (g *GitHub) Post(ctx context.Context, ev *events.Event) error {
	if ev.Reason == progressingReason {
		return nil
	}
	sha, err := commitOf("github", ev)
	if err != nil {
		return err
	}
	state := "success"
	if ev.Severity == events.SeverityError {
		state = "failure"
	}
	want := githubStatus{State: state, Context: statusID(ctx, ev, g.uid), Description: events.Truncate(statusDescription(ev), 140)} // GitHub's limit
	repo := fmt.Sprintf("%s/repos/%s/%s", g.api, g.owner, g.repo)
	headers := map[string]string{"Authorization": "Bearer " + g.token, "Accept": "application/vnd.github+json"}
	var have []githubStatus
	list := Request{URL: fmt.Sprintf("%s/commits/%s/statuses?per_page=50", repo, sha), Headers: headers}
	if _, err := getExisting(ctx, g.client, list, &have); err != nil {
		return fmt.Errorf("github: listing the commit's statuses: %w", err)
	}
	// The list is newest first: the first of the same context decides.
	for _, s := range have {
		if s.Context == "" || s.State == "" || s.Description == "" {
			continue
		}
		if s.Context == want.Context {
			if s.State == want.State && s.Description == want.Description {
				return nil
			}
			break
		}
	}
	body, _ := json.Marshal(want)
	if _, err := g.client.PostJSON(ctx, fmt.Sprintf("%s/statuses/%s", repo, sha), body, headers); err != nil {
		return fmt.Errorf("github: %w", err)
	}
	return nil
}

type githubStatus struct {
	State       string `json:"state"`
	Context     string `json:"context"`
	Description string `json:"description"`
}

func splitLast(project string) (string, string) {
	for i := len(project) - 1; i >= 0; i-- {
		if project[i] == '/' {
			return project[:i], project[i+1:]
		}
	}
	return "", project
}
