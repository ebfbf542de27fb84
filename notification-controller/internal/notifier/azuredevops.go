package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"

	"github.com/eddyops/eddy/pkg/events"
)

// AzureDevOps sets a commit status through Azure DevOps' REST API (6.0):
// GET `<host>/<org>/<project>/_apis/git/repositories/<repo>/commits/<sha>/statuses`
// lists the statuses and, unless the first one of the same context name
// and genre already has the state and description, a POST to the same
// path creates one. Auth: basic, empty user and the secret's `token` (a
// personal access token; Flux's managed identity is not supported). The
// address is the repository URL `<host>/<org>/<project>/_git/<repo>`.
// Context: name the status id, genre `fluxcd`, or `fluxcd:<summary>` with
// the `summary` metadata. State: error ⇒ error, else succeeded;
// Progressing events are skipped. Flux compatible (azure_devops.go).
type AzureDevOps struct {
	statuses, token, uid string
	client               *Client
}

type azureStatus struct {
	State       string `json:"state"`
	Description string `json:"description"`
	Context     struct {
		Name  string `json:"name"`
		Genre string `json:"genre"`
	} `json:"context"`
}

func newAzureDevOps(opts Options) (*AzureDevOps, error) {
	base, project, err := gitAddress(opts)
	if err != nil {
		return nil, err
	}
	parts, err := repoParts(opts.Type, project, 4, "<organization>/<project>/_git/<repository>")
	if err != nil {
		return nil, err
	}
	var p []string
	for _, s := range []string{parts[0], parts[1], parts[3]} {
		p = append(p, url.PathEscape(s))
	}
	u := fmt.Sprintf("%s/%s/%s/_apis/git/repositories/%s/commits/", base, p[0], p[1], p[2])
	return &AzureDevOps{statuses: u, token: opts.Token, uid: opts.ProviderUID, client: opts.Client}, nil
}

// Post sends ev.
func (a *AzureDevOps) Post(ctx context.Context, ev *events.Event) error {
	if ev.Reason == progressingReason {
		return nil
	}
	sha, err := commitOf("azuredevops", ev)
	if err != nil {
		return err
	}
	var want azureStatus
	want.State, want.Description = "succeeded", statusDescription(ev)
	if ev.Severity == events.SeverityError {
		want.State = "error"
	}
	want.Context.Name, want.Context.Genre = statusID(ctx, ev, a.uid), "fluxcd"
	if s, ok := ev.Metadata["summary"]; ok {
		want.Context.Genre += ":" + s
	}
	r := Request{URL: a.statuses + sha + "/statuses?api-version=6.0", Password: a.token}
	var have struct {
		Value []azureStatus `json:"value"`
	}
	if _, err := getExisting(ctx, a.client, r, &have); err != nil {
		return fmt.Errorf("azuredevops: listing the commit's statuses: %w", err)
	}
	for _, s := range have.Value {
		if s.Context.Name == "" || s.Context.Genre == "" || s.State == "" || s.Description == "" {
			continue
		}
		if s.Context.Name == want.Context.Name && s.Context.Genre == want.Context.Genre {
			if s.State == want.State && s.Description == want.Description {
				return nil
			}
			break
		}
	}
	r.Body, _ = json.Marshal(want)
	if _, err := a.client.Send(ctx, r); err != nil {
		return fmt.Errorf("azuredevops: %w", err)
	}
	return nil
}
