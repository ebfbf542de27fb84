package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
)

// Bitbucket sets a build status through Bitbucket Cloud's REST API 2.0:
// GET `<api>/repositories/<workspace>/<repo>/commit/<sha>/statuses/build/<key>`
// reads the current one and, unless it already has the state and
// description, a POST to `…/statuses/build` sets it, with basic auth from
// the secret's `token`, `<username>:<app password>`. The address is the
// repository URL `https://bitbucket.org/<workspace>/<repo>`; the API is
// https://api.bitbucket.org/2.0, or `<scheme>://<host>/2.0` for another host
// (Flux always uses api.bitbucket.org). The key is the SHA-1 of the status
// id. State: error ⇒ FAILED, else SUCCESSFUL; Progressing events are
// skipped. Flux compatible (bitbucket.go).
type Bitbucket struct {
	api, user, password, uid string
	client                   *Client
}

type bitbucketStatus struct {
	Key         string `json:"key"`
	State       string `json:"state"`
	Name        string `json:"name"`
	Description string `json:"description"`
	URL         string `json:"url"`
}

func newBitbucket(opts Options) (*Bitbucket, error) {
	base, project, err := gitAddress(opts)
	if err != nil {
		return nil, err
	}
	user, password, ok := strings.Cut(opts.Token, ":")
	if !ok || strings.Contains(password, ":") {
		return nil, fmt.Errorf("%s provider: the secret's token key is not <username>:<app password>", opts.Type)
	}
	parts, err := repoParts(opts.Type, project, 2, "<workspace>/<repository>")
	if err != nil {
		return nil, err
	}
	api := base.String() + "/2.0"
	if base.Host == "bitbucket.org" || base.Host == "www.bitbucket.org" {
		api = "https://api.bitbucket.org/2.0"
	}
	api += "/repositories/" + url.PathEscape(parts[0]) + "/" + url.PathEscape(parts[1])
	return &Bitbucket{api: api, user: user, password: password, uid: opts.ProviderUID, client: opts.Client}, nil
}

// Post sends ev.
func (b *Bitbucket) Post(ctx context.Context, ev *events.Event) error {
	if ev.Reason == progressingReason {
		return nil
	}
	sha, err := commitOf("bitbucket", ev)
	if err != nil {
		return err
	}
	state := "SUCCESSFUL"
	if ev.Severity == events.SeverityError {
		state = "FAILED"
	}
	want := bitbucketStatus{Key: statusKey(statusID(ctx, ev, b.uid)), State: state, Description: statusDescription(ev),
		Name: strings.ToLower(ev.InvolvedObject.Kind + "/" + ev.InvolvedObject.Name), URL: "https://bitbucket.org"}
	r := Request{URL: b.api + "/commit/" + sha + "/statuses/build", User: b.user, Password: b.password}
	get := r
	get.URL += "/" + want.Key
	var have bitbucketStatus
	found, err := getExisting(ctx, b.client, get, &have)
	if err != nil {
		return fmt.Errorf("bitbucket: reading the build status: %w", err)
	}
	if found && have.State == want.State && have.Description == want.Description {
		return nil
	}
	r.Body, _ = json.Marshal(want)
	if _, err := b.client.Send(ctx, r); err != nil {
		return fmt.Errorf("bitbucket: %w", err)
	}
	return nil
}
