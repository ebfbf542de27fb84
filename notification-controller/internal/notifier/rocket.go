package notifier

import (
	"context"

	"github.com/eddyops/eddy/pkg/events"
)

// Rocket posts the Slack attachment message to a Rocket.Chat incoming
// webhook. Flux compatible (rocket.go): colours `#0076D7` (info) and
// `#FF0000` (error), spec.channel and spec.username as given (no default
// username), no fallback text.
type Rocket struct {
	address, channel, username string
	client                     *Client
}

func newRocket(opts Options) (*Rocket, error) {
	if _, err := webhookAddress(opts); err != nil {
		return nil, err
	}
	return &Rocket{address: opts.Address, channel: opts.Channel, username: opts.Username, client: opts.Client}, nil
}

// RocketMessage is the payload for ev.
func RocketMessage(ev *events.Event, channel, username string) *SlackPayload {
	p := SlackMessage(ev, channel, username)
	p.Username = username
	p.Attachments[0].Color = severityMark(ev, "#0076D7", "#FF0000")
	p.Attachments[0].Fallback = ""
	return p
}

// Post sends ev.
func (r *Rocket) Post(ctx context.Context, ev *events.Event) error {
	_, err := postJSON(ctx, r.client, "rocket", r.address, RocketMessage(ev, r.channel, r.username), nil)
	return err
}
