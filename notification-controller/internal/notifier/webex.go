package notifier

import (
	"context"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
)

// Webex creates a message in a Webex room: POST to the address (Webex's
// https://webexapis.com/v1/messages) with `Authorization: Bearer <token>`
// (a bot's access token) and {"roomId": spec.channel, "markdown": text}.
// Flux compatible (webex.go); Eddy refuses a Provider without token or
// room up front, where Flux posts and Webex answers 401 or 400.
type Webex struct {
	address, room, token string
	client               *Client
}

func newWebex(opts Options) (*Webex, error) {
	if _, err := webhookAddress(opts); err != nil {
		return nil, err
	}
	if err := requireToken(opts); err != nil {
		return nil, err
	}
	if err := requireChannel(opts, "the room ID"); err != nil {
		return nil, err
	}
	return &Webex{address: opts.Address, room: opts.Channel, token: opts.Token, client: opts.Client}, nil
}

// WebexMarkdown is the message of ev: a mark by severity and the object in
// bold, the message, then one quoted `**key**: value` line per metadata
// entry.
func WebexMarkdown(ev *events.Event) string {
	var b strings.Builder
	b.WriteString(severityMark(ev, "✅", "💣") + " **" + objectID(ev) + "**\n" + ev.Message + "\n")
	for _, k := range sortedKeys(ev.Metadata) {
		b.WriteString(">**" + k + "**: " + ev.Metadata[k] + "\n")
	}
	return b.String()
}

// Post sends ev.
func (w *Webex) Post(ctx context.Context, ev *events.Event) error {
	payload := map[string]string{"roomId": w.room, "markdown": WebexMarkdown(ev)}
	_, err := postJSON(ctx, w.client, "webex", w.address, payload, map[string]string{"Authorization": "Bearer " + w.token})
	return err
}
