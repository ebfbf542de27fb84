package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
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

// SlackPayload is Flux's Slack message (notifier/slack.go), the same keys
// always present: channel, username, icon_url, icon_emoji, attachments.
type SlackPayload struct {
	Channel     string            `json:"channel"`
	Username    string            `json:"username"`
	IconURL     string            `json:"icon_url"`
	IconEmoji   string            `json:"icon_emoji"`
	Attachments []SlackAttachment `json:"attachments"`
}

// SlackAttachment is one attachment: fallback, color, author_name, text,
// mrkdwn_in and fields ([] when the event has no metadata).
type SlackAttachment struct {
	Fallback   string       `json:"fallback"`
	Color      string       `json:"color"`
	AuthorName string       `json:"author_name"`
	Text       string       `json:"text"`
	MrkdwnIn   []string     `json:"mrkdwn_in"`
	Fields     []SlackField `json:"fields"`
}

// SlackField is one metadata entry: title, value, short (always false).
type SlackField struct {
	Title string `json:"title"`
	Value string `json:"value"`
	Short bool   `json:"short"`
}

// SlackMessage builds the payload for ev; username defaults to the
// reporting controller.
func SlackMessage(ev *events.Event, channel, username string) *SlackPayload {
	if username == "" {
		username = ev.ReportingController
	}
	color := "good"
	if ev.Severity == events.SeverityError {
		color = "danger"
	}
	author := objectID(ev)
	first, _, _ := strings.Cut(ev.Message, "\n")
	att := SlackAttachment{
		Color:      color,
		Fallback:   author + ": " + first,
		AuthorName: author,
		Text:       ev.Message,
		MrkdwnIn:   []string{"text"},
		Fields:     []SlackField{},
	}
	for _, k := range sortedKeys(ev.Metadata) {
		att.Fields = append(att.Fields, SlackField{Title: k, Value: ev.Metadata[k]})
	}
	return &SlackPayload{Channel: channel, Username: username, Attachments: []SlackAttachment{att}}
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
