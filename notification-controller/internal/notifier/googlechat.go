package notifier

import (
	"context"

	"github.com/eddyops/eddy/pkg/events"
)

// GoogleChat posts a card (Chat API cards v1) to a Google Chat space's
// incoming webhook. Flux compatible (google_chat.go): the header is
// `<kind>/<name>.<namespace>` over the reporting controller, one section
// holds the message (red for an error), a second one the metadata as
// key-value widgets; every key of the card is present, null when unset.
type GoogleChat struct {
	address string
	client  *Client
}

func newGoogleChat(opts Options) (*GoogleChat, error) {
	if _, err := webhookAddress(opts); err != nil {
		return nil, err
	}
	return &GoogleChat{address: opts.Address, client: opts.Client}, nil
}

// GoogleChatPayload is the webhook message: one card.
type GoogleChatPayload struct {
	Cards []GoogleChatCard `json:"cards"`
}

// GoogleChatCard is a header and its sections.
type GoogleChatCard struct {
	Header   GoogleChatHeader    `json:"header"`
	Sections []GoogleChatSection `json:"sections"`
}

// GoogleChatHeader is the card's title and subtitle.
type GoogleChatHeader struct {
	Title      string  `json:"title"`
	Subtitle   string  `json:"subtitle"`
	ImageURL   *string `json:"imageUrl"`
	ImageStyle *string `json:"imageStyle"`
}

// GoogleChatSection is a list of widgets.
type GoogleChatSection struct {
	Header  string             `json:"header"`
	Widgets []GoogleChatWidget `json:"widgets"`
}

// GoogleChatWidget is a text paragraph or a key-value pair.
type GoogleChatWidget struct {
	TextParagraph *GoogleChatText     `json:"textParagraph"`
	KeyValue      *GoogleChatKeyValue `json:"keyValue"`
}

// GoogleChatText is a paragraph.
type GoogleChatText struct {
	Text string `json:"text"`
}

// GoogleChatKeyValue is one metadata entry.
type GoogleChatKeyValue struct {
	TopLabel         string  `json:"topLabel"`
	Content          string  `json:"content"`
	ContentMultiline bool    `json:"contentMultiline"`
	BottomLabel      *string `json:"bottomLabel"`
	Icon             *string `json:"icon"`
}

// GoogleChatMessage is the payload for ev.
func GoogleChatMessage(ev *events.Event) *GoogleChatPayload {
	text := ev.Message
	if ev.Severity == events.SeverityError {
		text = `<font color="#ff0000">` + ev.Message + `</font>`
	}
	card := GoogleChatCard{
		Header:   GoogleChatHeader{Title: objectID(ev), Subtitle: ev.ReportingController},
		Sections: []GoogleChatSection{{Widgets: []GoogleChatWidget{{TextParagraph: &GoogleChatText{Text: text}}}}},
	}
	if len(ev.Metadata) > 0 {
		var kv []GoogleChatWidget
		for _, k := range sortedKeys(ev.Metadata) {
			kv = append(kv, GoogleChatWidget{KeyValue: &GoogleChatKeyValue{TopLabel: k, Content: ev.Metadata[k]}})
		}
		card.Sections = append(card.Sections, GoogleChatSection{Widgets: kv})
	}
	return &GoogleChatPayload{Cards: []GoogleChatCard{card}}
}

// Post sends ev.
func (g *GoogleChat) Post(ctx context.Context, ev *events.Event) error {
	_, err := postJSON(ctx, g.client, "googlechat", g.address, GoogleChatMessage(ev), nil)
	return err
}
