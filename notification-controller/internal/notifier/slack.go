package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
	"github.com/slack-go/slack"
)

// SlackPostMessageURL is Slack's chat.postMessage API, the address used when
// a token is given without one.
const SlackPostMessageURL = "https://slack.com/api/chat.postMessage"

// Slack posts Flux's attachment message to an incoming-webhook URL or, with
// a token, to chat.postMessage (`Authorization: Bearer <token>` whenever a
// token is set; chat.postMessage's answer must be `{"ok":true}`).
//
// Flux compatible payload (slack.go): one attachment, colour `good` (info)
// or `danger` (error), author `<kind>/<name>.<namespace>`, the message as
// markdown text, one field per metadata key (e.g. `revision`), sorted.
type Slack struct {
	address, token, channel, username string
	client                            *Client
}

func newSlack(opts Options) (*Slack, error) {
	if opts.Address == "" && opts.Token != "" {
		opts.Address = SlackPostMessageURL
	}
	if err := requireAddress(opts); err != nil {
		return nil, err
	}
	return &Slack{address: opts.Address, token: opts.Token, channel: opts.Channel, username: opts.Username, client: opts.Client}, nil
}

// SlackMessage builds the payload for ev; username defaults to the
// reporting controller.
func SlackMessage(ev *events.Event, channel, username string) *slack.WebhookMessage {
	if username == "" {
		username = ev.ReportingController
	}
	color := "good"
	if ev.Severity == events.SeverityError {
		color = "danger"
	}
	author := objectID(ev)
	first, _, _ := strings.Cut(ev.Message, "\n")
	att := slack.Attachment{
		Color:      color,
		Fallback:   author + ": " + first,
		AuthorName: author,
		Text:       ev.Message,
		MarkdownIn: []string{"text"},
	}
	for _, k := range sortedKeys(ev.Metadata) {
		att.Fields = append(att.Fields, slack.AttachmentField{Title: k, Value: ev.Metadata[k], Short: false})
	}
	return &slack.WebhookMessage{Channel: channel, Username: username, Attachments: []slack.Attachment{att}}
}

// Post sends ev.
func (s *Slack) Post(ctx context.Context, ev *events.Event) error {
	body, err := json.Marshal(SlackMessage(ev, s.channel, s.username))
	if err != nil {
		return err
	}
	headers := map[string]string{}
	if s.token != "" {
		headers["Authorization"] = "Bearer " + s.token
	}
	out, err := s.client.PostJSON(ctx, s.address, body, headers)
	if err != nil {
		return fmt.Errorf("slack: %w", err)
	}
	// Flux validates the answer of chat.postMessage only; an incoming
	// webhook answers plain "ok", with or without a token.
	if isPostMessage(s.address) {
		var ans struct {
			OK    bool   `json:"ok"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(out, &ans); err != nil || !ans.OK {
			return fmt.Errorf("slack: chat.postMessage did not answer ok: %q", ans.Error)
		}
	}
	return nil
}

// isPostMessage reports whether address is Slack's chat.postMessage API
// (by its path, so a test server or a proxying gateway counts too).
func isPostMessage(address string) bool {
	u, err := url.Parse(address)
	return err == nil && u.Path == "/api/chat.postMessage"
}
