package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/eddyops/eddy/pkg/events"
)

// Gitea sets a commit status through Gitea's REST API: it lists the
// commit's statuses (GET `<host>/api/v1/repos/<owner>/<repo>/commits/<sha>/statuses`)
// and, unless the newest one of the same context already has the state and
// description, POSTs `<host>/api/v1/repos/<owner>/<repo>/statuses/<sha>`,
// with `Authorization: token <token>`. The token is the secret's `token`,
// else its `password`. The address is the repository URL
// `<host>/<owner>/<repo>`. State: Progressing ⇒ pending, error ⇒ failure,
// else success. Flux compatible (gitea.go).
type Gitea struct {
	api, owner, repo, token, uid string
	client                       *Client
}

func newGitea(opts Options) (*Gitea, error) {
	if opts.Token == "" {
		opts.Token = opts.Password
	}
	base, project, err := gitAddress(opts)
	if err != nil {
		return nil, err
	}
	parts, err := repoParts(opts.Type, project, 2, "<owner>/<repository>")
	if err != nil {
		return nil, err
	}
	return &Gitea{api: base.String() + "/api/v1", owner: parts[0], repo: parts[1], token: opts.Token,
		uid: opts.ProviderUID, client: opts.Client}, nil
}

type giteaStatus struct {
	State       string `json:"state"`
	Context     string `json:"context"`
	Description string `json:"description"`
	TargetURL   string `json:"target_url"`
}

// Post sends ev.
func (g *Gitea) Post(ctx context.Context, ev *events.Event) error {
	sha, err := commitOf("gitea", ev)
	if err != nil {
		return err
	}
	state := "success"
	switch {
	case ev.Reason == progressingReason:
		state = "pending"
	case ev.Severity == events.SeverityError:
		state = "failure"
	}
	want := giteaStatus{State: state, Context: statusID(ctx, ev, g.uid), Description: statusDescription(ev)}
	repo := url.PathEscape(g.owner) + "/" + url.PathEscape(g.repo)
	headers := map[string]string{"Authorization": "token " + g.token}
	var have []giteaStatus
	list := Request{URL: fmt.Sprintf("%s/repos/%s/commits/%s/statuses?page=1&limit=50", g.api, repo, sha), Headers: headers}
	if _, err := getExisting(ctx, g.client, list, &have); err != nil {
		return fmt.Errorf("gitea: listing the commit's statuses: %w", err)
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
	if _, err := g.client.PostJSON(ctx, fmt.Sprintf("%s/repos/%s/statuses/%s", g.api, repo, sha), body, headers); err != nil {
		return fmt.Errorf("gitea: %w", err)
	}
	return nil
}
