package notifier

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
)

// Zulip sends a stream message with Zulip's REST API: POST
// `<server>/api/v1/messages` (the address's path is replaced), form
// encoded {type: stream, to, topic, content}, with basic authentication
// (the secret's `username`, a bot's email, and `password`, its API key).
// spec.channel is `<channel>/<topic>`. Flux compatible (zulip.go); Eddy
// refuses a Provider without credentials up front.
type Zulip struct {
	address, channel, topic string
	user, password          string
	client                  *Client
}

func newZulip(opts Options) (*Zulip, error) {
	u, err := webhookAddress(opts)
	if err != nil {
		return nil, err
	}
	channel, topic, ok := strings.Cut(opts.Channel, "/")
	if !ok || channel == "" || topic == "" {
		return nil, fmt.Errorf("zulip provider: spec.channel must be <channel>/<topic>")
	}
	if opts.Username == "" || opts.Password == "" {
		return nil, fmt.Errorf("zulip provider: the secret needs username and password keys (the bot's email and API key)")
	}
	u.Path, u.RawPath, u.RawQuery = "/api/v1/messages", "", ""
	return &Zulip{address: u.String(), channel: channel, topic: topic, user: opts.Username, password: opts.Password, client: opts.Client}, nil
}

// MarkdownPost is the Markdown text of ev used by Zulip: a `## Flux
// Status` heading, the mark and `<Kind>/<namespace>/<name>`, the message
// and the metadata as a list (the change request key left out).
func MarkdownPost(ev *events.Event) string {
	o := ev.InvolvedObject
	var b strings.Builder
	fmt.Fprintf(&b, "## Flux Status\n\n%s %s/%s/%s\n\n%s\n\nMetadata:\n", severityMark(ev, "ℹ️", "⚠️"), o.Kind, o.Namespace, o.Name, ev.Message)
	for _, k := range sortedKeys(ev.Metadata) {
		if k != "change_request" {
			fmt.Fprintf(&b, "* `%s`: %s\n", k, ev.Metadata[k])
		}
	}
	return b.String()
}

// Post sends ev.
func (z *Zulip) Post(ctx context.Context, ev *events.Event) error {
	form := url.Values{"type": {"stream"}, "to": {z.channel}, "topic": {z.topic}, "content": {MarkdownPost(ev)}}
	if _, err := z.client.Send(ctx, Request{URL: z.address, Body: []byte(form.Encode()),
		ContentType: "application/x-www-form-urlencoded", User: z.user, Password: z.password}); err != nil {
		return fmt.Errorf("zulip: %w", err)
	}
	return nil
}
