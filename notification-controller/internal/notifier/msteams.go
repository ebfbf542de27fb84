package notifier

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/eddyops/eddy/pkg/events"
)

// MSTeams posts an Adaptive Card message, the payload Teams workflows
// ("Post to a channel when a webhook request is received") accept: a title
// line `<kind>/<name>.<namespace>`, the message, and the metadata as facts.
// Flux compatible in shape (msteams.go, Adaptive Card variant).
type MSTeams struct {
	address string
	client  *Client
}

func newMSTeams(opts Options) (*MSTeams, error) {
	if err := requireAddress(opts); err != nil {
		return nil, err
	}
	return &MSTeams{address: opts.Address, client: opts.Client}, nil
}

// MSTeamsMessage builds the payload for ev.
func MSTeamsMessage(ev *events.Event) map[string]any {
	color := "Good"
	if ev.Severity == events.SeverityError {
		color = "Attention"
	}
	var facts []map[string]string
	for _, k := range sortedKeys(ev.Metadata) {
		facts = append(facts, map[string]string{"title": k, "value": ev.Metadata[k]})
	}
	body := []map[string]any{
		{"type": "TextBlock", "text": objectID(ev), "weight": "bolder", "size": "medium", "color": color, "wrap": true},
		{"type": "TextBlock", "text": ev.Message, "wrap": true},
	}
	if len(facts) > 0 {
		body = append(body, map[string]any{"type": "FactSet", "facts": facts})
	}
	return map[string]any{
		"type": "message",
		"attachments": []map[string]any{{
			"contentType": "application/vnd.microsoft.card.adaptive",
			"content": map[string]any{
				"$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
				"type":    "AdaptiveCard",
				"version": "1.4",
				"body":    body,
			},
		}},
	}
}

// Post sends ev.
func (m *MSTeams) Post(ctx context.Context, ev *events.Event) error {
	body, err := json.Marshal(MSTeamsMessage(ev))
	if err != nil {
		return err
	}
	if _, err := m.client.PostJSON(ctx, m.address, body, nil); err != nil {
		return fmt.Errorf("msteams: %w", err)
	}
	return nil
}
