package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
)

// mastodonStatusesPath is Mastodon's REST endpoint that publishes a status.
const mastodonStatusesPath = "/api/v1/statuses"

// MastodonMaxChars is the length of a status a Mastodon server accepts by
// default (500 characters); a longer text is cut there.
const MastodonMaxChars = 500

// Mastodon publishes each event as a status: POST
// `<address>/api/v1/statuses` with `Authorization: Bearer <token>` and the
// JSON body {"status": <text>}. The address is the instance's base URL
// (e.g. https://mastodon.social); the token, the secret's `token` key, is
// an access token with the write:statuses scope. The text is
// `<kind>/<name>.<namespace>`, the message and the metadata lines
// (`key: value`, sorted), cut to MastodonMaxChars. Flux v2.10 added the
// type (api v1 MastodonProvider); the payload is Eddy's reading of
// Mastodon's API, as Flux's notifier code was not available.
type Mastodon struct {
	address, token string
	client         *Client
}

func newMastodon(opts Options) (*Mastodon, error) {
	u, err := webhookAddress(opts)
	if err != nil {
		return nil, err
	}
	if opts.Token == "" {
		return nil, fmt.Errorf("%s provider: the secret has no token key", opts.Type)
	}
	if !strings.HasSuffix(u.Path, mastodonStatusesPath) {
		u.Path = strings.TrimSuffix(u.Path, "/") + mastodonStatusesPath
	}
	return &Mastodon{address: u.String(), token: opts.Token, client: opts.Client}, nil
}

// MastodonStatus is the status text of ev.
func MastodonStatus(ev *events.Event) string {
	var b strings.Builder
	b.WriteString(objectID(ev) + "\n" + ev.Message)
	if len(ev.Metadata) > 0 {
		b.WriteString("\n")
		for _, k := range sortedKeys(ev.Metadata) {
			b.WriteString("\n" + k + ": " + ev.Metadata[k])
		}
	}
	return events.Truncate(b.String(), MastodonMaxChars)
}

// Post sends ev.
func (m *Mastodon) Post(ctx context.Context, ev *events.Event) error {
	body, err := json.Marshal(map[string]string{"status": MastodonStatus(ev)})
	if err != nil {
		return err
	}
	if _, err := m.client.PostJSON(ctx, m.address, body, map[string]string{"Authorization": "Bearer " + m.token}); err != nil {
		return fmt.Errorf("mastodon: %w", err)
	}
	return nil
}
