package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
)

// Discord posts the Slack payload to the webhook's Slack-compatible endpoint
// (`<address>/slack`). Flux compatible (discord.go).
type Discord struct {
	address, channel, username string
	client                     *Client
}

func newDiscord(opts Options) (*Discord, error) {
	u, err := webhookAddress(opts)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(u.Path, "/slack") {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/slack"
	}
	return &Discord{address: u.String(), channel: opts.Channel, username: opts.Username, client: opts.Client}, nil
}

// Post sends ev.
func (d *Discord) Post(ctx context.Context, ev *events.Event) error {
	body, err := json.Marshal(SlackMessage(ev, d.channel, d.username))
	if err != nil {
		return err
	}
	if _, err := d.client.PostJSON(ctx, d.address, body, nil); err != nil {
		return fmt.Errorf("discord: %w", err)
	}
	return nil
}
