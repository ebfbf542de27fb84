package notifier

import (
	"context"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
)

// TelegramAPI is the Bot API server used when the Provider has no address.
const TelegramAPI = "https://api.telegram.org"

// Telegram sends each event with the Bot API's sendMessage: POST
// `<server>/bot<token>/sendMessage` with {chat_id, message_thread_id,
// text, parse_mode: MarkdownV2}. spec.channel is the chat: `@channel`, a
// chat id, or `<chat id>:<topic id>` for a forum topic. Flux compatible
// (telegram.go) but for the server: Flux always uses api.telegram.org,
// Eddy uses the address when one is set (a self-hosted Bot API server).
type Telegram struct {
	address, chat, thread string
	client                *Client
}

func newTelegram(opts Options) (*Telegram, error) {
	if opts.Address == "" {
		opts.Address = TelegramAPI
	}
	u, err := webhookAddress(opts)
	if err != nil {
		return nil, err
	}
	if err := requireToken(opts); err != nil {
		return nil, err
	}
	if err := requireChannel(opts, "the chat"); err != nil {
		return nil, err
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/bot" + opts.Token + "/sendMessage"
	u.RawPath = ""
	chat, thread, _ := strings.Cut(opts.Channel, ":")
	return &Telegram{address: u.String(), chat: chat, thread: thread, client: opts.Client}, nil
}

// TelegramPayload is sendMessage's body.
type TelegramPayload struct {
	ChatID          string `json:"chat_id"`
	MessageThreadID string `json:"message_thread_id,omitempty"`
	Text            string `json:"text"`
	ParseMode       string `json:"parse_mode"`
}

// TelegramText is the MarkdownV2 text of ev: the mark and
// `<kind>/<name>/<namespace>` in bold, the message, then `- *key*: value`
// per metadata entry, every reserved character escaped.
func TelegramText(ev *events.Event) string {
	o := ev.InvolvedObject
	heading := severityMark(ev, "💫", "🚨") + " " + strings.ToLower(o.Kind) + "/" + o.Name + "/" + o.Namespace
	var b strings.Builder
	b.WriteString("*" + telegramEscape(heading) + "*\n" + telegramEscape(ev.Message) + "\n")
	for _, k := range sortedKeys(ev.Metadata) {
		b.WriteString(`\- *` + telegramEscape(k) + "*: " + telegramEscape(ev.Metadata[k]) + "\n")
	}
	return b.String()
}

// telegramEscape escapes the characters MarkdownV2 reserves.
func telegramEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\_*[]()~`>#+-=|{}.!", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// Post sends ev.
func (t *Telegram) Post(ctx context.Context, ev *events.Event) error {
	payload := TelegramPayload{ChatID: t.chat, MessageThreadID: t.thread, Text: TelegramText(ev), ParseMode: "MarkdownV2"}
	_, err := postJSON(ctx, t.client, "telegram", t.address, payload, nil)
	return err
}
