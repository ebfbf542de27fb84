package notifier

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/eddyops/eddy/pkg/events"
)

// MSTeams posts to Microsoft Teams in the schema the address takes. Flux
// compatible (notifier/teams.go): an Office 365 connector address, whose
// host ends in `.webhook.office.com`, gets the legacy MessageCard; any other
// address (Teams workflows, "Post to a channel when a webhook request is
// received") gets an Adaptive Card.
type MSTeams struct {
	address string
	legacy  bool
	client  *Client
}

func newMSTeams(opts Options) (*MSTeams, error) {
	u, err := webhookAddress(opts)
	if err != nil {
		return nil, err
	}
	return &MSTeams{address: opts.Address, legacy: isTeamsConnector(u), client: opts.Client}, nil
}

// isTeamsConnector reports whether u is an Office 365 connector webhook,
// `https://<tenant>.webhook.office.com/...` (port ignored).
func isTeamsConnector(u *url.URL) bool {
	return strings.HasSuffix(strings.ToLower(u.Hostname()), ".webhook.office.com")
}

// MSTeamsMessageCard is the legacy connector payload: `@type` MessageCard,
// themeColor `0076D7` (info) or `FF0000` (error), summary and
// activitySubtitle `<kind>/<name>.<namespace>`, activityTitle the message,
// facts `{name, value}` from the metadata, sorted by name.
type MSTeamsMessageCard struct {
	Type       string           `json:"@type"`
	Context    string           `json:"@context"`
	ThemeColor string           `json:"themeColor"`
	Summary    string           `json:"summary"`
	Sections   []MSTeamsSection `json:"sections"`
}

// MSTeamsSection is the MessageCard's one section.
type MSTeamsSection struct {
	ActivityTitle    string        `json:"activityTitle"`
	ActivitySubtitle string        `json:"activitySubtitle"`
	Facts            []MSTeamsFact `json:"facts"`
}

// MSTeamsFact is one metadata entry of a MessageCard.
type MSTeamsFact struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// MSTeamsConnectorMessage builds the legacy MessageCard for ev.
func MSTeamsConnectorMessage(ev *events.Event) *MSTeamsMessageCard {
	color := "0076D7"
	if ev.Severity == events.SeverityError {
		color = "FF0000"
	}
	facts := []MSTeamsFact{}
	for _, k := range sortedKeys(ev.Metadata) {
		facts = append(facts, MSTeamsFact{Name: k, Value: ev.Metadata[k]})
	}
	id := objectID(ev)
	return &MSTeamsMessageCard{
		Type: "MessageCard", Context: "http://schema.org/extensions", ThemeColor: color, Summary: id,
		Sections: []MSTeamsSection{{ActivityTitle: ev.Message, ActivitySubtitle: id, Facts: facts}},
	}
}

// adaptiveElement is one Adaptive Card body element: a Container (items),
// a TextBlock (text, size, weight, color, wrap) or a FactSet (facts).
type adaptiveElement struct {
	Type   string            `json:"type"`
	Items  []adaptiveElement `json:"items,omitempty"`
	Text   string            `json:"text,omitempty"`
	Size   string            `json:"size,omitempty"`
	Weight string            `json:"weight,omitempty"`
	Color  string            `json:"color,omitempty"`
	Wrap   bool              `json:"wrap,omitempty"`
	Facts  []adaptiveFact    `json:"facts,omitempty"`
}

type adaptiveFact struct {
	Title string `json:"title"`
	Value string `json:"value"`
}

// MSTeamsMessage builds the Adaptive Card (version 1.4, the highest Teams
// renders) for ev, in Flux's layout: one Container holding the title
// `<kind>/<name>.<namespace>` (size large, bolder), the message (colour
// `attention` for errors) and a FactSet of the metadata with `summary`
// first and the other keys sorted; `msteams: {width: Full}`.
func MSTeamsMessage(ev *events.Event) map[string]any {
	message := adaptiveElement{Type: "TextBlock", Text: ev.Message, Wrap: true}
	if ev.Severity == events.SeverityError {
		message.Color = "attention"
	}
	var facts []adaptiveFact
	if v, ok := ev.Metadata["summary"]; ok {
		facts = append(facts, adaptiveFact{Title: "summary", Value: v})
	}
	for _, k := range sortedKeys(ev.Metadata) {
		if k != "summary" {
			facts = append(facts, adaptiveFact{Title: k, Value: ev.Metadata[k]})
		}
	}
	container := adaptiveElement{Type: "Container", Items: []adaptiveElement{
		{Type: "TextBlock", Text: objectID(ev), Size: "large", Weight: "bolder", Wrap: true},
		message,
		{Type: "FactSet", Facts: facts},
	}}
	return map[string]any{
		"type": "message",
		"attachments": []map[string]any{{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard",
				"version": "1.4",
				"body":    []adaptiveElement{container},
				"msteams": map[string]string{"width": "Full"},
			},
		}},
	}
}

// Post sends ev.
func (m *MSTeams) Post(ctx context.Context, ev *events.Event) error {
	var payload any = MSTeamsMessage(ev)
	if m.legacy {
		payload = MSTeamsConnectorMessage(ev)
	}
	body, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	if _, err := m.client.PostJSON(ctx, m.address, body, nil); err != nil {
		return fmt.Errorf("msteams: %w", err)
	}
	return nil
}
